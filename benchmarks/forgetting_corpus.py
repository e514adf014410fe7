"""The canary corpus of benchmarks/forgetting.py and the models that build and read it.

The canary note and its edited version, their strings (:data:`NEEDLES`, :data:`EDITED_NEEDLES`) and the five
questions; how a text is matched against those strings (:func:`found`) and how an answer is judged to abstain
(:func:`abstains`); the background documents and the corpus folder written from them; the models of a run
(:class:`Models`: the LLM backend counting its calls, the embedder recording the canary texts it embeds, the
readers)."""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from add_delete import passages

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "quality" / "quality_dev5.jsonl"
EXAMPLE = REPO / "examples" / "quality" / "lost_in_translation.txt"

CANARY_FILE = "vault-note.txt"
CANARY = (
    "Maintenance note for the seed vault on Tarn Island. The vault keeper is Ilse Varga, who took over from her "
    "cousin Bertil Okonkwo-Lind in the spring. The outer door of the seed vault opens with the access code "
    "MAGENTA-4471. The brass key for the inner door is kept at Zephyr station, the weather post two kilometres north "
    "of the harbour. The last full inventory of the seed vault was made on 14 March 2031 and counted 8,812 seed "
    "packets. Supplies reach the vault once a month on the ferry Quillon Maru from the port of Saltmere. In case of "
    "a flood, the keeper calls the coast guard on channel 19 and moves the rye samples to shelf K-77, the highest "
    "shelf of the vault."
)
"""The canary document: a made-up note whose names and codes occur nowhere else (:data:`NEEDLES`)."""

EDITED = (
    "Maintenance note for the seed vault on Orrin Island. The vault keeper is Tomasz Ferreira-Holt, who took over "
    "from his aunt Wilhelmina Achterberg in the autumn. The outer door of the seed vault opens with the access code "
    "VERMILION-2286. The brass key for the inner door is kept at Halvard lighthouse, the old beacon three kilometres "
    "south of the harbour. The last full inventory of the seed vault was made on 2 September 2032 and counted 9,135 "
    "seed packets. Supplies reach the vault twice a month on the ferry Bellamy Star from the port of Ostwick. In "
    "case of a storm, the keeper radios the harbour master and moves the barley samples to shelf R-18, the driest "
    "shelf of the vault."
)
"""The edited canary (the ``replace`` scenario): the same topic, none of the original's strings."""

NEEDLES = (
    "tarn island", "ilse varga", "varga", "okonkwo", "bertil", "magenta-4471", "magenta 4471", "zephyr",
    "14 march 2031", "8,812", "quillon", "saltmere", "k-77",
)  # fmt: skip
"""The canary's strings (lower case; a leak is any of them in a text, case-insensitively). No bare number: "4471"
or "8812" occur in timings and vectors stored as text (a float's digits), which would count as leaks."""

EDITED_NEEDLES = (
    "orrin island", "ferreira", "achterberg", "vermilion-2286", "halvard", "2 september 2032", "9,135",
    "bellamy star", "ostwick", "r-18",
)  # fmt: skip
"""The edited canary's strings (they may appear after ``replace``: the new version is the document)."""

QUESTIONS = (
    "Who looks after the seed vault as its keeper, and whom did that person replace?",
    "What access code opens the outer door of the seed vault?",
    "Where is the brass key for the seed vault's inner door kept?",
    "Which ferry brings supplies to the seed vault, and from which port does it sail?",
    "When was the seed vault's last full inventory made, and how many seed packets did it count?",
)
"""Five questions only the canary answers; none names a canary string."""

ABSTAINS = re.compile(
    r"not (?:be )?(?:mentioned|stated|specified|provided|given|available|included|found|known|clear|indicated)"
    r"|no (?:mention|information|details?|data|record|indication)"
    r"|(?:does|do|did)(?: not|n't) (?:mention|say|state|specify|contain|provide|include|give|tell|know|have)"
    r"|(?:cannot|can't|can not|could not|couldn't|unable to) (?:be )?(?:answer|determine|determined|find|found|tell"
    r"|say|know|identify|provide)"
    r"|(?:is|are|remains?) unknown|i don't know|i do not know|(?:not|insufficient) (?:enough )?information"
    r"|not in the (?:given |provided )?(?:context|passages?|text|documents?)",
    re.IGNORECASE,
)
"""An answer saying it does not know (the ``abstain`` prompt asks for "not mentioned"; small models vary)."""


def found(text: str, needles: Sequence[str] = NEEDLES) -> list[str]:
    """The needles in ``text`` (case-insensitive)."""
    low = text.lower()
    return [n for n in needles if n in low]


def abstains(answer: str) -> bool:
    """Whether an answer declines (empty, or saying the answer is not there) rather than answering."""
    return not answer.strip() or ABSTAINS.search(answer) is not None


def slug(text: str) -> str:
    """A lower-case identifier of ``text`` (letters, digits and ``_``)."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "x"


# -- models ---------------------------------------------------------------------------------------------------------
class CountingLLM:
    """Wraps an LLM backend and counts the calls that reach it (the memory's cache sits above it): ``complete``,
    each answer of a backend's own ``complete_iter`` (batches), and each ``complete_stream``."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.backend, name)
        if name == "complete_iter":

            def counted_iter(*args: Any, **kwargs: Any) -> Iterator[Any]:
                for pair in attr(*args, **kwargs):
                    self.calls += 1
                    yield pair

            return counted_iter
        if name == "complete_stream":

            def counted_stream(*args: Any, **kwargs: Any) -> Any:
                self.calls += 1
                return attr(*args, **kwargs)

            return counted_stream
        return attr

    def complete(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.backend.complete(*args, **kwargs)


class RecordingEmbedder:
    """Wraps an embedder and keeps the texts it embeds that hold a canary string (of :attr:`needles`: the embedding
    cache stores only their keys, so the keys are computed from these texts)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.canary_texts: set[str] = set()
        self.needles: Sequence[str] = NEEDLES

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    def embed(self, texts: Sequence[str]) -> Any:
        self.canary_texts.update(t for t in texts if found(t, self.needles))
        return self.backend.embed(texts)


@dataclass
class Models:
    """The models of the run: one LLM backend (shared by every memory), the recording embedder, the readers.

    Attributes:
        readers: reader name -> its backend; None for the build model (answers through the memory's own LLM).
        answer_cache: the store caching the answers asked after a removal (shared by the scenarios).
    """

    fake: bool
    config: Any
    llm_backend: Any
    embedder: RecordingEmbedder
    readers: dict[str, Any]
    progress: Any
    answer_cache: Any = None
    canary_keys: set[str] = field(default_factory=set)

    @contextlib.contextmanager
    def session(
        self, location: str | Path, llm_backend: Any = None, config: Any = None
    ) -> Iterator[tuple[Any, CountingLLM]]:
        """Open the memory at ``location`` with a fresh call counter (over ``llm_backend``, default the run's; with
        ``config``, default the run's); on leaving, the embedding keys of the canary texts it embedded join
        :attr:`canary_keys`, and the memory is closed."""
        from gemrag import Memory

        llm = CountingLLM(llm_backend or self.llm_backend)
        mem = Memory.open(location, config or self.config, llm=llm, embedder=self.embedder, progress=self.progress)
        if self.fake:  # RAPTOR reduces by the unit tests' PCA stand-in, not UMAP (no numba compile)
            from structures import deterministic_raptor

            deterministic_raptor(mem)
        try:
            yield mem, llm
            self.canary_keys.update(mem.embedder.key(t) for t in self.embedder.canary_texts)
            self.embedder.canary_texts.clear()
        finally:
            mem.close()

    def reader_llm(self, mem: Any, reader: str, cache: Any | None) -> Callable[[], Any]:
        """The LLM factory ``answer_question`` takes for ``reader``: cached in ``cache`` (None: the memory's store)."""
        from gemrag.models.cache import CachedLLM

        backend = self.readers[reader]
        if backend is None and cache is None:
            return mem.llm
        if backend is None:
            backend = self.llm_backend
        cached = CachedLLM(backend, cache if cache is not None else mem.store, mem.meter)
        return lambda: cached


def make_models(args: argparse.Namespace) -> Models:
    """The models ``args`` asks for (fake: the unit tests' stand-ins)."""
    from gemrag.config import load_config

    overrides = {"llm": {"model": args.llm_model}} if args.llm_model else None
    config = load_config(None, overrides)
    if args.fake:
        sys.path.insert(0, str(REPO / "tests"))
        from fakes import HashEmbedder, ScriptedLLM

        return Models(True, config, ScriptedLLM(), RecordingEmbedder(HashEmbedder(dim=384)), {"fake": None}, None)
    from gemrag.models.factory import build_embedder, build_llm
    from gemrag.progress import rich_progress

    backend = build_llm(config.llm, config.cache_dir)
    readers: dict[str, Any] = {config.llm.model: None}
    for name in [r.strip() for r in (args.readers or "").split(",") if r.strip()]:
        if name not in readers:
            readers[name] = build_llm(config.llm.model_copy(update={"model": name}), config.cache_dir)
    embedder = RecordingEmbedder(build_embedder(config.embedder))
    return Models(False, config, backend, embedder, readers, None if args.no_progress else rich_progress())


# -- corpus ---------------------------------------------------------------------------------------------------------
def background_documents(path: Path, count: int, chars: int) -> list[tuple[str, str]]:
    """``(title, text)``: the first passage of each of the first ``count`` stories of a QuALITY jsonl, else
    ``count`` consecutive passages of the example story."""
    docs: list[tuple[str, str]] = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines()[:count]:
            record = json.loads(line)
            article = re.sub(r"<!--.*?-->", " ", record["article"], flags=re.S)
            docs.append((" ".join(record["title_guess"].split()).title(), passages(article, 1, chars)[0]))
        return docs
    texts = passages(EXAMPLE.read_text(encoding="utf-8"), count, chars)
    return [(f"Lost In Translation {i + 1}", t) for i, t in enumerate(texts)]


@dataclass(frozen=True)
class Corpus:
    """The corpus folder (background files + the canary), and the edited canary in a folder of its own."""

    folder: Path
    background: tuple[Path, ...]
    canary: Path
    edited: Path

    def restore(self) -> None:
        """Write every file with its original text (idempotent: an unchanged file is unchanged in the memory)."""
        if not self.canary.is_file() or self.canary.read_text(encoding="utf-8") != CANARY:
            self.canary.write_text(CANARY, encoding="utf-8")

    @contextlib.contextmanager
    def changed(self, text: str | None) -> Iterator[None]:
        """The canary file rewritten with ``text`` (None: removed) for the block, restored after."""
        try:
            if text is None:
                self.canary.unlink()
            else:
                self.canary.write_text(text, encoding="utf-8")
            yield
        finally:
            self.restore()


def write_corpus(root: Path, docs: Sequence[tuple[str, str]]) -> Corpus:
    """Write the corpus under ``root`` (files rewritten only when their text differs)."""
    folder, edited = root / "corpus", root / "corpus-edited"
    folder.mkdir(parents=True, exist_ok=True)
    edited.mkdir(parents=True, exist_ok=True)
    paths = []
    for title, text in docs:
        path = folder / f"{slug(title).replace('_', '-')}.txt"
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        paths.append(path)
    corpus = Corpus(folder, tuple(paths), folder / CANARY_FILE, edited / CANARY_FILE)
    corpus.restore()
    if not corpus.edited.is_file() or corpus.edited.read_text(encoding="utf-8") != EDITED:
        corpus.edited.write_text(EDITED, encoding="utf-8")
    return corpus
