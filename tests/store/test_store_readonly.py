"""Read-only memories: retrieval needs no write access (explicit ``readonly=True``, and automatically when the
directory is not writable); nothing is written, not even caches, usage rows or SQLite's -wal/-shm files."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import gemrag.store.open
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.errors import GemragError, ReadOnlyMemoryError
from gemrag.store import Store
from gemrag.store.sqlite.connection import memory_writable
from test_memory import DOC_A

QUESTION = "Who gave Amos a silver medal for his courage?"


def snapshot_dir(path: Path) -> dict[str, str]:
    """sha256 of every file, except SQLite's shared-memory index (-shm) and an *empty* -wal, which a read-only
    connection creates when it may (in a writable directory, or as root): they hold no data."""
    wal = path / "memory.sqlite-wal"
    skip = {"memory.sqlite-shm"} | ({wal.name} if wal.exists() and wal.stat().st_size == 0 else set())
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.iterdir())
        if p.is_file() and p.name not in skip
    }


@pytest.fixture
def built(tmp_path: Path, config: Config) -> tuple[Path, list[tuple[int, str, float]]]:
    path = tmp_path / "m"
    with Memory.open(path, config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A)
        mem.index()
        hits = [(h.node_id, h.text, h.score) for h in mem.retrieve(QUESTION, 3)]
    return path, hits


@pytest.fixture
def read_only_dir(built: tuple[Path, list]) -> Iterator[tuple[Path, list]]:  # type: ignore[type-arg]
    path, hits = built
    modes = {p: p.stat().st_mode for p in [path, *path.iterdir()]}
    for p in modes:
        p.chmod(modes[p] & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))  # chmod -R a-w
    yield path, hits
    for p, mode in modes.items():
        p.chmod(mode)


def test_explicit_readonly_store_writes_nothing(built: tuple[Path, list], config: Config) -> None:
    path, hits = built
    before = snapshot_dir(path)
    llm = ScriptedLLM()
    with Memory.open(path, config, llm=llm, embedder=HashEmbedder(), readonly=True) as mem:
        assert mem.readonly and mem.store.readonly
        got = [(h.node_id, h.text, h.score) for h in mem.retrieve(QUESTION, 3)]
        assert got == hits
        answer = mem.ask("Who gave Amos a silver medal?", ["the harbour master of Port Hollow", "a puffin"])
        assert answer.choice == 0 and llm.calls == 1
        assert mem.stats()["chunks"] > 0
        with pytest.raises(ReadOnlyMemoryError, match="read-only"):
            mem.index()
        with pytest.raises(ReadOnlyMemoryError):
            mem.add_text("More text to add. It has two sentences.")
        with pytest.raises(ReadOnlyMemoryError):
            mem.store.set_meta("x", 1)
        # caches and logs are skipped, not errors
        mem.store.put_embeddings("m", [("k", np.ones(3, dtype=np.float32))])
        mem.store.put_llm("k", "m", {"text": "x"})
        mem.store.log_usage([("query", "llm", "m", 1, 1, 0, 0.1, 0)])
        mem.store.record_failure("query/answer", None, "x")
        assert mem.store.remove_stale_files() == 0
    assert snapshot_dir(path) == before  # not a byte changed, no file created (but SQLite's empty -wal/-shm)


def test_readonly_store_of_a_missing_memory(tmp_path: Path) -> None:
    with pytest.raises(GemragError, match="not a gemrag memory"):
        Store(tmp_path / "none", readonly=True)
    assert not (tmp_path / "none").exists()


def test_read_only_directory_still_answers(
    read_only_dir: tuple[Path, list], config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, hits = read_only_dir
    before = snapshot_dir(path)
    if os.geteuid() == 0:  # root ignores file modes: make the writability check see what a user would
        monkeypatch.setattr(gemrag.store.open, "memory_writable", lambda directory: False)
    with Memory.open(path, config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:  # read-only by itself
        assert mem.readonly
        assert [(h.node_id, h.text, h.score) for h in mem.retrieve(QUESTION, 3)] == hits
        assert mem.retrieve("a question nobody asked before about puffins", 2)  # a new query vector: not cached
    assert snapshot_dir(path) == before


def test_writability_check(tmp_path: Path, built: tuple[Path, list]) -> None:
    path, _ = built
    assert memory_writable(path) and memory_writable(tmp_path / "new")
    if os.geteuid() != 0:
        db = path / "memory.sqlite"
        db.chmod(0o444)
        try:
            assert not memory_writable(path)
        finally:
            db.chmod(0o644)
