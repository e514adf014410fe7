"""Integration tests of the embedded llama.cpp backend with the real Qwen2.5-Coder-0.5B GGUF."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gemrag.errors import GemragError, ModelNotAvailableError
from gemrag.models.base import LLM
from gemrag.models.llama.backend import LlamaCppLLM
from realparts import require_real

pytestmark = pytest.mark.integration

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "questions": {"type": "array", "items": {"type": "string"}},
        "topic": {"type": "string"},
    },
    "required": ["questions", "topic"],
}


@pytest.fixture(scope="module")
def llm() -> Iterator[LlamaCppLLM]:
    if importlib.util.find_spec("llama_cpp") is None:
        require_real("llama-cpp-python is not installed")
    try:
        model = LlamaCppLLM("qwen2.5-coder-0.5b", n_ctx=2048, preload=True)
    except ModelNotAvailableError as e:
        require_real(str(e))
    try:
        yield model
    finally:
        model.close()


def test_identity(llm: LlamaCppLLM) -> None:
    assert isinstance(llm, LLM)
    assert llm.model_id == "llama.cpp:qwen2.5-coder-0.5b-q4_k_m:1d9614638d18"
    assert llm.context_window == 2048
    # The GGUF's own (Qwen) chat template is used, not a generic fallback.
    loaded = llm.load()
    assert "tokenizer.chat_template" in loaded.metadata
    assert loaded.chat_format == "chat_template.default"


def test_same_file_by_path_has_the_same_id(llm: LlamaCppLLM) -> None:
    assert LlamaCppLLM(llm.model_path).model_id == llm.model_id


def test_other_gguf_file_id(llm: LlamaCppLLM, tmp_path: Path) -> None:
    link = tmp_path / "renamed.gguf"
    link.symlink_to(llm.model_path)
    assert LlamaCppLLM(link).model_id == f"llama.cpp:renamed.gguf:{llm.model_path.stat().st_size}"


def test_schema_constrained_answer(llm: LlamaCppLLM) -> None:
    out = llm.complete(
        [
            {"role": "system", "content": "You write study questions."},
            {
                "role": "user",
                "content": "Text: 'The Amazon river carries more water than any other river.' "
                "Give the topic and two questions the text answers, as JSON.",
            },
        ],
        schema=SCHEMA,
        max_tokens=200,
    )
    assert isinstance(out.parsed, dict), out.text
    assert isinstance(out.parsed["topic"], str)
    assert isinstance(out.parsed["questions"], list) and out.parsed["questions"]
    assert all(isinstance(q, str) for q in out.parsed["questions"])
    assert out.usage.prompt_tokens > 20 and out.usage.completion_tokens > 0
    assert out.usage.seconds > 0 and out.usage.calls == 1


def test_plain_answer_and_determinism(llm: LlamaCppLLM) -> None:
    msgs = [{"role": "user", "content": "What is 2 + 3? Reply with the number only."}]
    a = llm.complete(msgs, max_tokens=8)  # type: ignore[arg-type]
    b = llm.complete(msgs, max_tokens=8)  # type: ignore[arg-type]
    assert "5" in a.text
    assert a.parsed is None
    assert a.text == b.text  # greedy decoding
    assert 0 < a.usage.completion_tokens <= 8


def test_count_tokens(llm: LlamaCppLLM) -> None:
    n = llm.count_tokens("Graph memory for long documents.")
    assert 3 < n < 20
    assert llm.count_tokens("") == 0
    assert llm.count_tokens("word " * 100) >= 100


def test_prompt_too_long(llm: LlamaCppLLM) -> None:
    with pytest.raises(GemragError, match="context window"):
        llm.complete([{"role": "user", "content": "lorem ipsum " * 3000}], max_tokens=4)
