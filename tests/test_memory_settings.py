"""The ``[memory]`` section (issue 40): the memory's chunk size, default budget, chunk titles and location, and the old
``[gem]`` keys that still set them in every layer (the TOML file, ``GEMRAG_*`` variables, ``--set``, overrides) with
one deprecation warning each."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fakes import HashEmbedder, ScriptedLLM
from gemrag import cli
from gemrag.config import Config, load_config, memory_location
from gemrag.errors import ConfigError, IncompatibleMemoryError
from gemrag.memory import Memory
from gemrag.memory_settings import DeprecatedSettingWarning
from gemrag.strategies.gem.settings import GemConfig, gem_config

STORY = "The keeper lit the lamp at dusk. Ships passed the reef safely. " * 20


def _load(*args: object, **kwargs: object) -> tuple[Config, list[str]]:
    """``load_config(*args)`` and the messages of the deprecation warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cfg = load_config(*args, **kwargs)  # type: ignore[arg-type]
    return cfg, [str(w.message) for w in caught if issubclass(w.category, DeprecatedSettingWarning)]


@pytest.fixture(autouse=True)
def _no_gemrag_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no ./gemrag.toml
    for name in ("GEMRAG_MEMORY", "GEMRAG_CONFIG"):
        monkeypatch.delenv(name, raising=False)


def test_the_memory_section_from_every_layer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "g.toml"
    f.write_text('[memory]\nlocation = "./mem"\nchunk_tokens = 60\nbudget = 7\nchunk_titles = false\n')
    cfg, deprecated = _load(f)
    assert (cfg.memory.location, cfg.memory.chunk_tokens, cfg.memory.budget, cfg.memory.chunk_titles) == (
        "./mem",
        60,
        7,
        False,
    )
    assert deprecated == [] and "chunk_tokens" not in GemConfig.model_fields  # [gem] holds GEM's own only
    monkeypatch.setenv("GEMRAG_MEMORY__BUDGET", "9")
    cfg, _ = _load(f, None, ["memory.chunk_tokens=80"])
    assert (cfg.memory.location, cfg.memory.chunk_tokens, cfg.memory.budget) == ("./mem", 80, 9)
    with pytest.raises(ConfigError, match="memory.budget"):
        load_config(None, {"memory": {"budget": 0}})
    with pytest.raises(ConfigError, match=r"\[memory\] has no setting 'chunk_size'"):
        load_config(None, None, ["memory.chunk_size=3"])


def test_the_location_shorthand_merges_with_the_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``memory = "DIR"`` (file) and ``GEMRAG_MEMORY`` name the memory as before, next to ``[memory]`` keys."""
    f = tmp_path / "g.toml"
    f.write_text('memory = "./from-file"\n')
    monkeypatch.setenv("GEMRAG_MEMORY__CHUNK_TOKENS", "50")
    cfg = load_config(f)
    assert (cfg.memory.location, cfg.memory.chunk_tokens) == ("./from-file", 50)
    monkeypatch.setenv("GEMRAG_MEMORY", "./from-env")
    assert memory_location(None, load_config(f)) == "./from-env"
    assert load_config(None, {"memory": "./given"}).memory.location == "./given"
    assert load_config(None, None, ["memory=./set"]).memory.location == "./set"


@pytest.mark.parametrize("key", ["chunk_tokens", "budget", "chunk_titles"])
def test_each_old_key_warns_once_and_works_in_every_layer(
    key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value, text = {"chunk_tokens": (40, "40"), "budget": (6, "6"), "chunk_titles": (False, "false")}[key]
    f = tmp_path / "g.toml"
    f.write_text(f"[gem]\n{key} = {text}\nquestions = 2\n")
    cfg, deprecated = _load(f)
    assert getattr(cfg.memory, key) == value and gem_config(cfg).questions == 2
    assert deprecated == [f"[gem] {key} ({f}) is deprecated: use [memory] {key}, the memory's setting"]

    cfg, deprecated = _load(None, None, [f"gem.{key}={text}"])
    assert getattr(cfg.memory, key) == value
    assert deprecated == [f"--set gem.{key} (--set) is deprecated: use --set memory.{key}, the memory's setting"]

    cfg, deprecated = _load(None, {"gem": {key: value}})
    assert getattr(cfg.memory, key) == value and len(deprecated) == 1

    monkeypatch.setenv(f"GEMRAG_GEM__{key.upper()}", text)
    cfg, deprecated = _load(None)
    assert getattr(cfg.memory, key) == value
    assert deprecated == [
        f"GEMRAG_GEM__{key.upper()} (the environment) is deprecated: use GEMRAG_MEMORY__{key.upper()}, the memory's "
        "setting"
    ]


def test_an_old_and_a_new_key_with_different_values_are_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "g.toml"
    f.write_text("[gem]\nbudget = 5\n[memory]\nbudget = 6\n")
    with pytest.raises(ConfigError, match=r"sets both \[gem\] budget = 5 \(deprecated\) and \[memory\] budget = 6"):
        load_config(f)
    with pytest.raises(ConfigError, match="--set memory.chunk_tokens"):
        load_config(None, None, ["gem.chunk_tokens=40", "memory.chunk_tokens=50"])
    monkeypatch.setenv("GEMRAG_GEM__BUDGET", "5")
    monkeypatch.setenv("GEMRAG_MEMORY__BUDGET", "6")
    with pytest.raises(ConfigError, match="GEMRAG_MEMORY__BUDGET"):
        load_config(None)
    monkeypatch.setenv("GEMRAG_MEMORY__BUDGET", "5")  # the same value twice: the old key only warns
    cfg, deprecated = _load(None)
    assert cfg.memory.budget == 5 and len(deprecated) == 1


def test_config_origin_names_the_deprecated_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "g.toml"
    f.write_text('memory = "./m"\n[gem]\nbudget = 7\n')
    monkeypatch.setenv("GEMRAG_GEM__CHUNK_TOKENS", "50")
    result = CliRunner().invoke(
        cli.app, ["config", "--config", str(f), "--origin", "--set", "memory.chunk_titles=false"]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    memory = lines[lines.index("[memory]") + 1 : lines.index("[memory]") + 5]
    assert memory == [
        f'location = "./m"  # {f}',
        "chunk_tokens = 50  # GEMRAG_GEM__CHUNK_TOKENS (deprecated gem.chunk_tokens: use memory.chunk_tokens)",
        f"budget = 7  # {f} (deprecated gem.budget: use memory.budget)",
        "chunk_titles = false  # --set",
    ]
    assert "[gem]" in lines and not any(
        line.startswith(("budget", "chunk_tokens")) for line in lines[lines.index("[gem]") :]
    )


def test_a_memory_chunked_under_the_old_key_opens_under_the_new_one(tmp_path: Path) -> None:
    """The chunk size a memory records is the one ``[memory]`` checks: an old-key memory stays valid."""
    with pytest.warns(DeprecatedSettingWarning):
        old = load_config(None, {"strategy": "dense", "gem": {"chunk_tokens": 30}})
    with Memory.open(tmp_path / "m", old, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(STORY, "The keeper")
        mem.index()
        chunks = len(mem.store.nodes("chunk"))
    new = load_config(None, {"strategy": "dense", "memory": {"chunk_tokens": 30}})
    with Memory.open(tmp_path / "m", new, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        assert len(mem.store.nodes("chunk")) == chunks > 1 and mem.retrieve("Who lit the lamp?")
    other = load_config(None, {"strategy": "dense", "memory": {"chunk_tokens": 60}})
    with pytest.raises(IncompatibleMemoryError, match="chunked with 30 tokens per chunk, not 60"):
        Memory.open(tmp_path / "m", other, llm=ScriptedLLM(), embedder=HashEmbedder())
