"""The user's own questions and answers (``gemrag eval qa FILE``), over the user's own documents.

A row is one question. The file is JSON Lines (one object per line; a ``.json`` file holding a list of objects also
loads) or CSV (``.csv``: a header row, then one row per question; UTF-8, a byte-order mark is ignored):

* ``question`` (required): the question text.
* ``answer`` (required): the gold answer; several acceptable answers are a JSON list in JSON Lines
  (``"answer": ["Korvin", "the Earthman"]``) and ``|``-separated in a CSV cell (``Korvin|the Earthman``). The
  answer scores F1 / EM against the best of them (SQuAD's rule, :func:`gemrag.eval.metrics.token_f1`).
* ``sources`` (optional): the documents that hold the answer, for Recall@k, each named by its document id, its
  title, its file name or its file name without the suffix (a string or a list; ``|``-separated in CSV).
* ``evidence`` (optional): passages that hold the answer (a string or a list; ``|``-separated in CSV). When a row has
  no ``sources``, its Recall@k is whether a retrieved chunk holds one of its passages or lies inside one
  (:func:`gemrag.eval.metrics.passage_recall`); without either, whether a retrieved chunk holds a gold answer
  (:func:`gemrag.eval.metrics.answer_recall`, the "top-k retrieval accuracy" of DPR, Karpukhin et al. 2020 §5.1).
* ``id``, ``category`` (optional): the question's id (default ``q<line>``) and a category the report breaks
  scores down by.

Any other column or key is an error (a misspelt ``sources`` would otherwise go unscored). A malformed row is an
:class:`~gemrag.errors.InputError` naming the file and its line (in CSV the line the row starts on, the header being
line 1).

The documents are the ``.txt`` / ``.md`` files and directories given as ``documents`` (``--documents PATH``,
repeatable), and / or the documents of an existing memory given as ``memory`` (a directory or a PostgreSQL URL,
opened read-only). Every question is asked over all of them (one shared corpus, one memory per run). A document's
id is its file name, or its source path when two files share a name.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gemrag.errors import InputError
from gemrag.eval.datasets import Dataset, Document, Question, build_dataset, register_loader
from gemrag.eval.loaders._io import Record, fail, read_json_lines, read_records, read_text, req_dict
from gemrag.memory.sources import read_sources
from gemrag.store import location_exists, open_store

__all__ = ["COLUMNS", "CORPUS_ID", "load_qa_file"]

COLUMNS = ("question", "answer", "sources", "evidence", "id", "category")
"""The columns (CSV) or keys (JSON Lines) a row may have; ``question`` and ``answer`` are required."""
CORPUS_ID = "<all documents>"
"""The shared-corpus sentinel: every question is asked over every document."""
SEPARATOR = "|"
"""Separates several answers, sources or evidence passages in one CSV cell."""


@register_loader("qa", aliases={"qa_file": "qa", "own": "qa"})
def load_qa_file(
    path: Path,
    *,
    kind: str = "qa",
    documents: Sequence[str | Path] = (),
    memory: str | None = None,
) -> Dataset:
    """Load a questions-and-answers file (module docstring) over the given documents.

    Args:
        path: the ``.jsonl`` / ``.json`` or ``.csv`` file.
        documents: ``.txt`` / ``.md`` files and directories holding the documents.
        memory: an existing memory (directory or ``postgresql://`` URL) whose documents are added to them.

    Returns:
        The dataset: the documents, and one free-form question per row, asked over all of them
        (``corpus_id`` :data:`CORPUS_ID`); ``gold_passages`` the resolved ``sources``,
        ``metadata["evidence_passages"]`` the evidence passages.

    Raises:
        InputError: no documents given, a document that cannot be read, an unreadable file, or a malformed row
            (bad JSON, a missing or empty question or answer, an unknown column, a source naming no document or
            several), naming the file and line.
    """
    docs = _documents(documents, memory)
    rows = _csv_rows(path) if path.suffix.lower() == ".csv" else _json_rows(path)
    if not rows:
        raise InputError(f"{path}: holds no question")
    names = _names(docs)
    questions = [_question(row, names) for row in rows]
    return build_dataset(path, kind, [d for d, _ in docs], questions, corpus_id=CORPUS_ID)


def _json_rows(path: Path) -> list[Record]:
    """The rows of a JSON Lines file (``where`` names the line), or of a ``.json`` list of objects."""
    if path.suffix.lower() == ".json":
        return read_records(path)[0]
    return read_json_lines(path)


def _csv_rows(path: Path) -> list[Record]:
    """The rows of a CSV file as dicts of lists (a cell split at :data:`SEPARATOR`), ``where`` naming the line
    the row starts on.

    Raises:
        InputError: no ``question`` or ``answer`` column, an unknown or repeated column, a row with more cells than
            the header.
    """
    text = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip().lower() for h in next(reader)]
    except csv.Error as exc:
        raise fail(f"{path.name}, line 1", f"not valid CSV ({exc})") from exc
    where = f"{path.name}, line 1"
    unknown = [h for h in header if h and h not in COLUMNS]
    if unknown:
        raise fail(where, f"unknown column(s) {', '.join(map(repr, unknown))}; the columns are {', '.join(COLUMNS)}")
    repeated = sorted({h for h in header if h and header.count(h) > 1})
    if repeated:
        raise fail(where, f"column(s) {', '.join(map(repr, repeated))} appear twice; separate several values by '|'")
    for required in ("question", "answer"):
        if required not in header:
            raise fail(where, f"no {required!r} column (the header has {', '.join(map(repr, header))})")
    rows: list[Record] = []
    line = reader.line_num + 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise fail(f"{path.name}, line {line}", f"not valid CSV ({exc})") from exc
        where, line = f"{path.name}, line {line}", reader.line_num + 1
        if not any(c.strip() for c in cells):
            continue
        if len(cells) > len(header):
            raise fail(where, f"{len(cells)} cells but the header has {len(header)} columns")
        row: dict[str, Any] = {}
        for name, cell in zip(header, cells + [""] * (len(header) - len(cells)), strict=True):
            if name and cell.strip():
                row[name] = cell.split(SEPARATOR) if name in ("answer", "sources", "evidence") else cell
            elif name:
                row[name] = ""  # an empty cell: missing (an error for question and answer)
        rows.append(Record(row, where))
    return rows


def _texts(row: dict[str, Any], key: str, where: str, *, required: bool) -> list[str]:
    """The non-empty strings of ``row[key]`` (a string or a list of strings).

    Raises:
        InputError: a required key missing or empty, a value of another type, an empty item in a list.
    """
    value = row.get(key)
    if value is None or value == "" or value == []:
        if required:
            raise fail(where, f"empty {key!r}" if key in row else f"missing {key!r}")
        return []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise fail(where, f"{key!r} must be a string or a list of strings, got {type(value).__name__}")
    if not all(v.strip() for v in items):
        raise fail(where, f"{key!r} holds an empty item")
    return [v.strip() for v in items]


def _question(record: Record, names: dict[str, set[str]]) -> Question:
    """One row as a :class:`Question` over the shared corpus.

    Raises:
        InputError: see :func:`load_qa_file`.
    """
    where = record.where
    row = req_dict(record.value, where, "row")
    unknown = [k for k in row if k not in COLUMNS]
    if unknown:
        raise fail(where, f"unknown key(s) {', '.join(map(repr, unknown))}; the keys are {', '.join(COLUMNS)}")
    question = _texts(row, "question", where, required=True)
    if len(question) != 1:
        raise fail(where, "'question' must be one string")
    answers = list(dict.fromkeys(_texts(row, "answer", where, required=True)))
    gold: list[str] = []
    for source in _texts(row, "sources", where, required=False):
        found = names.get(source) or names.get(source.lower()) or set()
        if len(found) != 1:
            problem = "names no document" if not found else f"names {len(found)} documents ({', '.join(sorted(found))})"
            raise fail(where, f"source {source!r} {problem}; name a document by its id, title or file name")
        gold.extend(found)
    evidence = _texts(row, "evidence", where, required=False)
    line = where.rsplit(" ", 1)[-1]
    qid = _texts(row, "id", where, required=False) or [f"q{line}"]
    category = _texts(row, "category", where, required=False)
    return Question(
        id=qid[0],
        doc_ids=[CORPUS_ID],
        question=question[0],
        answer=answers[0],
        answers=answers,
        gold_passages=list(dict.fromkeys(gold)),
        category=category[0] if category else None,
        metadata={"evidence_passages": evidence} if evidence else {},
    )


def _documents(paths: Sequence[str | Path], memory: str | None) -> list[tuple[Document, list[str]]]:
    """The documents of ``paths`` and ``memory``, each with the names a row's ``sources`` may call it by.

    Raises:
        InputError: neither given, a file that cannot be read, a memory holding no document.
    """
    if not paths and memory is None:
        raise InputError("give the documents the questions are about: --documents PATH (repeatable) or --memory MEMORY")
    found: list[tuple[str, str, str, list[str]]] = []  # (source, title, text, extra names)
    for src in read_sources(list(paths)) if paths else []:
        found.append((src.document.source, src.document.title, src.document.text, []))
    if memory is not None:
        if not location_exists(memory):
            raise InputError(f"--memory {memory}: no gemrag memory there (`gemrag index` makes one)")
        store = open_store(memory, readonly=True)
        try:
            rows = store.documents()
            for d in rows:
                extra = [str(d["id"])] + ([d["key"]] if d.get("key") else [])
                found.append((d["source"] or str(d["id"]), d["title"] or "", store.document_text(int(d["id"])), extra))
        finally:
            store.close()
        if not rows:
            raise InputError(f"--memory {memory}: holds no document")
    file_names = [Path(source).name for source, *_ in found]
    out = []
    for (source, title, text, extra), name in zip(found, file_names, strict=True):
        doc_id = name if name and file_names.count(name) == 1 else source
        names = [doc_id, source, name, Path(name).stem, title, *extra]
        out.append((Document(id=doc_id, title=title, text=text), [n for n in names if n]))
    return out


def _names(docs: list[tuple[Document, list[str]]]) -> dict[str, set[str]]:
    """``{name: the ids of the documents it names}``, each name also in lower case."""
    out: dict[str, set[str]] = {}
    for doc, names in docs:
        for name in names:
            out.setdefault(name, set()).add(doc.id)
    for name, ids in list(out.items()):
        out.setdefault(name.lower(), set()).update(ids)
    return out
