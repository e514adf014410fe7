"""Exchanges withdrawn with what they rest on, and ``erase`` (:mod:`gemrag.memory.erasing`, :mod:`gemrag.store.erase`)
with the test doubles, on both stores: a paraphrasing chat reply leaves with the note it recalled (not retrievable,
not in any session's window) and ``--purge`` / a later ``erase`` leaves none of its bytes; an edited-out or deleted
password is erased by an erase run at any later time; an erase a reader kept from finishing says so, names the file,
and completes when run again."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from backends import MemoryAt
from fakes import KEEPER, VAULT, VAULT_NOTE, HashEmbedder, ParaphrasingLLM
from gemrag import Memory
from gemrag.chat import ChatSession
from gemrag.config import Config
from gemrag.store.erase import marks_of
from test_forgetting_purge import leaks_in_rows

NOTE = VAULT_NOTE
PASSWORD_NOTE = (
    "Weekly plan for the garden and the house.\nWater the tomatoes every morning before work.\n"
    "My bank password is Tr0ub4dor-Zebra-91 and nobody may know it.\nCall the plumber about the kitchen tap."
)
PASSWORD = ("tr0ub4dor", "zebra-91")


def _open(location: str | Path, config: Config) -> Memory:
    return Memory.open(location, config, llm=ParaphrasingLLM(), embedder=HashEmbedder())


def byte_leaks(mem: Memory, markers: Sequence[str]) -> list[str]:
    """Where ``markers`` (lower case) are in the memory: ``file: marker`` in the bytes of any file of a SQLite
    memory's directory, ``table.column: marker`` in any row of a PostgreSQL memory's schema."""
    directory = getattr(mem.store.database, "directory", None)
    if directory is None:
        return leaks_in_rows(mem, markers)
    found = []
    for path in sorted(p for p in Path(directory).rglob("*") if p.is_file()):
        data = path.read_bytes().lower()
        found += [f"{path.name}: {m}" for m in markers if m.encode() in data]
    return found


def _holds(texts: Sequence[str], markers: Sequence[str]) -> bool:
    return any(m in t.casefold() for t in texts for m in markers)


def test_a_paraphrasing_exchange_leaves_with_the_note_it_recalled(memory_at: MemoryAt, config: Config) -> None:
    """The vault scenario: the reply rephrases the code (no sentence of the note in it), so only what it rests on
    can find it. Deleted without purge: not retrievable, out of the live session's window and of a new session's;
    then erased: no byte of it anywhere."""
    location = memory_at("m")
    with _open(location, config) as mem:
        note_id, _ = mem.add_text(NOTE, "household notes", id="notes")
        mem.add_text(KEEPER, "keeper")
        mem.index("dense")
        chat = ChatSession(mem, "Ava", strategy="dense", history=3)
        reply = chat.reply("What is the vault combination?")
        assert "QXV dash 7731" in reply and "combination" not in reply  # a paraphrase, not a quote
        exchange = chat.exchanges[-1]
        rested = mem.store.document_inputs([exchange.doc_id])[exchange.doc_id]
        assert set(rested) & set(mem.store.document_chunk_ids(note_id))
        chat.index()
        assert _holds([h.text for h in mem.retrieve("QXV dash 7731 opens the vault", 4, "dense")], VAULT)

        report = mem.delete(note_id)

        assert report.purge is None and [d["id"] for d in report.dependents] == [exchange.doc_id]
        assert [d["reason"] for d in mem.store.document_history("chat:Ava#1")] == ["withdrawn"]
        assert not _holds([h.text for h in mem.retrieve("QXV dash 7731 opens the vault", 4, "dense")], VAULT)
        assert not _holds([h.text for h in mem.retrieve("vault combination", 4, "dense")], VAULT)
        assert not _holds([e.text for e in chat.window()], VAULT)  # the live session's window
        assert ChatSession(mem, "Ava", strategy="dense").exchanges == []  # a new session's
        assert byte_leaks(mem, VAULT)  # the bytes stay until an erase
        chat.reply("Hello again.")  # the session goes on; its next exchange rests on nothing of the note
        assert not _holds([mem.store.document_text(int(d["id"])) for d in mem.store.documents()], VAULT)

        erased = mem.erase()

        assert erased.erasure.complete and erased.fragments > 0 and erased.purged.llm_entries > 0
        assert byte_leaks(mem, VAULT) == []
        assert mem.retrieve("lighthouse railings", 1, "dense")[0].text.startswith("The lighthouse keeper")


def test_delete_purge_withdraws_and_erases_the_exchange(memory_at: MemoryAt, config: Config) -> None:
    with _open(memory_at("m"), config) as mem:
        note_id, _ = mem.add_text(NOTE, "household notes")
        mem.index("dense")
        ChatSession(mem, "Ava", strategy="dense").turn("What is the vault combination?")
        report = mem.delete(note_id, purge=True)
        assert report.purge is not None and [d["source"] for d in report.purge.exchanges] == ["chat:Ava#1"]
        assert report.purge.erasure.complete and byte_leaks(mem, VAULT) == []


@pytest.mark.parametrize("strategy", ["dense", "gem"])
def test_an_edited_out_password_is_erased_by_a_later_erase(
    memory_at: MemoryAt, config: Config, tmp_path: Path, strategy: str
) -> None:
    note = tmp_path / "note.txt"
    note.write_text(PASSWORD_NOTE, encoding="utf-8")
    location = memory_at("m")
    with _open(location, config) as mem:
        mem.add([note])
        mem.index(strategy)
        note.write_text(PASSWORD_NOTE.replace("My bank password is Tr0ub4dor-Zebra-91 and nobody may know it.\n", ""))
        mem.add([note])
        mem.index(strategy)
        assert not _holds([h.text for h in mem.retrieve("bank password", 4, strategy)], PASSWORD)
        sqlite = hasattr(mem.store.database, "directory")  # PostgreSQL's dead rows are not readable: gem's cache is
        assert byte_leaks(mem, PASSWORD) or not (sqlite or strategy == "gem")  # the cache, the freed pages hold it
    with _open(location, config) as mem:  # any time later, another process
        report = mem.erase()
        assert report.erasure.complete and report.fragments > 0
        assert report.purged.llm_entries > 0 if strategy == "gem" else report.purged.embeddings > 0  # dense: no LLM
        assert byte_leaks(mem, PASSWORD) == []
        assert _holds([h.text for h in mem.retrieve("tomatoes", 2, strategy)], ["tomatoes"])
        again = mem.erase()  # nothing left to erase, and nothing of the rest goes
        assert (again.fragments, again.purged.llm_entries, again.quarantined) == (0, 0, 0)


def test_a_plain_delete_then_a_later_erase(memory_at: MemoryAt, config: Config) -> None:
    location = memory_at("m")
    with _open(location, config) as mem:
        doc_id, _ = mem.add_text(PASSWORD_NOTE, "note")
        mem.add_text(KEEPER, "keeper")
        mem.index("gem")
        mem.delete(doc_id)
        assert byte_leaks(mem, PASSWORD)
    with _open(location, config) as mem:
        kept = mem.store.llm_cache_counts()[0]
        report = mem.erase()
        assert report.purged.llm_entries > 0 and report.purged.llm_kept == kept - report.purged.llm_entries > 0
        assert byte_leaks(mem, PASSWORD) == []


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_an_erase_a_reader_kept_from_finishing_names_the_file_and_completes_when_run_again(
    memory_at: MemoryAt, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gemrag import cli

    location = Path(memory_at("m"))
    with _open(location, config) as mem:
        doc_id, _ = mem.add_text(PASSWORD_NOTE, "note")
        mem.add_text(KEEPER, "keeper")
        mem.index("dense")
        mem.delete(doc_id)
    reader = sqlite3.connect(location / "memory.sqlite", isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT COUNT(*) FROM nodes").fetchone()  # holds a snapshot of the old pages
    real_open = Memory.open

    def fake_open(cls: type[Memory], d: Any, c: Config | None = None, **kw: Any) -> Memory:
        return real_open(d, config, llm=ParaphrasingLLM(), embedder=HashEmbedder())

    monkeypatch.setattr(Memory, "open", classmethod(fake_open))  # as cli/options.py:open_memory opens it
    first = CliRunner().invoke(cli.app, ["erase", "--memory", str(location)])
    assert first.exit_code == 1, first.output
    assert "memory.sqlite" in first.output and "run `gemrag erase` again" in " ".join(first.output.split())
    reader.execute("COMMIT")
    reader.close()
    second = CliRunner().invoke(cli.app, ["erase", "--memory", str(location)])
    assert second.exit_code == 0, second.output
    assert "erased: VACUUM; write-ahead log checkpointed and truncated" in " ".join(second.output.split())
    monkeypatch.undo()
    with _open(location, config) as mem:
        assert byte_leaks(mem, PASSWORD) == []


def test_an_interrupted_erase_loses_nothing_and_the_next_one_finishes(
    memory_at: MemoryAt, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C inside the erase's transaction: the quarantine and the caches are as before; the next erase
    finishes."""
    with _open(memory_at("m"), config) as mem:
        doc_id, _ = mem.add_text(PASSWORD_NOTE, "note")
        mem.index("dense")
        mem.delete(doc_id)
        quarantined = mem.store.forgotten_marks()
        entries = mem.store.llm_cache_counts()[0]
        store_type = type(mem.store.parts.caches)
        real = store_type.purge_caches

        def interrupted(self: Any, *args: Any, **kwargs: Any) -> Any:
            with self._db.transaction() as c:
                c.execute("DELETE FROM forgotten")
                raise KeyboardInterrupt

        monkeypatch.setattr(store_type, "purge_caches", interrupted)
        with pytest.raises(KeyboardInterrupt):
            mem.erase()
        assert mem.store.forgotten_marks() == quarantined and mem.store.llm_cache_counts()[0] == entries
        monkeypatch.setattr(store_type, "purge_caches", real)
        assert mem.erase().erasure.complete and mem.store.forgotten_marks() == set()
        assert byte_leaks(mem, PASSWORD) == []


def test_marks_find_a_sentence_or_a_long_run_wherever_it_sits() -> None:
    removed = marks_of("Captain Ilse Varga keeps the Zephyr code in a brass locket. It opens at dawn.", every=True)
    assert marks_of("Context:\n[1] captain  ILSE varga keeps the zephyr code in a brass locket.\n") & removed
    run = [f"word{i}" for i in range(16)]
    removed = marks_of(f"It began: {' '.join(run)}. The end.", every=True)
    for shift in range(20):  # 16 shared words give a shared mark wherever they sit in the cached text
        cached = " ".join([f"x{i}" for i in range(shift)] + run + [f"y{i}" for i in range(30)])
        assert marks_of(cached) & removed, shift
    assert not marks_of(" ".join(run[:10]) + " and more words here unlike the rest") & removed - marks_of(
        " ".join(run[:10]), every=True
    )
    assert marks_of('{"name": "Ilse Varga", "kind": "said"}') & marks_of("Ilse Varga")  # a name whole
    assert not marks_of("The launch of the station was secret.") & removed
    assert not marks_of("said") and not marks_of("Yes.")  # too short to mean anything
