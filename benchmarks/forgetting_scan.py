"""Counting canary strings, for benchmarks/forgetting.py, in what a memory returns and keeps: the hits of the
five questions and their passages' chunks, the nodes a reader sees and the utility questions, the answers of
every reader and prompt, the LLM and embedding caches, the rows of every table, the bytes of every file."""

from __future__ import annotations

import json
import sqlite3
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from forgetting_corpus import EDITED_NEEDLES, NEEDLES, QUESTIONS, Models, abstains, found

PROMPTS = ("guess", "abstain")
"""The answer prompts: the default (a best guess when the context lacks the answer) and ``abstain=True``."""


# -- scans ----------------------------------------------------------------------------------------------------------
def _cell(value: Any) -> bytes:
    """A row value as lower-case bytes to search."""
    if value is None:
        return b""
    if isinstance(value, memoryview):
        value = bytes(value)
    if isinstance(value, bytes):
        return value.lower()
    if isinstance(value, dict | list):
        value = json.dumps(value, ensure_ascii=False)
    return str(value).lower().encode("utf-8", "replace")


def _count_bytes(data: bytes, needles: Sequence[str]) -> int:
    low = data.lower()
    return sum(low.count(n.encode("utf-8")) for n in needles)


def scan_rows(location: str | Path, needles: Sequence[str] = NEEDLES) -> dict[str, int]:
    """Rows holding a canary string (of ``needles``), per table, in every table of the memory (SQLite file or
    PostgreSQL schema), read with a connection of its own (the memory may be open or closed)."""
    counts: dict[str, int] = {}

    def row_leaks(row: Sequence[Any]) -> bool:
        return any(_count_bytes(_cell(v), needles) for v in row)

    if isinstance(location, str):
        import psycopg

        from gemrag.store.postgres.connect import PgLocation

        loc = PgLocation.parse(location)
        with psycopg.connect(loc.conninfo, autocommit=True) as conn:
            tables = [r[0] for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s AND table_type = 'BASE TABLE'"
                " ORDER BY table_name", (loc.schema,)).fetchall()]  # fmt: skip
            for table in tables:
                rows = conn.execute(f'SELECT * FROM "{loc.schema}"."{table}"').fetchall()
                counts[table] = sum(1 for r in rows if row_leaks(r))
        return counts
    conn = sqlite3.connect(f"file:{Path(location) / 'memory.sqlite'}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for table in tables:
            counts[table] = sum(1 for r in conn.execute(f'SELECT * FROM "{table}"') if row_leaks(r))
    finally:
        conn.close()
    return counts


def scan_files(directory: Path, needles: Sequence[str] = NEEDLES) -> dict[str, int]:
    """Occurrences of canary strings (of ``needles``; case-insensitive bytes) in every file under a SQLite memory
    directory, per file holding any."""
    counts = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        n = _count_bytes(path.read_bytes(), needles)
        if n:
            counts[str(path.relative_to(directory))] = n
    return counts


# -- measuring ------------------------------------------------------------------------------------------------------
def context_texts(store: Any, hit: Any) -> tuple[list[str], int]:
    """The texts a hit brings: its own and its provenance passages' chunk texts; and how many of those chunks
    are gone (a hit resting on a removed chunk)."""
    ids = [p.chunk_id for p in hit.provenance.passages]
    texts, gone = [hit.text], 0
    for i in ids:
        try:
            texts.append(store.node(i).text)
        except KeyError:
            gone += 1
    return texts, gone


def retrieve_all(
    mem: Any, strategy: str, budget: int | None, questions: Sequence[str] = QUESTIONS
) -> tuple[list[list[Any]] | None, str | None]:
    """The hits of ``questions`` (default: the five canary questions); None and the error when the strategy cannot
    answer (e.g. withdrawn)."""
    from gemrag.errors import GemragError
    from gemrag.memory.states import StaleStrategyWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StaleStrategyWarning)
        try:
            return [mem.retrieve(q, budget, strategy) for q in questions], None
        except GemragError as exc:
            return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"


def measure_hits(
    mem: Any, hits: list[list[Any]] | None, error: str | None, needles: Sequence[str] = NEEDLES, asked: int = 0
) -> dict[str, Any]:
    """Canary strings (of ``needles``) in the contexts: questions whose context holds one, hits holding one, gone
    chunks, and (replace) contexts holding the edited note's strings. ``asked``: how many questions were asked when
    ``hits`` is None (0: the five canary questions)."""
    if hits is None:
        return {"questions": asked or len(QUESTIONS), "leaking_questions": None, "error": error}
    leaking_q = leaking_hits = gone = edited_q = 0
    kinds: dict[str, int] = {}
    for q_hits in hits:
        q_leak = q_edit = False
        for h in q_hits:
            texts, missing = context_texts(mem.store, h)
            gone += missing
            if any(found(t, needles) for t in texts):
                leaking_hits += 1
                kinds[h.kind] = kinds.get(h.kind, 0) + 1
                q_leak = True
            q_edit = q_edit or any(found(t, EDITED_NEEDLES) for t in texts)
        leaking_q += q_leak
        edited_q += q_edit
    return {
        "questions": len(hits),
        "hits": sum(len(q) for q in hits),
        "leaking_questions": leaking_q,
        "leaking_hits": leaking_hits,
        "leaking_by_kind": kinds,
        "gone_chunks": gone,
        "edited_questions": edited_q,
        "error": None,
    }


def measure_nodes(store: Any, needles: Sequence[str] = NEEDLES) -> dict[str, Any]:
    """Canary strings (of ``needles``) in what a reader sees: derived nodes (text and meta), chunks, utility
    questions."""
    derived, chunks, kinds = 0, 0, {}
    for n in store.nodes():
        if not found(f"{n.text}\n{json.dumps(n.meta, ensure_ascii=False, default=str)}", needles):
            continue
        if n.kind == "chunk":
            chunks += 1
        else:
            derived += 1
            key = f"{n.strategy}:{n.kind}"
            kinds[key] = kinds.get(key, 0) + 1
    questions = sum(1 for _, _, text in store.questions() if found(text, needles))
    return {
        "derived": derived,
        "chunks": chunks,
        "utility_questions": questions,
        "total": derived + chunks + questions,
        "derived_by_kind": kinds,
    }


def measure_caches(store: Any, canary_keys: set[str], needles: Sequence[str] = NEEDLES) -> dict[str, int]:
    """LLM cache responses holding a canary string (of ``needles``); embedding cache entries of texts holding one."""
    responses = sum(
        1 for (r,) in store.database._query("SELECT response FROM llm_cache") if _count_bytes(_cell(r), needles)
    )
    keys = {str(k) for (k,) in store.database._query("SELECT key FROM embeddings")}
    return {"llm_responses": responses, "embeddings": len(keys & canary_keys)}


def measure_answers(
    models: Models,
    mem: Any,
    hits: list[list[Any]] | None,
    cache: Any | None,
    questions: Sequence[str] = QUESTIONS,
    needles: Sequence[str] = NEEDLES,
) -> dict[str, dict[str, Any]]:
    """Per reader and prompt: each answer's text (of ``questions``, whose hits are ``hits``), whether it abstains
    and whether it holds a canary string (of ``needles``)."""
    from gemrag.answers.answering import answer_question

    out: dict[str, dict[str, Any]] = {}
    if hits is None:
        return out
    cite = mem.config.answer.cites()
    for reader in models.readers:
        llm = models.reader_llm(mem, reader, cache)
        out[reader] = {}
        for prompt in PROMPTS:
            rows = []
            for question, q_hits in zip(questions, hits, strict=True):
                answer = answer_question(
                    llm, mem.meter, mem.store, question, q_hits, abstain=prompt == "abstain", cite=cite
                )
                rows.append({"text": answer.text[:400], "abstains": abstains(answer.text),
                             "leaks": found(answer.text, needles),
                             "edited": bool(found(answer.text, EDITED_NEEDLES))})  # fmt: skip
            out[reader][prompt] = {
                "abstained": sum(r["abstains"] for r in rows),
                "answered": sum(not r["abstains"] for r in rows),
                "leaked": sum(bool(r["leaks"]) for r in rows),
                "answers": rows,
            }
    return out


def measure(
    models: Models,
    mem: Any,
    location: str | Path,
    strategy: str,
    budget: int | None,
    cache: Any | None,
    questions: Sequence[str] = QUESTIONS,
    needles: Sequence[str] = NEEDLES,
    probes: Sequence[str] = (),
) -> dict[str, Any]:
    """Everything counted at one point of a scenario (the memory at ``location`` open): the hits of ``questions``
    and of ``probes`` (texts retrieved, not asked), the answers to ``questions``, canary strings of ``needles``."""
    hits, error = retrieve_all(mem, strategy, budget, (*questions, *probes))
    answers = measure_answers(models, mem, hits and hits[: len(questions)], cache, questions, needles)
    return {
        "hits": measure_hits(mem, hits, error, needles, len(questions) + len(probes)),
        "nodes": measure_nodes(mem.store, needles),
        "answers": answers,
        "leaking_answers": sum(p["leaked"] for r in answers.values() for p in r.values()),
        "answers_asked": sum(len(p["answers"]) for r in answers.values() for p in r.values()),
        "caches": measure_caches(mem.store, models.canary_keys, needles),
        "rows": scan_rows(location, needles),
    }
