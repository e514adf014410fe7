"""The per-chunk extraction prompt puts the chunk last, so every call shares the instructions as a prefix
(llama.cpp keeps that prefix in its KV cache: issue 9, point 2)."""

from __future__ import annotations

import os

from gemrag.strategies.gem.prompts import utility_questions_prompt


def _flat(chunk: str, m: int = 5) -> str:
    return "\n".join(f"<{msg['role']}>{msg['content']}" for msg in utility_questions_prompt(chunk, m))


def test_chunk_comes_last() -> None:
    chunk = "Korvin was taught the language every night by a guard."
    messages = utility_questions_prompt(chunk, 3)
    assert messages[-1]["role"] == "user"
    assert messages[-1]["content"].endswith(f'\n"""\n{chunk}\n"""')
    assert "Write 3 different questions" in messages[-1]["content"]


def test_two_chunks_share_everything_before_the_chunk() -> None:
    a, b = _flat("The river rose in March."), _flat("Didyak introduced himself at dawn.")
    shared = len(os.path.commonprefix([a, b]))
    assert a[:shared].endswith('Passage:\n"""\n')
    assert shared > 0.9 * (len(a) - len('The river rose in March.\n"""'))
