"""Shared fixtures: test doubles, a small real text, and paths to the real shared data (optional)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The test tree mirrors src/gemrag (tests/strategies/remem/, tests/store/, ...). Test modules import shared helpers
# (fakes, realparts, paths) and each other's fixtures by module name, so every folder of the tree is importable;
# test file names are unique across the tree (pytest's default "prepend" import mode requires it).
_TESTS = Path(__file__).resolve().parent
for _folder in sorted({p.parent for p in _TESTS.rglob("test_*.py")} | {_TESTS}, reverse=True):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

from backends import BACKENDS, MemoryAt, drop_schemas, new_schema, schema_url, start_server  # noqa: E402
from browserhelp import launch_chromium  # noqa: E402
from fakes import HashEmbedder, ScriptedLLM  # noqa: E402
from gemrag.config import Config, load_config  # noqa: E402
from gemrag.memory import answer_lengths  # noqa: E402
from gemrag.memory.answer_lengths import lengths_path as _lengths_path  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
STORY = REPO / "examples" / "quality" / "lost_in_translation.txt"


@pytest.fixture(scope="session", autouse=True)
def _answer_lengths_of_the_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Builds record their models' answer lengths (gemrag.memory.answer_lengths) under the session's own directory,
    never the user's cache (module- and session-scoped fixtures build memories too)."""
    root = tmp_path_factory.mktemp("answer-lengths")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(answer_lengths, "lengths_path", lambda cache_dir, model_id: _lengths_path(root, model_id))
        yield


@pytest.fixture(autouse=True)
def _answer_lengths_of_the_test(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no recorded answer lengths: a plan's completion tokens must not depend on the tests
    that ran before it."""
    root = tmp_path_factory.mktemp("lengths")
    monkeypatch.setattr(answer_lengths, "lengths_path", lambda cache_dir, model_id: _lengths_path(root, model_id))


@pytest.fixture
def fake_embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture
def fake_llm() -> ScriptedLLM:
    return ScriptedLLM()


@pytest.fixture
def config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Config:
    """A small GEM configuration, in the test's own directory and free of ``GEMRAG_*`` variables. It names ``gem``
    as its strategy: the tests that take it assert GEM-RAG's behaviour, whatever the configured default is."""
    for var in list(__import__("os").environ):
        if var.startswith("GEMRAG_"):
            monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    return load_config(
        None,
        {"strategy": "gem", "memory": {"chunk_tokens": 30}, "gem": {"questions": 3, "eigen": 2, "eigen_top": 3}},
    )


@pytest.fixture
def story_text() -> str:
    return STORY.read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of the session's PostgreSQL server (see ``backends.py``); skips, or fails under CI=true, without one."""
    yield from start_server()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """``"sqlite"`` or ``"postgres"``: a test taking this (or ``memory_at``) runs once on each store backend."""
    return str(request.param)


@pytest.fixture
def memory_at(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[MemoryAt]:
    """``memory_at(name="m")``: a memory location on the test's backend — ``tmp_path / name`` (SQLite), or the URL
    of a fresh schema on the session's PostgreSQL server, dropped after the test."""
    if backend == "sqlite":
        yield lambda name="m": tmp_path / name
        return
    base = request.getfixturevalue("postgres_url")
    made: dict[str, str] = {}

    def at(name: str = "m") -> str:
        if name not in made:
            made[name] = new_schema(f"{request.node.name}_{name}")
        return schema_url(base, made[name])

    yield at
    drop_schemas(base, list(made.values()))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium under playwright, one per test module (:func:`browserhelp.launch_chromium`: fails under
    CI=true when chromium or playwright is missing, skips elsewhere). Not per session: playwright's sync API keeps an
    event loop running in the main thread while it is open, and later tests that run their own loop (the MCP
    server's ``asyncio.run``) would fail with "Cannot run the event loop while another loop is running"."""
    with launch_chromium() as chromium:
        yield chromium
