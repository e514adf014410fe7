"""Normalized evaluation datasets: the sample schema and the loader registry.

Every supported benchmark (QuALITY, Qasper, MuSiQue, HotpotQA, 2WikiMultihopQA, COVID-QA, LoCoMo) is
read into the same three pydantic models:

* :class:`Document` — a text the questions are asked over (a story, a paper, a Wikipedia paragraph, a
  conversation);
* :class:`Question` — one question with its gold answer(s) and, where the dataset has them, choices,
  the HARD flag and supporting passages;
* :class:`Dataset` — the documents and questions of one file.

Questions point at documents through :attr:`Question.doc_ids`. Multi-hop datasets are asked over a whole
shared corpus; their questions then carry the single sentinel id :attr:`Dataset.corpus_id`, which stands
for "every document of the dataset".

Loaders are registered by kind name (:func:`register_loader`; see :func:`gemrag.eval.loading.available_kinds`)
and called through :func:`gemrag.eval.loading.load_dataset`. Datasets are never bundled or downloaded: a loader always
takes a path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gemrag.errors import InputError

__all__ = [
    "Dataset",
    "Document",
    "Question",
    "QuestionGroup",
    "build_dataset",
    "register_loader",
]


class Document(BaseModel):
    """A text that questions are asked over.

    Attributes:
        id: identifier, unique within its :class:`Dataset` (non-empty).
        title: title of the text ("" when the source has none).
        text: the full plain text (HTML already stripped where the source is HTML).
        metadata: loader-specific extras (for LoCoMo: speakers and the character span of every dialog
            turn; see :mod:`gemrag.eval.loaders.locomo`).
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    title: str = ""
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class Question(BaseModel):
    """One evaluation question with its gold data.

    Attributes:
        id: identifier, unique within its :class:`Dataset`.
        doc_ids: documents the question is asked over (at least one). For a shared multi-hop corpus this
            is ``[dataset.corpus_id]``, meaning every document of the dataset.
        question: the question text.
        choices: answer options for multiple choice (QuALITY), else ``None``.
        answer: the main gold answer text (for multiple choice the text of the correct option), or
            ``None`` when the source has no gold (e.g. a test split).
        answers: every acceptable gold text (annotators' answers, aliases); always contains ``answer``
            when that is set (the validator inserts it first).
        gold_index: 0-based index of the correct option in ``choices``, or ``None``.
        difficult: QuALITY HARD flag (``True`` = in the HARD subset); ``None`` when unknown.
        gold_passages: ids of the supporting passages, for Recall@k. For multi-hop datasets these are
            :class:`Document` ids; for LoCoMo they are dialog-turn ids (``"D1:3"``); empty when the
            dataset has no passage-level support annotation (QuALITY, Qasper, COVID-QA).
        category: dataset-specific question type (MuSiQue hop count ``"2hop"``, HotpotQA ``"bridge"``,
            LoCoMo category ``"1"``..``"5"``, Qasper answer type), or ``None``.
        metadata: loader-specific extras (e.g. QuALITY speed-validation accuracy, Qasper evidence).

    Raises:
        pydantic.ValidationError: ``gold_index`` without ``choices`` or out of range.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    doc_ids: list[str] = Field(min_length=1)
    question: str
    choices: list[str] | None = None
    answer: str | None = None
    answers: list[str] = Field(default_factory=list)
    gold_index: int | None = None
    difficult: bool | None = None
    gold_passages: list[str] = Field(default_factory=list)
    category: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_gold(self) -> Question:
        if self.gold_index is not None:
            if self.choices is None:
                raise ValueError("gold_index is set but the question has no choices")
            if not 0 <= self.gold_index < len(self.choices):
                raise ValueError(f"gold_index {self.gold_index} is out of range for {len(self.choices)} choices")
        if self.answer is not None and self.answer not in self.answers:
            self.answers.insert(0, self.answer)
        return self


class QuestionGroup(BaseModel):
    """Questions that share exactly the same documents: one memory to build, then query.

    Attributes:
        doc_ids: the shared ``Question.doc_ids`` (``(corpus_id,)`` for a shared corpus).
        documents: the resolved documents, in dataset order (every document for a shared corpus).
        questions: the questions of the group, in dataset order.
    """

    doc_ids: tuple[str, ...]
    documents: list[Document]
    questions: list[Question]


class Dataset(BaseModel):
    """The documents and questions of one dataset file.

    Attributes:
        name: short name, by default the file stem (e.g. ``"quality_dev5"``).
        kind: the loader kind that produced it (e.g. ``"quality"``, ``"musique"``).
        documents: all documents, in file order; ids are unique.
        questions: all questions, in file order; ids are unique.
        corpus_id: the sentinel doc id meaning "the whole corpus" (multi-hop datasets loaded without
            ``per_question_corpus``), else ``None``. It never equals a document id.

    Raises:
        pydantic.ValidationError: duplicate ids, or a question pointing at an unknown document.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: str
    documents: list[Document]
    questions: list[Question]
    corpus_id: str | None = None

    @model_validator(mode="after")
    def _check_ids(self) -> Dataset:
        doc_ids = _duplicates_checked([d.id for d in self.documents], "document")
        _duplicates_checked([q.id for q in self.questions], "question")
        if self.corpus_id is not None and self.corpus_id in doc_ids:
            raise ValueError(f"corpus_id {self.corpus_id!r} collides with a document id")
        for q in self.questions:
            for doc_id in q.doc_ids:
                if doc_id not in doc_ids and doc_id != self.corpus_id:
                    raise ValueError(f"question {q.id!r} refers to unknown document {doc_id!r}")
        return self

    def document_map(self) -> dict[str, Document]:
        """Return ``{document id: Document}``."""
        return {d.id: d for d in self.documents}

    def documents_for(self, question: Question) -> list[Document]:
        """Return the documents ``question`` is asked over (all documents for the corpus sentinel).

        Raises:
            KeyError: a doc id of ``question`` is not in this dataset.
        """
        if self.corpus_id is not None and self.corpus_id in question.doc_ids:
            return list(self.documents)
        docs = self.document_map()
        return [docs[doc_id] for doc_id in question.doc_ids]

    def questions_by_document(self) -> dict[str, list[Question]]:
        """Group questions by document id, in document order.

        A question is listed under every id of its ``doc_ids`` (so, for a shared corpus, under
        ``corpus_id``). Documents without questions are omitted.
        """
        grouped: dict[str, list[Question]] = {}
        order = {d.id: i for i, d in enumerate(self.documents)}
        for q in self.questions:
            for doc_id in q.doc_ids:
                grouped.setdefault(doc_id, []).append(q)
        return dict(sorted(grouped.items(), key=lambda kv: order.get(kv[0], -1)))

    def groups(self) -> list[QuestionGroup]:
        """Group questions by identical ``doc_ids``: each group is one memory to index and query.

        Groups appear in order of their first question; a shared-corpus dataset has one group holding
        every document.
        """
        buckets: dict[tuple[str, ...], list[Question]] = {}
        for q in self.questions:
            buckets.setdefault(tuple(q.doc_ids), []).append(q)
        return [
            QuestionGroup(doc_ids=key, documents=self.documents_for(qs[0]), questions=qs) for key, qs in buckets.items()
        ]

    def select(
        self,
        *,
        documents: Sequence[str] | None = None,
        categories: Sequence[str] | None = None,
        per_category: int | None = None,
    ) -> Dataset:
        """Return a copy with a subset of the questions and only the documents they need.

        Args:
            documents: keep only questions asked over these document ids (every id of a question's
                ``doc_ids`` must be listed; e.g. one LoCoMo conversation, ``["conv-26"]``).
            categories: then keep only the questions of these categories (e.g. LoCoMo's ``["3"]``, open domain);
                question ids stay those of the whole file, so runs over a category pair with runs over all.
            per_category: then keep the first ``per_category`` questions of each ``category`` in file order
                (questions without a category form one category); a stratified subset that stays the same
                when the command is repeated, unlike a random sample. The file order of the kept questions is
                preserved.

        Raises:
            ValueError: an unknown document id, a category no question has, or ``per_category`` < 1.
        """
        questions = list(self.questions)
        if documents is not None:
            known = {d.id for d in self.documents} | ({self.corpus_id} if self.corpus_id else set())
            unknown = [d for d in documents if d not in known]
            if unknown:
                raise ValueError(f"unknown document id(s) {', '.join(map(repr, unknown))}")
            wanted = set(documents)
            questions = [q for q in questions if set(q.doc_ids) <= wanted]
        if categories is not None:
            have = {q.category for q in self.questions}
            unknown = [c for c in categories if c not in have]
            if unknown or not categories:
                present = ", ".join(sorted(str(c) for c in have if c is not None)) or "none"
                named = ", ".join(map(repr, unknown)) or "(none given)"
                raise ValueError(f"unknown question category {named}; the file has {present}")
            questions = [q for q in questions if q.category in set(categories)]
        if per_category is not None:
            if per_category < 1:
                raise ValueError(f"per_category must be >= 1, got {per_category}")
            taken: dict[str | None, int] = {}
            kept = []
            for q in questions:
                if taken.get(q.category, 0) < per_category:
                    taken[q.category] = taken.get(q.category, 0) + 1
                    kept.append(q)
            questions = kept
        return self._with_questions(questions)

    def _with_questions(self, questions: list[Question]) -> Dataset:
        needed = {doc_id for q in questions for doc_id in q.doc_ids}
        if self.corpus_id is not None and self.corpus_id in needed:
            kept_docs = list(self.documents)
        else:
            kept_docs = [d for d in self.documents if d.id in needed]
        return self.model_copy(update={"documents": kept_docs, "questions": questions}, deep=True)

    def limit(self, n: int) -> Dataset:
        """Return a copy with the first ``n`` questions and only the documents they need.

        Documents keep their order. If any kept question is asked over the shared corpus
        (``corpus_id``), every document is kept: the corpus, distractors included, is what is searched.

        Raises:
            ValueError: ``n`` is negative.
        """
        if n < 0:
            raise ValueError(f"limit must be >= 0, got {n}")
        return self._with_questions(self.questions[:n])


def _duplicates_checked(ids: list[str], what: str) -> set[str]:
    seen: set[str] = set()
    for item in ids:
        if item in seen:
            raise ValueError(f"duplicate {what} id {item!r}")
        seen.add(item)
    return seen


def build_dataset(
    path: Path,
    kind: str,
    documents: list[Document],
    questions: list[Question],
    corpus_id: str | None = None,
) -> Dataset:
    """Assemble a :class:`Dataset` named after ``path``'s stem, for use by loaders.

    Raises:
        InputError: the assembled data is inconsistent (duplicate ids, dangling doc ids), naming ``path``.
    """
    try:
        return Dataset(name=path.stem, kind=kind, documents=documents, questions=questions, corpus_id=corpus_id)
    except ValidationError as exc:
        problems = "; ".join(err["msg"].removeprefix("Value error, ") for err in exc.errors())
        raise InputError(f"{path}: inconsistent {kind} dataset: {problems}") from exc


LoaderFn = Callable[..., Dataset]
"""A loader: ``fn(path: Path, *, kind: str, **options) -> Dataset``."""

_LOADERS: dict[str, LoaderFn] = {}
_ALIASES: dict[str, str] = {}


def register_loader(*kinds: str, aliases: dict[str, str] | None = None) -> Callable[[LoaderFn], LoaderFn]:
    """Decorator registering a loader function under one or more kind names.

    Args:
        kinds: kind names (lower case). The function receives the canonical kind as ``kind=``.
        aliases: extra names mapped to one of ``kinds`` (e.g. ``{"covidqa": "covid_qa"}``).
    """

    def decorate(fn: LoaderFn) -> LoaderFn:
        for kind in kinds:
            _LOADERS[kind] = fn
        for alias, target in (aliases or {}).items():
            _ALIASES[alias] = target
        return fn

    return decorate
