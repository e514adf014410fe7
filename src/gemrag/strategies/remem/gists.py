"""The gist pass: one LLM call per session window, stored as artefacts (REMem seed
``remem-retrieval-strategies.txt``, "Episodic Gist Strategy"; prompt in :mod:`gemrag.strategies.remem.gist_prompts`).

Windows (:func:`gemrag.strategies.platform.conversation.session_windows`) may span chunks, but artefacts belong to one
node: a window's result is stored under the chunk its first turn came from (:attr:`Window.start_chunk`), as one
:class:`WindowGists` artefact per chunk holding the results of every window starting there, in order. The
artefact version includes the window size (``gist-v2/w12``), so changing ``gist_window`` recomputes the gists.

The pass runs through the extraction pipeline (:func:`gemrag.strategies.platform.extraction.run_extraction`: batched,
every answer cached before use, repair retries). A chunk's artefact is committed as soon as all of its windows
have answers, so an interrupted build resumes at chunk granularity (the answers of a chunk's finished windows
are in the LLM cache, so redoing them costs no model call). A window whose answer stays invalid makes one
``failures`` row for its start chunk (phase ``index/remem_gist/gists@<version>``) and the chunk gets no artefact
this build: its turns are still verbatim nodes, without gist or facts; later builds retry such a chunk up to
:data:`~gemrag.strategies.platform.extraction.RETRIES` times with new attempt numbers (new temperatures and seeds) for
all
its windows.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, Field

from gemrag.errors import GemragError
from gemrag.strategies.base import StrategyContext
from gemrag.strategies.platform.conversation import Window
from gemrag.strategies.platform.extraction import RETRIES, Extraction, ExtractionReport, failed_tries, run_extraction
from gemrag.strategies.platform.planning import PassPlan, PlanWork, estimate_pass
from gemrag.strategies.remem.gist_prompts import (
    GIST_VERSION,
    MAX_FACTS,
    MAX_GIST_CHARS,
    GistAnswer,
    gist_prompt,
    gist_schema,
)

KIND = "gists"
"""Artefact kind of the gist pass."""
ATTEMPTS = 3
"""Structured-output attempts per window per build."""
GIST_MAX_TOKENS = MAX_GIST_CHARS // 3 + MAX_FACTS * 40
"""Completion limit of one window (tokens): the gist (about a third as many tokens as characters) and the facts."""


class WindowGists(BaseModel):
    """The artefact of one chunk: the gist answers of the windows starting in it, in window order."""

    windows: list[GistAnswer] = Field(default_factory=list)


def gist_version(window_size: int) -> str:
    """The artefact version of the gists of windows of at most ``window_size`` turns."""
    return f"{GIST_VERSION}/w{window_size}"


def gist_extraction() -> Extraction[Window]:
    """The gist pass over windows (:func:`~gemrag.strategies.remem.gist_prompts.gist_prompt`)."""
    return Extraction(
        "REMem gists",
        lambda w: gist_prompt(w.date, w.iso_date, w.text),
        GistAnswer,
        schema=gist_schema(),
        max_tokens=GIST_MAX_TOKENS,
        attempts=ATTEMPTS,
    )


def run_gists(
    ctx: StrategyContext, owner: str, windows: Sequence[Window], window_size: int
) -> tuple[list[GistAnswer | None], ExtractionReport]:
    """The gist of every window: computed for the start chunks without an artefact, then read from the store.

    Args:
        ctx: the strategy context (its LLM is loaded only when some window needs a call).
        owner: the strategy owning the artefacts (``"remem_gist"``).
        windows: every window of the memory, documents in order.
        window_size: the ``gist_window`` the windows were made with (part of the artefact version).

    Returns:
        ``(answers, report)``: ``answers[i]`` is window i's :class:`GistAnswer`, or None when its chunk has no
        artefact (failed); the report counts windows.

    Raises:
        GemragError: a fatal one (the artefacts committed before it stay).
    """
    version = gist_version(window_size)
    phase = f"index/{owner}/{KIND}@{version}"
    groups: dict[int, list[int]] = defaultdict(list)
    for i, w in enumerate(windows):
        groups[w.start_chunk].append(i)
    missing = set(ctx.store.missing_artifacts(owner, KIND, version, list(groups)))
    tries = failed_tries(ctx, phase) if missing else {}
    todo_chunks = {c for c in missing if tries.get(c, 0) <= RETRIES}
    todo = [windows[i] for c in groups if c in todo_chunks for i in groups[c]]
    position = {id(windows[i]): (c, k) for c, members in groups.items() for k, i in enumerate(members)}
    answers: dict[int, dict[int, GistAnswer]] = defaultdict(dict)
    failed: set[int] = set()

    def save(window: Window, value: GistAnswer) -> None:
        chunk, k = position[id(window)]
        answers[chunk][k] = value
        if chunk not in failed and len(answers[chunk]) == len(groups[chunk]):
            ordered = [answers[chunk][j] for j in range(len(groups[chunk]))]
            ctx.store.put_artifact(owner, KIND, chunk, WindowGists(windows=ordered), version)

    def fail(window: Window, exc: GemragError) -> None:
        chunk, k = position[id(window)]
        failed.add(chunk)
        ctx.store.record_failure(phase, chunk, f"window {k} of chunk {chunk}: {exc}")

    def first_attempt(window: Window) -> int:
        return tries.get(window.start_chunk, 0) * ATTEMPTS

    numbered = dataclasses.replace(gist_extraction(), first_attempt=first_attempt)
    report = run_extraction(ctx, todo, numbered, save=save, fail=fail)
    stored = ctx.store.artifacts(owner, KIND, WindowGists, version, list(groups))
    out: list[GistAnswer | None] = [None] * len(windows)
    for chunk, members in groups.items():
        art = stored.get(chunk)
        if art is not None and len(art.windows) == len(members):
            for k, i in enumerate(members):
                out[i] = art.windows[k]
    return out, report


GIST_TOKENS = 434
"""Typical completion tokens of one window's gist answer: the 0.5B's LoCoMo gist build wrote 11,707 completion tokens
in 27 calls (docs/results.md, remem_gist on conv-26)."""


def plan_gists(
    ctx: StrategyContext, work: PlanWork, owner: str, windows: Sequence[Window], window_size: int
) -> PassPlan:
    """The plan of :func:`run_gists` over ``windows`` (every window of :attr:`PlanWork.chunks`): one call per window
    whose start chunk lacks its artefact (chunks not stored yet included; failed ones while retried), on the real
    prompt, looked up in the LLM cache."""
    version = gist_version(window_size)
    starts = list(dict.fromkeys(w.start_chunk for w in windows))
    stored = [c for c in starts if c not in work.virtual]
    missing = set(ctx.store.missing_artifacts(owner, KIND, version, stored)) if stored else set()
    tries = failed_tries(ctx, f"index/{owner}/{KIND}@{version}") if missing else {}
    todo = {c for c in missing if tries.get(c, 0) <= RETRIES} | {c for c in starts if c in work.virtual}
    spec = gist_extraction()
    requests = [spec.first_request(w, tries.get(w.start_chunk, 0) * ATTEMPTS) for w in windows if w.start_chunk in todo]
    return estimate_pass(work, spec.description, requests, typical_completion=GIST_TOKENS)[0]
