"""The derived-holder scenarios of benchmarks/forgetting.py: what a removed document gave a node that stays, or an
exchange that rephrased it. Each builds a small memory of its own (not a copy of the canary base), on either
store, for every strategy:

* ``chat``: two notes (one with a vault code, ``QXV-7731``; :data:`fakes.VAULT_NOTE`); a chat character
  (:class:`gemrag.chat.ChatSession`, persona ``Ava``, the row's strategy) is asked for the vault combination
  and replies in its own words (with ``--fake``, :class:`fakes.ParaphrasingLLM`: "QXV dash 7731 opens the vault";
  else the configured LLM); the exchange is indexed; the note is deleted (no purge). Counted besides hits (of two
  questions and of the reply itself), nodes, answers and caches: exchanges holding the code in the live session's
  window, in what a new session loads (:func:`gemrag.chat.session.stored_exchanges`) and among the memory's
  documents (``chat``);
* ``merged_relation``: documents A, B and C (:data:`fakes.LEDGER_DOCS`), B stating first, in other words, a
  relation C states too, and :class:`fakes.LedgerLLM` writing for B's relation the passive "was paid through the
  Kestrel offshore ledger by"; B is deleted. The nodes naming the payment (HLGraphRAG's merged relation) are set
  against those of a build without B;
* ``edge_only``: the same documents with the plain scripted LLM: B alone says "Ilse Varga bribed Valdora"; B is
  deleted; the fact-edge weights between the surviving entities (REMem's) are set against a build without B.

In ``merged_relation`` and ``edge_only`` "removal equals a build without the document" is measured for the row's
strategy: its published structures (``tests/structures.py``: nodes with texts, meta and sources, edges and weights,
every array, BM25's scores) and the hits (texts and scores, hence PPR's steering) of three questions, compared
with a memory of the same store built from A and C alone with the same test doubles, at the removal (GEM and
RAPTOR: their chunk part; their summaries need the LLM) and after the rebuild. Both need the scripted extraction:
without ``--fake`` they are skipped. Every scenario ends with ``Memory.erase()`` from a new session; its rows and
files are counted after it.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from forgetting_corpus import REPO, Models, found
from forgetting_erase import erase_later
from forgetting_scan import measure, scan_files, scan_rows

DERIVED_SCENARIOS = ("chat", "merged_relation", "edge_only")
PERSONA = "Ava"
CHAT_MESSAGE = "What is the new vault combination?"
CHAT_QUESTIONS = ("What is the vault combination?", "Which code opens the vault?")
LEDGER_QUESTIONS = ("Who paid Mayor Holt?", "Whom did Ilse Varga bribe?", "Why did Mayor Holt warn Ilse Varga?")
CHAT_NEEDLES = ("qxv", "-7731", " 7731")
"""The vault code's strings in a text (not :data:`fakes.VAULT`'s bare "7731": a float stored as text may hold it)."""
CLOCK = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
EDGES = (("ilse varga", "valdora"), ("ilse varga", "mayor holt"))
"""The fact edges ``edge_only`` weighs: B's alone ("bribed"), and one B and C both make ("paid", "warned")."""


def _doubles() -> Any:
    """``tests/fakes.py`` and ``tests/structures.py`` (the test doubles and the structure comparison)."""
    sys.path.insert(0, str(REPO / "tests"))
    import fakes
    import structures

    return fakes, structures


def _point(models: Models, mem: Any, location: str | Path, strategy: str, questions: Sequence[str],
           needles: Sequence[str], probes: Sequence[str] = ()) -> dict[str, Any]:  # fmt: skip
    return measure(models, mem, location, strategy, None, None, questions, needles, probes)


def chat_leaks(mem: Any, chat: Any, needles: Sequence[str]) -> dict[str, int]:
    """Exchanges holding a string of ``needles``: in the live session's window, in what a new session with the
    persona loads, and documents of the memory (exchanges or not) whose text holds one."""
    from gemrag.chat.session import stored_exchanges

    window = sum(bool(found(e.text, needles)) for e in chat.window())
    loaded = sum(bool(found(e.text, needles)) for e in stored_exchanges(mem.store, PERSONA))
    docs = sum(bool(found(mem.store.document_text(int(d["id"])), needles)) for d in mem.store.documents())
    return {"window": window, "new_session": loaded, "documents": docs, "total": window + loaded + docs}


def _erase_and_scan(
    models: Models, figures: dict[str, Any], location: str | Path, needles: Sequence[str], config: Any = None
) -> None:
    """A later erase (a new session, opened with ``config``), then the rows and (SQLite) files holding a string of
    ``needles``."""
    figures["erase"] = erase_later(models, location, "delete_erase", config)
    figures["rows_closed"] = scan_rows(location, needles)
    if isinstance(location, Path):
        figures["files_closed"] = scan_files(location, needles)


@contextlib.contextmanager
def _needles(models: Models, needles: Sequence[str]) -> Iterator[None]:
    """The embedder records the texts holding ``needles`` for the block (their embedding-cache keys are counted)."""
    kept = models.embedder.needles
    models.embedder.needles = needles
    try:
        yield
    finally:
        models.embedder.needles = kept


def run_chat(models: Models, location: str | Path, strategy: str) -> dict[str, Any]:
    """The ``chat`` scenario (module docstring) at the empty ``location``; its row's ``base``, ``full_build`` and
    ``figures``."""
    from gemrag.chat import ChatSession

    fakes, _ = _doubles()
    needles = CHAT_NEEDLES
    backend = fakes.ParaphrasingLLM() if models.fake else None
    with _needles(models, needles), models.session(location, backend) as (mem, llm):
        note_id, _ = mem.add_text(fakes.VAULT_NOTE, "household notes", id="notes")
        mem.add_text(fakes.KEEPER, "keeper")
        mem.index(strategy)
        note_chunks = set(mem.store.document_chunk_ids(note_id))
        chat = ChatSession(mem, PERSONA, strategy=strategy, history=3, budget=2, max_tokens=24, temperature=0.0,
                           clock=lambda: CLOCK)  # fmt: skip
        reply = chat.reply(CHAT_MESSAGE)
        exchange = chat.exchanges[-1]
        rested = set(mem.store.document_inputs([exchange.doc_id])[exchange.doc_id])
        chat.index()
        build_calls = llm.calls
        before = _point(models, mem, location, strategy, CHAT_QUESTIONS, needles, (reply,))
        before["chat"] = chat_leaks(mem, chat, needles)
        t0 = time.perf_counter()
        report = mem.delete(note_id)
        figures: dict[str, Any] = {"removal": {"chunks": report.chunks, "derived_nodes": report.derived_nodes,
                                               "withdrawn": [str(d["source"]) for d in report.dependents],
                                               "seconds": round(time.perf_counter() - t0, 3)}}  # fmt: skip
        figures["after_removal"] = _point(models, mem, location, strategy, CHAT_QUESTIONS, needles, (reply,))
        figures["after_removal"]["chat"] = chat_leaks(mem, chat, needles)
        calls, t0 = llm.calls, time.perf_counter()
        mem.index(strategy)
        figures["rebuild"] = {"llm_calls": llm.calls - calls, "seconds": round(time.perf_counter() - t0, 2)}
        figures["after_rebuild"] = _point(models, mem, location, strategy, CHAT_QUESTIONS, needles, (reply,))
        figures["after_rebuild"]["chat"] = chat_leaks(mem, chat, needles)
        figures["checks"] = {"reply": reply[:200], "reply_holds_the_code": bool(found(reply, needles)),
                             "recalled_the_note": bool(rested & note_chunks)}  # fmt: skip
        if isinstance(location, Path):
            figures["files_open"] = scan_files(location, needles)
    _erase_and_scan(models, figures, location, needles)
    base = {"before": before, "build_llm_calls": build_calls}
    return {"base": base, "full_build": {"llm_calls": 0}, "figures": figures}


def _structures(mem: Any, strategy: str, questions: Sequence[str], chunks_only: bool) -> dict[str, Any]:
    """The strategy's published structures (``tests/structures.py``; ``chunks_only``: GEM's and RAPTOR's chunk
    part), its hits for ``questions`` (text and score, sorted), and the fact-edge weights of :data:`EDGES`."""
    import warnings

    from gemrag.memory.states import StaleStrategyWarning

    _, structures = _doubles()
    parts = structures.CHUNK_PART_AT_REMOVAL if chunks_only else ()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StaleStrategyWarning)
        hits = [sorted((h.text, round(float(h.score), 5)) for h in mem.retrieve(q, 4, strategy)) for q in questions]
    entities = {n.text: n.id for n in mem.store.nodes("entity", strategy=strategy)}
    fact = [(s, d, w) for kind, s, d, w in mem.store.edge_list(strategy, "fact")] if entities else []
    edges = {f"{a} -> {b}": (sum(w for s, d, w in fact if (s, d) == (entities[a], entities[b]))
                             if a in entities and b in entities else None) for a, b in EDGES}  # fmt: skip
    paid = [(n.kind, n.text, {k: n.meta.get(k) for k in ("label", "passive")})
            for n in mem.store.nodes(strategy=strategy) if n.kind != "chunk" and "paid" in n.text.lower()]  # fmt: skip
    return {"built": structures.built(mem, chunks_only=parts), "hits": hits, "fact_edges": edges,
            "paid_nodes": sorted(paid, key=repr)}  # fmt: skip


def _compare(got: dict[str, Any], want: dict[str, Any], what: str) -> dict[str, Any]:
    _, structures = _doubles()
    problems = structures.build_differences(got["built"], want["built"], what)
    if got["hits"] != want["hits"]:
        problems.append(f"{what}: hits (texts or scores) differ")
    return {"equal": not problems, "differences": problems[:6]}


def run_ledger(
    models: Models, location: str | Path, without: str | Path, strategy: str, scenario: str
) -> dict[str, Any]:
    """``merged_relation`` or ``edge_only`` (module docstring): documents A, B, C at the empty ``location``, B
    deleted, set against A and C built at the empty ``without``; the row's ``base``, ``full_build`` and ``figures``."""
    from gemrag.config import load_config

    fakes, structures = _doubles()
    needles = fakes.LEDGER_REMOVED
    config = load_config(None, structures.MERGE_OVERRIDES)
    llm_backend = fakes.LedgerLLM() if scenario == "merged_relation" else fakes.ScriptedLLM()
    chunks_only = strategy in structures.CHUNK_PART_AT_REMOVAL

    def build(mem: Any, docs: str) -> None:
        structures.deterministic_raptor(mem)
        for d in docs:
            mem.add_text(fakes.LEDGER_DOCS[d], d, id=d)
        mem.index(strategy)

    with _needles(models, needles):
        with models.session(without, llm_backend, config) as (mem, llm):
            build(mem, "ac")
            want = _structures(mem, strategy, LEDGER_QUESTIONS, False)
            want_chunks = _structures(mem, strategy, LEDGER_QUESTIONS, chunks_only)
            full = {"llm_calls": llm.calls}
        with models.session(location, llm_backend, config) as (mem, llm):
            build(mem, "abc")
            build_calls = llm.calls
            before = _point(models, mem, location, strategy, LEDGER_QUESTIONS, needles)
            was = _structures(mem, strategy, LEDGER_QUESTIONS, False)
            t0 = time.perf_counter()
            report = mem.delete("b")
            figures: dict[str, Any] = {"removal": {"chunks": report.chunks, "derived_nodes": report.derived_nodes,
                                                   "seconds": round(time.perf_counter() - t0, 3)}}  # fmt: skip
            figures["after_removal"] = _point(models, mem, location, strategy, LEDGER_QUESTIONS, needles)
            at_removal = _structures(mem, strategy, LEDGER_QUESTIONS, chunks_only)
            calls, t0 = llm.calls, time.perf_counter()
            mem.index(strategy)
            figures["rebuild"] = {"llm_calls": llm.calls - calls, "seconds": round(time.perf_counter() - t0, 2)}
            figures["after_rebuild"] = _point(models, mem, location, strategy, LEDGER_QUESTIONS, needles)
            rebuilt = _structures(mem, strategy, LEDGER_QUESTIONS, False)
            if isinstance(location, Path):
                figures["files_open"] = scan_files(location, needles)
    removal = _compare(at_removal, want_chunks, "at the removal")
    if chunks_only:  # GEM's and RAPTOR's summaries leave with a member and come back at the next index
        removal["hits"] = "summaries rebuilt at the next index: hits not compared"
        removal["equal"] = not [d for d in removal["differences"] if "hits" not in d]
    figures["equal_without"] = {"at_removal": removal, "after_rebuild": _compare(rebuilt, want, "after the rebuild"),
                                "b_changed_the_build": was["built"] != want["built"]}  # fmt: skip
    key = "paid_nodes" if scenario == "merged_relation" else "fact_edges"
    figures["checks"] = {key: {"with_b": was[key], "at_removal": at_removal[key], "after_rebuild": rebuilt[key],
                               "without_b": want[key]}}  # fmt: skip
    _erase_and_scan(models, figures, location, needles, config)
    return {"base": {"before": before, "build_llm_calls": build_calls}, "full_build": full, "figures": figures}


def run_derived(models: Models, locate: Any, strategy: str, scenario: str) -> dict[str, Any]:
    """One derived scenario for ``strategy``; ``locate(name)`` gives an empty memory location of the row's store.
    Without ``--fake``, ``merged_relation`` and ``edge_only`` are skipped (they need the scripted extraction)."""
    if scenario == "chat":
        return run_chat(models, locate(scenario), strategy)
    if not models.fake:
        return {"figures": {"skipped": "needs the scripted extraction of the test doubles (--fake)"}}
    return run_ledger(models, locate(scenario), locate(f"{scenario}_without"), strategy, scenario)
