"""RankGPT's listwise rerank of step 1 (Sun et al. 2023, "Is ChatGPT Good at Search? Investigating Large Language
Models as Re-Ranking Agents", EMNLP, section 3.2), in sliding windows, each window's prompt fitted to the LLM's
context window.

* Sliding windows (section 3.2, "Sliding Window Strategy"; the authors' ``rank_gpt.py:sliding_windows``): the top
  ``depth`` candidates are reordered ``window`` at a time, from the back of the list to the front, each window
  ``step`` ranks above the last (RankGPT: window 20, step 10), so a passage can climb ``window - step`` ranks per
  window, from the last rank to the first in one sweep. The last window is clamped to the top of the list, so the
  top is always in one (RankGPT's loop stops before it when ``depth - window`` is not a multiple of ``step``).
  ``depth <= window``: one window, one pass, the prompt of the earlier single-pass rerank.
* The fit (RankGPT's ``create_permutation_instruction``, which cuts every passage to at most 300 words and lowers
  that limit until the prompt fits the model's context): when a window's prompt and its completion do not fit
  ``llm.context_window``, every passage of that window is cut to its first L words, L the most that fits
  (:func:`fitted`). The cut is recorded in the trace (``rerank_fit``) and warned (:class:`RerankFitWarning`); a
  window that fits with no cut is sent unchanged. Before this, a prompt too long failed, a recorded failure only,
  and the base's order was kept without a word.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from gemrag.models.base import LLM, Message
from gemrag.strategies.iterative import passes
from gemrag.strategies.iterative.merge import Step
from gemrag.strategies.iterative.prompts import rerank_prompt
from gemrag.strategies.iterative.steps import Search

WINDOW = 20
"""RankGPT's window: passages per rerank prompt (section 3.2)."""
STEP = 10
"""RankGPT's step: ranks between one window and the next, back to front (section 3.2)."""
MESSAGE_TOKENS = 8
"""Chat-template tokens assumed per message (role markers and separators: ``<|im_start|>user\\n ... <|im_end|>\\n``
is 5 in Qwen's template), and once more for the reply's opening."""


class RerankFitWarning(UserWarning):
    """A rerank window did not fit the LLM's context window: its passages were cut, or the window was skipped."""


def sliding_windows(n: int, window: int = WINDOW, step: int = STEP) -> list[tuple[int, int]]:
    """RankGPT's sliding windows over ``n`` candidates, back to front (module docstring).

    Args:
        n: candidates (>= 0).
        window: passages per window (>= 2).
        step: ranks between consecutive windows (1 <= step < window).

    Returns:
        0-based half-open spans ``(start, end)``, the last candidates' first; the last span starts at 0. One span
        ``(0, n)`` when ``n <= window``; none when ``n = 0``. E.g. ``n = 50``: ``(30, 50), (20, 40), (10, 30),
        (0, 20)``.

    Raises:
        ValueError: ``window`` < 2, or ``step`` not in ``[1, window)``.
    """
    if window < 2 or not 1 <= step < window:
        raise ValueError(f"a rerank window of {window} with step {step}: need window >= 2 and 1 <= step < window")
    spans: list[tuple[int, int]] = []
    end = n
    while end > 0:
        start = max(end - window, 0)
        spans.append((start, end))
        if start == 0:
            break
        end -= step
    return spans


def prompt_tokens(llm: LLM, messages: Sequence[Message]) -> int:
    """Tokens of ``messages`` in ``llm``'s tokenizer, with :data:`MESSAGE_TOKENS` per message and for the reply."""
    return sum(llm.count_tokens(m["content"]) for m in messages) + MESSAGE_TOKENS * (len(messages) + 1)


def _cut(texts: Sequence[str], words: int) -> list[str]:
    return [" ".join(t.split()[:words]) for t in texts]


def fitted(llm: LLM, question: str, texts: Sequence[str]) -> tuple[list[str], int | None] | None:
    """A rerank window's passages as they fit ``llm.context_window`` with the pass's completion limit.

    Returns:
        ``(texts, None)`` unchanged when they fit; ``(cut, L)`` with every passage cut to its first L words, L the
        largest that fits (found by bisection on the prompt's token count); None when not even one word of each
        fits (the question and the instructions take the room).
    """
    room = llm.context_window - passes.rerank_limit(len(texts))

    def fits(candidate: Sequence[str]) -> bool:
        messages = rerank_prompt(question, candidate)
        bound = sum(len(m["content"].encode("utf-8")) for m in messages) + MESSAGE_TOKENS * (len(messages) + 1)
        return bound <= room or prompt_tokens(llm, messages) <= room  # a token is at least one byte

    if fits(texts):
        return list(texts), None
    low, high, best = 1, max(len(t.split()) for t in texts) - 1, 0
    while low <= high:
        middle = (low + high) // 2
        if fits(_cut(texts, middle)):
            best, low = middle, middle + 1
        else:
            high = middle - 1
    return (_cut(texts, best), best) if best else None


def rerank_first(
    search: Search, question: str, step: Step, depth: int, window: int = WINDOW, stride: int = STEP
) -> None:
    """RankGPT (Sun et al. 2023, section 3.2) on step 1: the LLM orders the base's top ``depth`` for ``question`` in
    sliding windows (:func:`sliding_windows`), each fitted to the context window (:func:`fitted`); the rest of the
    list follows in the base's order. One pass per window, none counted against ``max_steps``
    (``search.rerank_calls``); with fewer than 2 candidates no call is made.

    A window whose answer is malformed keeps its order (a recorded failure) and the sweep goes on; a window that
    cannot fit is skipped (a failure, and a warning). The reordered list replaces step 1's hits and the question's
    entry in the per-question retrieval cache (:meth:`~.steps.Search.reuse`), so a later step that retrieves the
    question again (a decomposition's one sub-question, which a one-fact question is) reads the reranked list.

    Trace: ``steps[0]["reranked"]`` (the base's 1-based ranks in the new order, when some window answered),
    ``steps[0]["rerank_windows"]`` (``[[first rank, last rank], ...]``, with more than one window) and
    ``rerank_fit`` (``[{"window", "words"}]`` of the windows cut to fit).

    Warns:
        RerankFitWarning: a window's passages were cut, or the window skipped, to fit the context window.
    """
    candidates = step.hits[:depth]
    if len(candidates) < 2:
        return
    texts = search.texts(candidates)
    order = list(range(len(candidates)))
    spans = sliding_windows(len(candidates), window, stride)
    llm = search.ctx.get_llm()
    answered = False
    for start, end in spans:
        ids = order[start:end]
        shown = [start + 1, end]
        fit = fitted(llm, question, [texts[i] for i in ids])
        if fit is None:
            message = f"rerank window {shown}: not even one word of each passage fits the context window"
            search.fail("rerank", 1, message)
            warnings.warn(
                RerankFitWarning(f"{message} ({llm.context_window} tokens); it keeps its order"), stacklevel=2
            )
            continue
        window_texts, words = fit
        if words is not None:
            search.trace.setdefault("rerank_fit", []).append({"window": shown, "words": words})
            warnings.warn(
                RerankFitWarning(
                    f"rerank window {shown}: {len(ids)} passages do not fit the context window "
                    f"({llm.context_window} tokens); each was cut to its first {words} words (RankGPT's rule). "
                    "A smaller [iterative] rerank_window or a larger llm.n_ctx keeps them whole"
                ),
                stacklevel=2,
            )
        search.rerank_calls += 1
        permutation, error = passes.rerank(search.ctx, question, window_texts, search.attempts)
        if permutation is None:
            search.fail("rerank", 1, error)
            continue
        order[start:end] = [ids[i] for i in permutation]
        answered = True
    if len(spans) > 1:
        step.info["rerank_windows"] = [[s + 1, e] for s, e in spans]
    if not answered:
        return
    step.hits = [candidates[i] for i in order] + step.hits[len(candidates) :]
    step.info["reranked"] = [i + 1 for i in order]
    search.reuse(question, step.hits)
