"""Prompt-building helpers shared by several methods and surfaces: numbered context passages and the one-shot
layout. Changing a text here changes the LLM cache keys of every prompt built with it."""

from __future__ import annotations

import json
from collections.abc import Sequence

from gemrag.models.base import Message


def format_context(texts: Sequence[str]) -> str:
    """Number the context passages ``[1] ...`` in retrieval order."""
    return "\n\n".join(f"[{i + 1}] {t}" for i, t in enumerate(texts))


def one_shot(system: str, instruction: str, example: str, reply: object, real: str) -> list[Message]:
    """A system message, then the worked example as a user turn and its answer as the assistant's turn, then the
    real request (HippoRAG 2's one-shot form, shared by the REMem prompts: small models copy an example written
    into the instructions)."""
    return [
        {"role": "system", "content": f"{system}\n{instruction}"},
        {"role": "user", "content": example},
        {"role": "assistant", "content": json.dumps(reply, ensure_ascii=False)},
        {"role": "user", "content": real},
    ]
