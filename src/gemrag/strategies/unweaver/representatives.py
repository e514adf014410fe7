"""UnWeaver's class representatives (UnWeaver paper, section 2, eq. after footnote 3, and footnote 4; Appendix A
eq. 4): a class's name and the concatenation of its members' descriptions in chunk order, the descriptions
shortened by the LLM when they exceed a length threshold, truncated when that fails.

The representative text embedded for a class is ``"<name>: <descriptions>"``. Identical descriptions (the same
sentence extracted from two chunks) are kept once. Shortening is one free-text pass of the extraction pipeline
(:func:`gemrag.strategies.platform.extraction.run_extraction`: batched, every answer in the LLM cache, so a rebuild
repeats
no call); a class whose shortening fails, or whose shortened text is still too long, gets its descriptions cut at
the threshold (at a word boundary when there is one), and the fallback is recorded: a ``failures`` row of phase
:data:`SHORTEN_PHASE` naming the class, and ``"truncated"`` in :attr:`Representative.shortened`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from gemrag.errors import GemragError
from gemrag.models.batch import CompletionRequest
from gemrag.store import NodeRecord
from gemrag.strategies.base import StrategyContext
from gemrag.strategies.platform.extraction import Extraction, run_extraction
from gemrag.strategies.platform.planning import PassPlan, PlanWork, estimate_pass
from gemrag.strategies.unweaver.entity_classes import EntityClasses, equivalence_classes
from gemrag.strategies.unweaver.prompts import shorten_prompt

SHORTEN_PHASE = "index/unweaver/shorten"
"""The ``failures`` phase of a class whose descriptions had to be truncated."""


@dataclass(frozen=True)
class Representative:
    """One class's representative.

    Attributes:
        name: the class's display name. description: its (possibly shortened) concatenated descriptions.
        shortened: None (short enough), ``"llm"`` (shortened by the LLM) or ``"truncated"`` (the fallback).
    """

    name: str
    description: str
    shortened: Literal["llm", "truncated"] | None = None

    @property
    def text(self) -> str:
        """The text embedded for the class: ``"name: description"`` (the name alone without description)."""
        return f"{self.name}: {self.description}" if self.description else self.name


def concatenate(classes: EntityClasses, descriptions: Sequence[Sequence[str]]) -> list[str]:
    """Each class's members' descriptions joined by spaces in chunk order, exact repeats kept once (Appendix A eq.
    4: the description columns selected by the class).

    Args:
        classes: the classes. descriptions: per chunk position, the descriptions of its entities in extraction
            order (aligned with the names the classes were built from).
    """
    out = []
    for members in classes.members:
        parts = [" ".join(descriptions[i][k].split()) for i, k in members]
        out.append(" ".join(dict.fromkeys(p for p in parts if p)))
    return out


def truncate(text: str, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` characters, at the last space when one lies in the second half."""
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    space = cut.rfind(" ")
    return cut[:space] if space > max_chars // 2 else cut


def representatives(
    ctx: StrategyContext,
    classes: EntityClasses,
    descriptions: Sequence[Sequence[str]],
    *,
    max_chars: int,
    shorten_tokens: int,
) -> list[Representative]:
    """The representatives of every class, shortening the long ones with the LLM (module docstring).

    Args:
        ctx: the strategy context (its LLM is loaded only if some class is too long).
        classes: the classes. descriptions: per chunk position, its entities' descriptions.
        max_chars: the length threshold of a class's concatenated descriptions (characters, >= 1).
        shorten_tokens: completion limit of one shortening call (tokens).

    Raises:
        GemragError: a fatal model error.
    """
    texts = concatenate(classes, descriptions)
    result: list[Representative] = [Representative(n, t) for n, t in zip(classes.names, texts, strict=True)]
    long = [j for j, t in enumerate(texts) if len(t) > max_chars]

    def save(j: int, text: str) -> None:
        if len(text) > max_chars:
            fail(j, GemragError(f"the shortened description has {len(text)} > {max_chars} characters"))
        else:
            result[j] = Representative(classes.names[j], text, "llm")

    def fail(j: int, error: GemragError) -> None:
        result[j] = Representative(classes.names[j], truncate(texts[j], max_chars), "truncated")
        ctx.store.record_failure(SHORTEN_PHASE, None, f"class {classes.names[j]!r}: truncated: {error}")

    if long:
        extraction: Extraction[int] = Extraction(
            "UnWeaver descriptions",
            lambda j: shorten_prompt(classes.names[j], texts[j], max_chars),
            max_tokens=shorten_tokens,
            attempts=1,
        )
        run_extraction(ctx, long, extraction, save=save, fail=fail, in_order=True)
    return result


def reused_representatives(
    classes: EntityClasses,
    descriptions: Sequence[Sequence[str]],
    *,
    max_chars: int,
    known: Mapping[tuple[str, str], Representative],
) -> list[Representative | None]:
    """The representatives of every class with no LLM call (a removal: DESIGN.md, "Forgetting"): a class whose
    concatenated descriptions fit in ``max_chars`` gets them, as :func:`representatives` gives it; a longer one the
    representative ``known`` holds for its ``(name, concatenated descriptions)`` — the shortening the LLM wrote for
    that same input, unchanged by the removal —, else None (its shortening must be asked for: the next build does).

    Args:
        classes: the classes. descriptions: per chunk position, its entities' descriptions.
        max_chars: the length threshold (characters). known: ``(name, concatenated descriptions) -> representative``.
    """
    texts = concatenate(classes, descriptions)
    return [
        Representative(n, t) if len(t) <= max_chars else known.get((n, t))
        for n, t in zip(classes.names, texts, strict=True)
    ]


def published_shortenings(
    names: Sequence[Sequence[str]],
    descriptions: Sequence[Sequence[str]],
    nodes: Sequence[NodeRecord],
    *,
    max_chars: int,
) -> dict[tuple[str, str], Representative]:
    """The LLM-shortened representatives of a published build, by ``(name, concatenated descriptions)``: what
    :func:`reused_representatives` reuses for a class the removal left unchanged.

    Args:
        names, descriptions: per chunk of the build (in its order), its entities' names and descriptions.
        nodes: the build's class nodes (meta ``key``, ``representative``, ``shortened``).
        max_chars: the length threshold (characters); shorter classes need no shortening and are not listed.
    """
    classes = equivalence_classes(names)
    by_key = {n.meta.get("key"): n for n in nodes}
    known = {}
    for key, name, text in zip(classes.keys, classes.names, concatenate(classes, descriptions), strict=True):
        node = by_key.get(key)
        if node is None or len(text) <= max_chars or node.text != name:
            continue
        shown = str(node.meta.get("representative", name))
        description = shown[len(name) + 2 :] if shown.startswith(f"{name}: ") else ""
        known[(name, text)] = Representative(name, description, node.meta.get("shortened"))
    return known


SHORTEN_FILL = 0.6
"""Typical share of ``shorten_tokens`` a shortening uses (an assumption: no measured run had a class long enough)."""


def plan_shortenings(
    work: PlanWork,
    classes: EntityClasses,
    descriptions: Sequence[Sequence[str]],
    *,
    max_chars: int,
    shorten_tokens: int,
) -> PassPlan:
    """The plan of :func:`representatives`' shortening pass over the classes of the entities known so far (stored
    and cached extractions): one call per class whose descriptions exceed ``max_chars``, on its real prompt, looked
    up in the LLM cache."""
    texts = concatenate(classes, descriptions)
    long = [j for j, t in enumerate(texts) if len(t) > max_chars]
    requests = [
        CompletionRequest(shorten_prompt(classes.names[j], texts[j], max_chars), None, shorten_tokens) for j in long
    ]
    return estimate_pass(work, "UnWeaver descriptions", requests, typical_completion=SHORTEN_FILL * shorten_tokens)[0]
