"""GEM-RAG's cost plan (:mod:`gemrag.strategies.platform.planning`): the LLM passes of its build (section III.B.1).

1. utility questions: one call per chunk whose questions are pending (new chunks, and failed ones still retried),
   exact: the real prompt on the chunk's text, looked up in the LLM cache;
2. eigentheme summaries: k calls (``gem.eigen``) when the chunks changed since the published build, each over e member
   passages (``gem.eigen_top``); an upper bound, since a theme whose members did not change is answered by the cache
   and the members are only known after the graph is built (its prompt is a stand-in of e of the memory's chunks);
3. utility questions of the k new summary nodes (a stand-in of a summary's length).
"""

from __future__ import annotations

from gemrag.models.batch import CompletionRequest
from gemrag.strategies.base import StrategyContext
from gemrag.strategies.gem.prompts import summary_prompt
from gemrag.strategies.gem.settings import GemConfig
from gemrag.strategies.gem.summaries import MIN_NODES
from gemrag.strategies.gem.utility_questions import (
    ATTEMPTS,
    QUESTION_FAILED,
    failed_tries,
    nodes_needing_questions,
    questions_extraction,
)
from gemrag.strategies.platform.planning import PassPlan, PlanWork, StrategyPlan, estimate_pass

QUESTION_TOKENS = 14
"""Typical completion tokens per utility question (the JSON list included): the 1.5B wrote 65-76 tokens per call at
m = 5 on QuALITY's stories (docs/results.md, "Build cost by story")."""
TOKENS_PER_WORD = 1.3
"""Typical tokens per word of a summary (English prose in the Qwen2.5 tokenizer)."""


def question_tokens(m: int) -> float:
    """Typical completion tokens of one utility-question call asking for ``m`` questions."""
    return QUESTION_TOKENS * m + 4


def plan_gem(ctx: StrategyContext, work: PlanWork, cfg: GemConfig, *, titles: bool, reset: bool) -> StrategyPlan:
    """GEM's plan (module docstring).

    Args:
        ctx: the strategy context. work: the chunks the build would see. cfg: GEM's settings.
        titles: whether its utility questions read ``title\\ntext``.
        reset: the stored questions were written for another m or input, so every chunk gets new ones.
    """
    new = work.new_chunks(ctx, "gem")
    plan = StrategyPlan("gem", len(new))
    m = cfg.questions
    if m > 0:
        if reset:
            todo = [(c, 0) for c in work.chunks]
        else:
            stored = nodes_needing_questions(ctx, work.stored())
            failed = any(c.questions_done == QUESTION_FAILED for c in stored)
            tries = failed_tries(ctx) if failed else {}
            attempt = {
                c.id: tries.get(c.id, 0) * ATTEMPTS if c.questions_done == QUESTION_FAILED else 0 for c in stored
            }
            todo = [(c, attempt[c.id]) for c in stored] + [(c, 0) for c in work.chunks if c.id in work.virtual]
        spec = questions_extraction(m)
        requests = [spec.first_request(work.text_of(c, titles), a) for c, a in todo]
        plan.passes.append(estimate_pass(work, spec.description, requests, typical_completion=question_tokens(m))[0])
    n = len(work.chunks)
    k = min(cfg.eigen, n)
    if k and n >= MIN_NODES and work.changed(ctx, "gem"):
        plan.passes += _summaries(work, cfg, k)
        plan.notes.append(
            f"the {k} eigentheme summaries are an upper bound: a theme whose members did not change is answered by the "
            "LLM cache"
        )
    return plan


def _summaries(work: PlanWork, cfg: GemConfig, k: int) -> list[PassPlan]:
    """The eigentheme summaries and their nodes' utility questions, on stand-ins (their members are not known yet)."""
    chunks = work.chunks
    e = min(cfg.eigen_top, len(chunks))
    k = 1 if e == len(chunks) else k  # every theme holds every chunk: one summary prompt, the others cached
    step = max(len(chunks) // e, 1)
    members = [chunks[i].text for i in range(0, step * e, step)][:e]
    summary = CompletionRequest(summary_prompt(members, cfg.summary_words), None, int(cfg.summary_words * 2))
    typical = cfg.summary_words * TOKENS_PER_WORD
    note = f"stand-in: {e} of the memory's chunks as members"
    passes = [
        estimate_pass(work, "eigentheme summaries", [summary] * k, typical_completion=typical, exact=False, note=note)[
            0
        ]
    ]
    if cfg.questions > 0:
        words = " ".join(" ".join(members).split()[: int(cfg.summary_words)])
        request = questions_extraction(cfg.questions).first_request(words)
        typical = question_tokens(cfg.questions)
        note = "stand-in: a summary-length text"
        passes.append(
            estimate_pass(
                work,
                "summary nodes' utility questions",
                [request] * k,
                typical_completion=typical,
                exact=False,
                note=note,
            )[0]
        )
    return passes
