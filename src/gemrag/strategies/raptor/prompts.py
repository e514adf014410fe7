"""RAPTOR's cluster-summary prompt: the baseline's own prompt (Sarthi et al. 2024; ``raptor/SummarizationModels.py``
of the authors' code)."""

from __future__ import annotations

from collections.abc import Sequence

from gemrag.models.base import Message


def raptor_summary_prompt(passages: Sequence[str]) -> list[Message]:
    """Messages asking for RAPTOR's summary of one cluster of nodes (Sarthi et al. 2024).

    As in the authors' code, the node texts are flattened to one line each and separated by blank lines;
    the length limit is the completion's ``max_tokens`` (RAPTOR: 100), not the prompt.
    """
    context = "".join(" ".join(p.splitlines()) + "\n\n" for p in passages)
    return [
        {"role": "system", "content": "You are a helpful assistant."},
        {
            "role": "user",
            "content": f"Write a summary of the following, including as many key details as possible: {context}:",
        },
    ]
