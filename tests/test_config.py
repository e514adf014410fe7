"""Configuration precedence: flags > environment > file > defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemrag.config import load_config
from gemrag.errors import ConfigError
from gemrag.strategies.gem.settings import gem_config


def test_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "g.toml"
    f.write_text('[memory]\nbudget = 7\n[gem]\nquestions = 3\neigen = 4\n[llm]\nprovider = "openai"\nmodel = "m1"\n')
    monkeypatch.setenv("GEMRAG_GEM__QUESTIONS", "2")
    monkeypatch.setenv("GEMRAG_LLM__MODEL", "m-env")
    cfg = load_config(f, {"memory": {"budget": 9}, "gem": {"eigen": None}, "llm": {"model": None}})
    assert cfg.memory.budget == 9  # flag beats file
    assert gem_config(cfg).questions == 2  # env beats file
    assert gem_config(cfg).eigen == 4  # unset flag does not mask the file
    assert cfg.llm.model == "m-env" and cfg.llm.provider == "openai"
    assert cfg.memory.chunk_tokens == 100  # default


def test_default_file_and_env_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gemrag.toml").write_text("[memory]\nbudget = 3\n")
    assert load_config().memory.budget == 3
    other = tmp_path / "other.toml"
    other.write_text("[memory]\nbudget = 5\n")
    monkeypatch.setenv("GEMRAG_CONFIG", str(other))
    assert load_config().memory.budget == 5


def test_invalid_values_and_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(ConfigError):
        load_config(None, {"memory": {"budget": 0}})
    bad = tmp_path / "bad.toml"
    bad.write_text("[gem\nbudget = ")
    with pytest.raises(ConfigError):
        load_config(bad)


def test_the_memory_comes_from_the_option_or_the_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    from gemrag.config import memory_location

    monkeypatch.delenv("GEMRAG_MEMORY", raising=False)
    assert memory_location("mem/", load_config(None)) == "mem/"
    with pytest.raises(ConfigError, match="GEMRAG_MEMORY"):
        memory_location(None, load_config(None))
    url = "postgresql://me@localhost/db?schema=team"
    monkeypatch.setenv("GEMRAG_MEMORY", url)
    assert memory_location(None, load_config(None)) == url
    assert memory_location("other/", load_config(None)) == "other/"  # --memory wins
