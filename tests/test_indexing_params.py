"""What a build records as the memory's parameters: the memory's settings and the built strategy's own section,
never another method's (the default method's settings are a section like every other)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.strategies.gem.settings import GemConfig

TEXT = (
    "The lighthouse keeper Amos Reed lived on Gull Island. He lit the great lamp every evening at dusk. "
    "Storms battered the island each winter and the keeper mended the shutters. "
    "Ships passing the island relied on the lamp to avoid the reef."
)
GEM_ONLY = set(GemConfig.model_fields) - {"read_titles"}


@pytest.mark.parametrize("strategy", ["dense", "remem"])
def test_a_build_records_its_own_params_and_no_gem_keys(tmp_path: Path, config: Config, strategy: str) -> None:
    with Memory.open(tmp_path / "m", config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(TEXT, "lighthouse")
        mem.index(strategy=strategy)
        params = mem.stats()["params"]
        own = mem.get_strategy(strategy).config.model_dump(exclude={"read_titles"})  # type: ignore[attr-defined]
    assert not GEM_ONLY & set(params), f"{strategy}'s build recorded GEM's settings: {sorted(GEM_ONLY & set(params))}"
    assert {k: params[k] for k in own} == own and (own or strategy == "dense")  # its own section (dense: none)
    assert params["chunk_tokens"] == config.memory.chunk_tokens and "chunk_titles" in params


def test_a_gem_build_records_gem_params(tmp_path: Path, config: Config) -> None:
    with Memory.open(tmp_path / "m", config, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(TEXT, "lighthouse")
        mem.index(strategy="gem")
        params = mem.stats()["params"]
    assert set(params) >= GEM_ONLY and "read_titles" not in params
