"""``delete(..., purge=True)`` (:mod:`gemrag.memory.forgetting`, :mod:`gemrag.store.erase`): after it, no byte of the
removed text is left in any file of a SQLite memory (the database, its write-ahead log, the array files) and no
row of a PostgreSQL memory's schema holds it; caches of other documents survive; the memory still answers."""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from test_strategy_raptor import pca
from typer.testing import CliRunner

from backends import MemoryAt
from conftest import STORY
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.memory.states import StaleStrategyWarning
from gemrag.store.erase import Erasure, json_text
from gemrag.store.parts import Erasing
from gemrag.strategies.raptor.strategy import RaptorConfig, RaptorStrategy
from spans import memory_exporter, one

CANARY_V1 = (
    "The secret launch code of the Zephyr station is MAGENTA-4471. Captain Ilse Varga keeps the Zephyr code in "
    "a brass locket. Quartermaster Odile Quennevic tells Varga when the Zephyr code changes."
)
CANARY_V2 = CANARY_V1 + " Odile Quennevic and Ilse Varga never leave the Zephyr station together."
MARKERS = ("magenta-4471", "ilse varga", "zephyr", "varga", "magenta", "odile", "quennevic", "locket", "launch code")
"""Case-insensitive: every sentence of the canary holds one, and none occurs in the story."""
STRATEGIES = ("gem", "dense", "bm25", "raptor", "hlgraph", "remem", "unweaver")
STORY_QUESTION = "Why was Korvin's door left unlocked?"
CANARY_QUESTION = "What is the secret launch code of the Zephyr station?"


def documents(n: int = 3, words: int = 150) -> list[str]:
    text = STORY.read_text(encoding="utf-8").split()
    return [" ".join(text[i * words : (i + 1) * words]) for i in range(n)]


def open_memory(location: str | Path, config: Config) -> Memory:
    mem = Memory.open(location, config, llm=ScriptedLLM(), embedder=HashEmbedder())
    mem._strategies["raptor"] = RaptorStrategy(RaptorConfig(reducer=pca, reduction_dim=3, max_clusters=6))
    return mem


def marked(text: str) -> list[str]:
    """The canary markers ``text`` holds (case-insensitive)."""
    low = text.casefold()
    return [m for m in MARKERS if m in low]


@pytest.fixture
def purge_config(config: Config) -> Config:
    return config.model_copy(update={"memory": config.memory.model_copy(update={"chunk_tokens": 40})})


@pytest.fixture
def canary_memory(memory_at: MemoryAt, purge_config: Config, tmp_path: Path) -> Iterator[Memory]:
    """A memory of three story documents, a canary file added twice (its first version kept in the history), a chat
    exchange resting on the canary's chunks (its reply recalled them, as :class:`gemrag.chat.ChatSession` records)
    and one not, every cheap strategy built, a question about the canary asked, a failure
    message quoting it and an LLM cache entry of an older gemrag (no recorded input)."""
    canary = tmp_path / "canary.txt"
    canary.write_text(CANARY_V1, encoding="utf-8")
    with open_memory(memory_at("m"), purge_config) as mem:
        if hasattr(
            mem.store.database, "conn"
        ):  # SQLite as most builds have it (some compile secure_delete on by default)
            mem.store.database.conn.execute("PRAGMA secure_delete = OFF")
        for i, d in enumerate(documents()):
            mem.add_text(d, f"part {i}")
        mem.add([canary], keep_versions=True)
        mem.index("dense")
        canary.write_text(CANARY_V2, encoding="utf-8")
        mem.add([canary], keep_versions=True)  # version 1's text goes to the history
        for name in STRATEGIES:
            mem.index(name)
        assert mem.ask(CANARY_QUESTION, strategy="dense").text  # the answer prompt quoting the canary is cached
        assert mem.ask(STORY_QUESTION, strategy="dense").text
        quote = "[turn 1, 2024-05-01] user: What is the code?\n[turn 1, 2024-05-01] Ada: I remember: " + CANARY_V1[:61]
        recalled = [n.id for n in mem.store.nodes("chunk") if marked(n.text)]
        mem.add_text(quote, "chat with Ada, turn 1", "chat:Ada#1", rests_on=recalled)
        mem.add_text(
            "[turn 2, 2024-05-01] user: Hello\n[turn 2, 2024-05-01] Ada: Hello to you.", "turn 2", "chat:Ada#2"
        )
        mem.index("dense")
        mem.store.record_failure("index", None, "malformed answer for 'Captain Ilse Varga keeps the Zephyr code'")
        with mem.store.transaction() as c:  # as an older gemrag cached it: no recorded input, no marks
            c.execute(
                "INSERT INTO llm_cache(key, model, response, created) VALUES (?,?,?,?)",
                ("legacy-entry", "fake:scripted-llm", json.dumps({"text": "an answer cached by an older gemrag"}), 0.0),
            )
        yield mem


def llm_entries(mem: Memory) -> dict[str, dict[str, Any]]:
    return {str(k): json.loads(v) for k, v in mem.store.database._query("SELECT key, response FROM llm_cache")}


def leaks_in_files(directory: Path) -> list[str]:
    """``file: marker`` for every canary marker found in the bytes of any file under ``directory`` (case-insensitive;
    the database, its -wal and -shm, the array files and artefact directories)."""
    found = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        data = path.read_bytes().lower()
        found += [f"{path.name}: {m}" for m in MARKERS if m.encode() in data]
    return found


def leaks_in_rows(mem: Memory, markers: Sequence[str] = MARKERS) -> list[str]:
    """``table.column: marker`` for every marker (default: the canary's) in a text, JSON or bytea value of any table
    of the memory's PostgreSQL schema (bytea searched as bytes, case-insensitive)."""
    store: Any = mem.store
    columns = store.database._query(
        "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = ?"
        " AND data_type IN ('text', 'json', 'jsonb', 'bytea', 'character varying') ORDER BY 1, 2",
        (store.database.schema,),
    )
    assert {t for t, _, _ in columns} >= {"llm_cache", "documents", "nodes", "build_arrays", "document_versions"}
    found = []
    for table, column, kind in columns:
        for (value,) in store.database._query(f'SELECT "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL'):
            data = bytes(value).lower() if kind == "bytea" else str(value).casefold().encode()
            found += [f"{table}.{column}: {m}" for m in markers if m.encode() in data]
    return sorted(set(found))


def leaks(mem: Memory) -> list[str]:
    directory = getattr(mem.store.database, "directory", None)
    return leaks_in_files(directory) if directory is not None else leaks_in_rows(mem)


@pytest.mark.parametrize("rebuild", [False, True], ids=["pruned", "rebuilt"])
def test_purge_leaves_no_byte_and_no_row_of_the_removed_text(canary_memory: Memory, rebuild: bool) -> None:
    """Pruned: the generations the delete published (BM25 re-indexed without the removed tokens, the other arrays
    without the removed rows) hold none of it either; rebuilt: nor do the new builds."""
    mem = canary_memory
    assert leaks(mem)  # the canary is everywhere before
    before = llm_entries(mem)
    quoting = {k for k, v in before.items() if marked(json_text(json.dumps(v)))}
    unrelated = {k for k, v in before.items() if k not in quoting and "input" in v}
    assert quoting and unrelated
    embedder = mem.embedder
    canary_chunks = [n for n in mem.store.nodes("chunk") if marked(n.text)]
    story_chunk = next(n for n in mem.store.nodes("chunk") if not marked(n.text))
    built = set(mem.store.published_generations())

    report = mem.delete("canary.txt", purge=True, rebuild=rebuild)

    assert report.purge is not None and report.document["title"] == "canary"
    p = report.purge.purged
    assert [d["source"] for d in report.purge.exchanges] == ["chat:Ada#1"]
    assert (p.llm_entries, p.llm_unverifiable) == (len(quoting), 1)  # every quoting entry, no other; the legacy one
    assert set(llm_entries(mem)) >= unrelated  # the other documents' cached answers survive
    assert (p.versions, p.failures, p.meta) == (1, 1, 0)
    assert p.embeddings > 0 and p.embeddings_kept > 0
    erasure = report.purge.erasure
    assert erasure.complete and 0 < erasure.bytes_after < erasure.bytes_before and "VACUUM" in erasure.detail
    assert set(report.rebuilt) == (built if rebuild else set()) and report.llm_calls == sum(report.rebuilt.values())
    kept = mem.store.get_embeddings(embedder.model_id, [embedder.key(n.text) for n in canary_chunks])
    assert not kept and mem.store.get_embeddings(embedder.model_id, [embedder.key(story_chunk.text)])
    assert [d["source"] for d in mem.store.documents() if d["source"].startswith("chat:")] == ["chat:Ada#2"]

    assert leaks(mem) == []

    with warnings.catch_warnings():
        warnings.simplefilter("error" if rebuild else "ignore", StaleStrategyWarning)  # rebuilt: nothing is stale
        for name in STRATEGIES:
            hits = mem.retrieve(STORY_QUESTION, 4, strategy=name)
            assert hits and not any(marked(h.text) for h in hits), name
        assert not any(marked(h.text) for h in mem.retrieve(CANARY_QUESTION, 4, strategy="dense"))
        assert mem.ask(STORY_QUESTION, strategy="gem").hits
    assert leaks(mem) == []  # nothing of it came back (a question naming it would be cached: it is the user's)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_sqlite_memory_keeps_the_bytes_without_the_physical_erase(
    canary_memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check above catches a purge that deletes the rows but leaves their bytes in the file (no VACUUM, no
    secure_delete, no WAL truncation; each of VACUUM and the truncation alone was seen missing it)."""
    mem = canary_memory
    monkeypatch.setattr(type(mem.store), "erase_physically", lambda self: Erasure())
    monkeypatch.setattr(type(mem.store), "secure_deletes", lambda self: contextlib.nullcontext())
    report = mem.delete("canary.txt", purge=True)
    assert report.purge is not None and report.purge.purged.llm_entries > 0
    assert leaks(mem)  # rows gone, bytes still there


def test_a_purge_without_the_canary_in_a_cache_purges_no_other_entry(memory_at: MemoryAt, purge_config: Config) -> None:
    with open_memory(memory_at("m"), purge_config) as mem:
        for i, d in enumerate(documents()):
            mem.add_text(d, f"part {i}")
        mem.add_text(CANARY_V1, "canary")
        mem.index("gem")
        assert isinstance(mem.store, Erasing)
        before = llm_entries(mem)
        exporter = memory_exporter()
        report = mem.delete("canary", purge=True)
        assert report.purge is not None
        span = one(exporter.get_finished_spans(), "delete_memory")  # item 7: the delete's trace
        assert span.attributes["gen_ai.operation.name"] == "delete_memory"
        assert span.attributes["gen_ai.memory.id"] == mem.store.location
        assert span.attributes["gen_ai.memory.document.id"] == str(report.document["id"])
        assert span.attributes["gen_ai.memory.purge"] is True and span.attributes["gen_ai.memory.purge.complete"]
        assert span.attributes["gen_ai.memory.deleted_chunks"] == report.chunks > 0
        assert span.attributes["gen_ai.memory.deleted_nodes"] == report.derived_nodes
        after = llm_entries(mem)
        gone = set(before) - set(after)
        assert gone and all(marked(json_text(json.dumps(before[k]))) for k in gone)
        assert all(not marked(json_text(json.dumps(v))) for v in after.values())
        assert report.purge.purged.llm_unverifiable == 0 and report.purge.purged.llm_kept == len(after)
        assert leaks(mem) == []


def test_purge_of_one_source_keeps_the_shared_text(memory_at: MemoryAt, purge_config: Config, tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(CANARY_V1, encoding="utf-8")
    b.write_text(CANARY_V1, encoding="utf-8")
    with open_memory(memory_at("m"), purge_config) as mem:
        mem.add_text(documents(1)[0], "story")
        mem.add([a, b])
        mem.index("dense")
        report = mem.delete(str(b.resolve()), purge=True)
        assert report.kept_by == [str(a.resolve())] and report.purge is not None
        assert report.purge.purged.llm_entries == report.purge.purged.embeddings == 0
        assert mem.retrieve(CANARY_QUESTION, 1, strategy="dense")[0].text.startswith("The secret launch code")


def test_cli_delete_purge_prints_what_it_erased(canary_memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    from gemrag import cli

    store: Any = canary_memory.store
    location, config = getattr(store.database, "url", None) or store.database.directory, canary_memory.config
    canary_memory.close()

    real_open = Memory.open

    def fake_open(cls: type[Memory], d: Any, c: Config | None = None, **kw: Any) -> Memory:
        mem = real_open(d, config, llm=ScriptedLLM(), embedder=HashEmbedder())
        mem._strategies["raptor"] = RaptorStrategy(RaptorConfig(reducer=pca, reduction_dim=3, max_clusters=6))
        return mem

    monkeypatch.setattr(Memory, "open", classmethod(fake_open))  # as cli/options.py:open_memory opens it
    result = CliRunner().invoke(cli.app, ["delete", "canary.txt", "--purge", "--rebuild", "--memory", str(location)])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "erased" in out and "LLM cache entries holding removed text and 1 unverifiable" in out
    assert (
        "cleared 1 kept version texts" in out
        and "withdrew 1 chat exchanges resting on it: chat with Ada, turn 1" in out
    )
    assert "erased: VACUUM" in out and "rebuilt: bm25 (0 LLM calls)" in out
