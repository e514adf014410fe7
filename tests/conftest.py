"""Shared fixtures: test doubles, a small real text, and paths to the real shared data (optional)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The test tree mirrors src/gemrag (tests/strategies/remem/, tests/store/, ...). Test modules import shared helpers
# (fakes, realparts, paths) and each other's fixtures by module name, so every folder of the tree is importable;
# test file names are unique across the tree (pytest's default "prepend" import mode requires it).
_TESTS = Path(__file__).resolve().parent
for _folder in sorted({p.parent for p in _TESTS.rglob("test_*.py")} | {_TESTS}, reverse=True):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

from fakes import HashEmbedder, ScriptedLLM  # noqa: E402
from gemrag.config import Config, load_config  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
STORY = REPO / "examples" / "quality" / "lost_in_translation.txt"


@pytest.fixture
def fake_embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture
def fake_llm() -> ScriptedLLM:
    return ScriptedLLM()


@pytest.fixture
def config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Config:
    for var in list(__import__("os").environ):
        if var.startswith("GEMRAG_"):
            monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    return load_config(None, {"gem": {"chunk_tokens": 30, "questions": 3, "eigen": 2, "eigen_top": 3}})


@pytest.fixture
def story_text() -> str:
    return STORY.read_text(encoding="utf-8")
