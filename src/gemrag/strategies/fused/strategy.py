"""``fused``: a strategy over strategies — each part retrieves, and the ranked lists are fused into one context.

Hybrid retrieval as the IR literature does it: every part strategy (``[fused] parts``, default dense + BM25)
retrieves its best nodes for the question (its top ``budget``: the window of the hybrid searches of Elasticsearch's
RRF, whose ``window_size`` defaults to the request's ``size``, and Upstash's ``$rrf``, whose ``window`` defaults to
its ``LIMIT``; or a fixed ``depth``); the lists are fused by CombSUM of min-max normalized scores
(:func:`~gemrag.strategies.platform.fusion.minmax_score_fusion`, the default, which measured better) or by
reciprocal-rank fusion (Cormack et al. 2009, :func:`~gemrag.strategies.platform.fusion.reciprocal_rank_fusion`); a
node two parts both found is one item (deduplicated by its store node id, so a passage — a chunk — appears once
whichever parts found it), and the best ``budget`` items are the context. Parts are reached through the registry
(:func:`gemrag.strategies.base.get_strategy`) with their own configuration sections, so ``fused`` imports no other
method and fuses any registered strategy, a user's own too.

Nodes that are not passages — GEM's and RAPTOR's summary nodes, REMem's gists, HLGraphRAG's relation sentences —
are placed by ``summaries``: ``"budget"`` (default) ranks them with the passages and counts them against the budget;
``"beside"`` fills the budget with passages and adds, after them, the non-passage nodes the parts put in their own
top ``budget`` (so a hit list may be longer than ``budget``); ``"drop"`` keeps passages only.

Building ``fused`` builds each part (cached model answers make a part already built cost no LLM call) and records
the chunks it covers, so ``gemrag info`` tracks it like any strategy. Settings: :class:`FusedConfig`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gemrag.strategies.base import Strategy, StrategyContext, register
from gemrag.strategies.platform.composite import PASSAGE_KINDS, NamedStrategies, hit_key, unique_hits
from gemrag.strategies.platform.fusion import minmax_score_fusion, reciprocal_rank_fusion
from gemrag.strategies.platform.planning import PlanWork, StrategyPlan
from gemrag.types import Hit


class FusedConfig(BaseModel):
    """The ``[fused]`` configuration section.

    Attributes:
        parts: the strategies fused, by registered name (at least one, no repeats, not ``fused``); default
            ``["dense", "bm25"]`` (no LLM). Each part uses its own section (``[remem]``, ``[gem]``, ...).
        method: ``"score"`` (CombSUM of min-max normalized scores, default: on MuSiQue and HotpotQA, 100 questions
            each, dense + BM25, it reached R@5 66.2 and 85.0 against RRF's 62.2 and 82.5; docs/results.md) or
            ``"rrf"`` (reciprocal-rank fusion).
        k: RRF's constant (> 0), default 60 (Cormack et al. 2009, section 2).
        weights: one weight >= 0 per part (default all 1).
        depth: hits asked of each part before fusing (nodes, >= 1; a part is always asked for at least
            ``budget``); default None: exactly ``budget``, so a node counts only for the parts that put it in their
            own top ``budget``. Measured (docs/results.md "fused: the window"), dense + BM25, score fusion,
            Recall@5 against the best part: MuSiQue 30 q (T = 256) 73.3 against dense's 76.9 (p 0.33), where depth
            20 (the old default; there each question's whole 20-paragraph corpus) gave 67.2 (p 0.04); MuSiQue 100 q
            67.5 against 64.8 (20: 66.2); HotpotQA 100 q 85.5 against bm25's 82.5 (20: 85.0).
        summaries: where non-passage hits go: ``"budget"`` (ranked with the passages, counted against the budget),
            ``"beside"`` (after the ``budget`` passages, those in some part's top ``budget``) or ``"drop"``.
            ``"drop"`` removes a part's non-passage hits before score fusion's min-max normalization and
            ``"beside"`` after it, so their passages can rank differently: a part's minimum (or maximum) may be a
            summary's score (GEM's best-first hits are not in score order; on MuSiQue, 17 q, a summary held gem's
            lowest or highest score of its top 5 in 4 of the 14 questions whose top 5 had one). Measured on
            MuSiQue's first 30 q, dense + gem, Recall@5: ``"beside"`` 74.7, ``"drop"`` 75.3, ``"budget"`` 71.1
            (−5.8 against dense, p 0.006), dense 76.9 (docs/results.md).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    parts: list[str] = Field(default_factory=lambda: ["dense", "bm25"], min_length=1)
    method: Literal["rrf", "score"] = "score"
    k: float = Field(60.0, gt=0)
    weights: list[float] | None = None
    depth: int | None = Field(None, ge=1, le=1000)
    summaries: Literal["budget", "beside", "drop"] = "budget"

    @field_validator("parts")
    @classmethod
    def _distinct(cls, parts: list[str]) -> list[str]:
        if len(set(parts)) != len(parts):
            raise ValueError("a part is named twice")
        if "fused" in parts:
            raise ValueError("fused cannot be its own part")
        return parts

    @model_validator(mode="after")
    def _weights_match(self) -> FusedConfig:
        if self.weights is not None and (len(self.weights) != len(self.parts) or min(self.weights) < 0):
            raise ValueError("weights needs one number >= 0 per part")
        return self


@register("fused")
class FusedStrategy:
    """Fuse the ranked hits of several strategies (score or reciprocal-rank fusion), deduplicated by node.

    Args:
        config: the ``[fused]`` section (default: dense + BM25, min-max score fusion).
    """

    name = "fused"
    config_model = FusedConfig

    def __init__(self, config: FusedConfig | None = None) -> None:
        self.config = config or FusedConfig()
        self._parts = NamedStrategies(self.config.parts, "[fused] parts")

    @property
    def nested(self) -> bool:
        """Whether the first k of a K-node retrieval are the k-node retrieval (k < K): True with a fixed
        ``depth`` (for K up to it). With the default window (each part's top ``budget``) a larger budget lets more
        of each part's list into the fusion. ``gemrag eval`` reads Recall@k from one ranking either way
        (:func:`gemrag.eval.metrics.first_passages`)."""
        return self.config.depth is not None

    def parts(self, ctx: StrategyContext) -> list[Strategy]:
        """The part strategies, constructed once with their sections of ``ctx.config``.

        Raises:
            ConfigError: a part names no registered strategy, or its section is invalid.
        """
        return self._parts.get(ctx)

    def plan(self, ctx: StrategyContext, work: PlanWork) -> StrategyPlan:
        """What building now would cost: every part's plan, in build order (``fused`` calls no LLM itself).

        Raises:
            ConfigError: a part is unknown.
        """
        return self._parts.plan(ctx, work, self.name)

    def build(self, ctx: StrategyContext) -> None:
        """Build every part in order (each publishes its own generation); ``fused`` keeps no arrays of its own.

        Raises:
            ConfigError: a part is unknown. Whatever a part's build raises (e.g. MemoryNotIndexedError).
        """
        self._parts.build(ctx)

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        """The fused context for ``question``.

        Returns:
            At most ``budget`` hits best first (with ``summaries="beside"``: ``budget`` passages, then the
            non-passage hits of the parts' own top ``budget``); each hit is the first part's hit for that node with
            ``score`` = its fused score (RRF: sum of ``w / (k + rank)``; score fusion: sum of weighted min-max
            scores), ``rank`` renumbered and ``meta["fused"]`` = ``{part: 1-based rank}`` of the parts that found it.

        Raises:
            MemoryNotIndexedError: a part was not built. ConfigError: a part is unknown.
        """
        depth = budget if self.config.depth is None else max(self.config.depth, budget)
        lists: list[list[Hit]] = []
        for part in self.parts(ctx):
            hits = part.retrieve(ctx, question, depth)
            if self.config.summaries == "drop":
                hits = [h for h in hits if h.kind in PASSAGE_KINDS]
            lists.append(unique_hits(hits))
        rankings = [[hit_key(h) for h in hits] for hits in lists]
        if self.config.method == "rrf":
            fused = reciprocal_rank_fusion(rankings, self.config.k, self.config.weights)
        else:
            fused = minmax_score_fusion(rankings, [[h.score for h in hits] for hits in lists], self.config.weights)
        found: dict[tuple[str, int], Hit] = {}
        ranks: dict[tuple[str, int], dict[str, int]] = {}
        for name, hits in zip(self.config.parts, lists, strict=True):
            for r, h in enumerate(hits, start=1):
                found.setdefault(hit_key(h), h)
                ranks.setdefault(hit_key(h), {})[name] = r
        ordered = fused
        if self.config.summaries == "beside":
            passages = [(k, s) for k, s in ordered if k[0] in PASSAGE_KINDS][:budget]
            near = {hit_key(h) for hits in lists for h in hits[:budget] if h.kind not in PASSAGE_KINDS}
            chosen = passages + [(k, s) for k, s in ordered if k in near]
        else:
            chosen = ordered[:budget]
        out = []
        for rank, (key, score) in enumerate(chosen):
            h = found[key]
            out.append(Hit(h.node_id, h.kind, float(score), h.text, rank, {**h.meta, "fused": ranks[key]}))
        return out

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        """The parts and the fusion settings, with each part's own report."""
        return {
            "parts": list(self.config.parts),
            "method": self.config.method,
            "k": self.config.k,
            "summaries": self.config.summaries,
            "part_reports": {p.name: p.report(ctx) for p in self.parts(ctx)},
        }
