"""The acceptance test's LLM judge: choke / inaccurate / correct (Zeng, "HLGraphRAG", section 4, Figure 4.1).

The judge asks the paper's prompt (:func:`gemrag.eval.judging.prompts.judge_prompt`) for a structured verdict.
A malformed answer is retried with the repair conversation (:func:`gemrag.models.structured.complete_structured`,
3 attempts by default) and then recorded as *unjudged* (verdict ``None`` with the error): it never stops a run. A
fatal backend error (:func:`gemrag.errors.is_fatal`, e.g. the model process died) is raised.

Any OpenAI-compatible endpoint can judge (``--judge-base-url``, ``--judge-model``); by default the evaluation's own
LLM does (the embedded model), which the paper warns against (its judge was Gemini): measure its agreement with
hand labels first (``benchmarks/judge_agreement.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from gemrag.config import Config, LLMSettings
from gemrag.errors import GemragError, is_fatal
from gemrag.eval.judging.prompts import Verdict, judge_prompt, verdict_schema
from gemrag.models.base import LLM
from gemrag.models.structured import complete_structured

__all__ = ["Judge", "Judgement", "judge_settings"]

#: Completion limit of one verdict (tokens): ``{"verdict": "inaccurate"}`` is about 8.
JUDGE_MAX_TOKENS = 24


@dataclass(frozen=True)
class Judgement:
    """One verdict: ``verdict`` is ``"choke"``, ``"inaccurate"``, ``"correct"`` or None (unjudged: ``error`` says
    why, e.g. every attempt was malformed)."""

    verdict: str | None
    error: str | None = None


class Judge:
    """Classifies a generated reply against the real one.

    Args:
        llm: the judging model (usually cached and metered by the memory it judges in).
        attempts: attempts per verdict before it is recorded as unjudged (>= 1).
    """

    def __init__(self, llm: LLM, attempts: int = 3) -> None:
        self.llm = llm
        self.attempts = max(1, attempts)

    def classify(self, content: str, dialogue1: str, candidate: str, correct: str) -> Judgement:
        """Judge ``candidate`` (the generated reply to ``dialogue1``) against ``correct`` (the real reply), given
        ``content`` (what the replying speaker knew).

        Returns:
            :class:`Judgement`; greedy decoding (temperature 0) on the first attempt, so a verdict is
            reproducible and cached.

        Raises:
            GemragError: a fatal backend error only (the others give an unjudged :class:`Judgement`).
        """
        messages = judge_prompt(content, dialogue1, candidate, correct)
        try:
            answer = complete_structured(
                self.llm,
                messages,
                Verdict,
                schema=verdict_schema(),
                max_tokens=JUDGE_MAX_TOKENS,
                attempts=self.attempts,
            )
        except GemragError as exc:
            if is_fatal(exc):
                raise
            return Judgement(None, f"{type(exc).__name__}: {exc}"[:300])
        return Judgement(answer.verdict)


def judge_settings(config: Config, model: str | None, base_url: str | None) -> LLMSettings | None:
    """The judge's model settings: ``base_url`` given -> an OpenAI-compatible endpoint serving ``model`` (API key
    from ``$OPENAI_API_KEY``, else the evaluation LLM's key); only ``model`` -> that embedded llama.cpp model (a
    known short name or a ``.gguf`` path); neither -> None, the evaluation's own LLM judges.

    Raises:
        ConfigError: ``base_url`` without ``model`` (raised when the backend is built).
    """
    if model is None and base_url is None:
        return None
    if base_url is not None:
        key = os.environ.get("OPENAI_API_KEY") or config.llm.api_key
        return LLMSettings(provider="openai", model=model or "", base_url=base_url, api_key=key)
    return config.llm.model_copy(update={"provider": "llama_cpp", "model": model})
