"""CMU Document Grounded Conversations loader (the HLGraphRAG acceptance test's data).

Source: Zhou, Prabhumoye & Black, "A Dataset for Document Grounded Conversations" (EMNLP 2018),
https://github.com/festvox/datasets-CMU_DoG. Files (the layout of ``../shared/data/cmu_dog/``):

* a conversation file (``train.jsonl`` / ``valid.jsonl``), one conversation per line: ``{conversation_id,
  wikiDocumentIdx, whoSawDoc: ["user1"] | ["user2"] | ["user1", "user2"], rating, history: [{uid, text, docIdx,
  utcTimestamp}]}``;
* ``wikidata.json`` beside it: ``{key: {"0": {movieName, year, director, genre, cast, introduction, rating,
  critical_response}, "1".."3": scene text, "wikiDocumentIdx": n}}``.

Each movie becomes one :class:`~gemrag.eval.datasets.Document` (id ``movie-<wikiDocumentIdx>``) whose text is the
article rendered as paragraphs: the name, year, director and genre, the introduction, the cast, the ratings, the
critical responses, then the three key scenes (CMU DoG's sections 0-3). ``metadata["sections"]`` keeps each
section's text (the section a speaker was reading at a turn is the turn's ``doc_idx``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gemrag.errors import InputError
from gemrag.eval.datasets import Document
from gemrag.eval.loaders._io import fail, opt_str, read_json, read_records, req_dict, req_list, req_str

__all__ = ["DogConversation", "DogCorpus", "DogTurn", "load_cmu_dog"]

SPEAKERS = ("user1", "user2")


class DogTurn(BaseModel):
    """One utterance: ``speaker`` (``"user1"`` or ``"user2"``), its ``text`` and ``doc_idx``, the document section
    (0 introduction, 1-3 scenes) shown while it was written."""

    model_config = ConfigDict(extra="forbid")

    speaker: str
    text: str
    doc_idx: int = 0


class DogConversation(BaseModel):
    """One CMU DoG conversation.

    Attributes:
        id: ``conversation_id`` (else ``"line-<n>"``).
        doc_id: the :class:`Document` id of its movie.
        saw_doc: the speakers who read the document (CMU DoG ``whoSawDoc``), in file order.
        rating: CMU DoG's quality rating 1-3 (None when absent).
        turns: the utterances in order (empty texts dropped).
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    doc_id: str
    saw_doc: list[str] = Field(min_length=1)
    rating: int | None = None
    turns: list[DogTurn]


class DogCorpus(BaseModel):
    """The movie documents and the conversations of one conversation file (only the movies they use)."""

    name: str
    documents: list[Document]
    conversations: list[DogConversation]

    def document(self, doc_id: str) -> Document:
        """The movie document with id ``doc_id``.

        Raises:
            KeyError: no such document.
        """
        for doc in self.documents:
            if doc.id == doc_id:
                return doc
        raise KeyError(doc_id)

    def select(self, ids: list[str] | None = None, limit: int | None = None) -> DogCorpus:
        """The conversations with these ids (all when None) sorted by name, as the paper selected its tests
        ("the top 1219 JSON data tests sorted by name", HLGraphRAG section 4), then the first ``limit`` of them,
        and only the movies they use.

        Raises:
            InputError: an id that is not in the file, or ``limit`` < 0.
        """
        convs = sorted(self.conversations, key=lambda c: c.id)
        if ids is not None:
            known = {c.id for c in convs}
            unknown = [i for i in ids if i not in known]
            if unknown:
                raise InputError(f"{self.name}: unknown conversation id(s) {', '.join(map(repr, unknown))}")
            convs = [c for c in convs if c.id in set(ids)]
        if limit is not None:
            if limit < 0:
                raise InputError(f"limit must be >= 0, got {limit}")
            convs = convs[:limit]
        used = {c.doc_id for c in convs}
        return DogCorpus(name=self.name, documents=[d for d in self.documents if d.id in used], conversations=convs)


def _items(value: Any) -> list[str]:
    if isinstance(value, list):
        return [" ".join(str(v).split()) for v in value if str(v).strip()]
    return [" ".join(str(value).split())] if value and str(value).strip() else []


def _movie(key: str, raw: Any, where: str) -> Document:
    entry = req_dict(raw, where, "movie")
    head = req_dict(entry.get("0"), where, "section '0'")
    name = opt_str(head, "movieName", where) or key
    facts = [f"{label}: {value}" for label, k in (("Year", "year"), ("Director", "director"), ("Genre", "genre"))
             if (value := opt_str(head, k, where))]  # fmt: skip
    intro = [name + (" (" + "; ".join(facts) + ")" if facts else "") + "."]
    intro += _items(head.get("introduction"))
    for label, k in (("Cast", "cast"), ("Ratings", "rating"), ("Critical responses", "critical_response")):
        if values := _items(head.get(k)):
            intro.append(f"{label}: " + "; ".join(values))
    sections = ["\n".join(intro)] + [" ".join(str(entry.get(str(i)) or "").split()) for i in (1, 2, 3)]
    idx = entry.get("wikiDocumentIdx")
    if not isinstance(idx, int) or isinstance(idx, bool):
        raise fail(where, "field 'wikiDocumentIdx' must be an integer")
    text = "\n\n".join(s for s in sections if s)
    return Document(id=f"movie-{idx}", title=name, text=text, metadata={"sections": sections, "key": key})


def _conversation(raw: Any, where: str, number: int, movies: dict[int, Document]) -> DogConversation:
    conv = req_dict(raw, where, "conversation")
    idx = conv.get("wikiDocumentIdx")
    if not isinstance(idx, int) or isinstance(idx, bool) or idx not in movies:
        raise fail(where, f"field 'wikiDocumentIdx' ({idx!r}) names no movie of wikidata.json")
    saw = req_list(conv, "whoSawDoc", where)
    if not saw or any(s not in SPEAKERS for s in saw):
        raise fail(where, f"field 'whoSawDoc' must list 'user1' and/or 'user2', got {saw!r}")
    turns = []
    for i, raw_turn in enumerate(req_list(conv, "history", where)):
        t_where = f"{where}, history[{i}]"
        turn = req_dict(raw_turn, t_where, "turn")
        speaker = req_str(turn, "uid", t_where)
        if speaker not in SPEAKERS:
            raise fail(t_where, f"field 'uid' must be 'user1' or 'user2', got {speaker!r}")
        text = " ".join(req_str(turn, "text", t_where).split())
        doc_idx = turn.get("docIdx", 0)
        if text:
            turns.append(DogTurn(speaker=speaker, text=text, doc_idx=doc_idx if doc_idx in (0, 1, 2, 3) else 0))
    rating = conv.get("rating")
    return DogConversation(
        id=opt_str(conv, "conversation_id", where) or f"line-{number}",
        doc_id=movies[idx].id,
        saw_doc=[s for s in SPEAKERS if s in saw],
        rating=rating if isinstance(rating, int) and not isinstance(rating, bool) else None,
        turns=turns,
    )


def load_cmu_dog(path: Path, *, wiki_path: Path | None = None) -> DogCorpus:
    """Load a CMU DoG conversation file and its movie documents.

    Args:
        path: the conversation file (JSON Lines, or a JSON list of conversations).
        wiki_path: the movie documents (default ``wikidata.json`` beside ``path``).

    Returns:
        :class:`DogCorpus` named after ``path``'s stem, with the movies the conversations use (file order of
        ``wikidata.json``) and the conversations in file order.

    Raises:
        InputError: a file is missing, unreadable or not JSON; a conversation or movie has the wrong shape; a
            conversation names a movie that is not in ``wikidata.json``; two conversations share an id.
    """
    path = Path(path)
    wiki = Path(wiki_path) if wiki_path is not None else path.parent / "wikidata.json"
    data = req_dict(read_json(wiki), wiki.name, "wikidata.json")
    movies: dict[int, Document] = {}
    for key, raw in data.items():
        doc = _movie(key, raw, f"{wiki.name}, movie {key!r}")
        movies[int(doc.id.removeprefix("movie-"))] = doc
    records, _ = read_records(path)
    convs = [_conversation(r.value, r.where, n, movies) for n, r in enumerate(records, start=1)]
    seen: set[str] = set()
    for c in convs:
        if c.id in seen:
            raise InputError(f"{path}: duplicate conversation id {c.id!r}")
        seen.add(c.id)
    used = {c.doc_id for c in convs}
    return DogCorpus(name=path.stem, documents=[d for d in movies.values() if d.id in used], conversations=convs)
