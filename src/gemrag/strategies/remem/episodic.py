"""``remem_gist``: REMem's ``extract_method="episodic_gist"`` strategy, gists and verbatim turns searched by an
agent (seed ``remem-retrieval-strategies.txt``, "Episodic Gist Strategy", "Agent Configuration", "Return Chunk
Type").

Registered as ``remem_gist`` (not ``remem-gist``): a strategy's name is its configuration section, and
``GEMRAG_<SECTION>__<KEY>`` environment names cannot hold a dash.

Build (offline):
  1. verbatim nodes: every conversation turn (:mod:`gemrag.strategies.platform.conversation`), kind ``verbatim``, text
     ``"[<date>] <speaker>: <text>"``, meta ``speaker``, ``date``, ``iso_date``, ``session`` and ``members`` (its
     chunks, for evidence recall), sources its chunk(s);
  2. gists: one LLM call per session window of at most ``gist_window`` turns (:mod:`gemrag.strategies.remem.gists`,
     artefacts, resumable), a ``gist`` node per window (meta ``members``: its turns) and a ``fact`` node per timed
     fact (meta ``triple``, ``time`` as stated, ``session_date``), sources the window's chunks, so deleting a
     document deletes its turns, gists and facts;
  3. vectors of every turn, gist and fact, published as one generation with the links between them.
  A rebuild costs no LLM call (the artefacts are in the store); a fact's date for ``fact_retrieve`` is its stated
  time, else its session's date.
Retrieve (online): the agent (:mod:`gemrag.strategies.remem.agent`) with the tools ``semantic_retrieve`` (dense over
gists or verbatim), ``lexical_retrieve`` (BM25 with bm25s over the verbatim turns, indexed when the generation is
loaded), ``fact_retrieve`` (dense over facts, optionally within dates) and ``output_answer``; the nodes it
retrieved are returned as ``return_chunk`` hits (a gist stands for its turns, a turn or fact for its gist).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from itertools import groupby
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from gemrag.store import NodeRecord, Published
from gemrag.store.publish import Publication
from gemrag.strategies.base import StrategyContext, register
from gemrag.strategies.baselines.bm25 import tokenize
from gemrag.strategies.platform.common import (
    chunk_nodes,
    cosine_ranking,
    load_published,
    nearest,
    not_indexed,
    prompt_vector,
    publish_arrays,
    top_k,
    warm_loaded,
)
from gemrag.strategies.platform.conversation import Window, date_bound, document_turns, parse_date, session_windows
from gemrag.strategies.platform.incremental import generic_prune, remaining_chunks
from gemrag.strategies.platform.planning import PlanWork, StrategyPlan
from gemrag.strategies.remem.agent import AgentResult, ToolHit, run_agent
from gemrag.strategies.remem.agent_prompts import FACT, LEXICAL, MAX_K, SEMANTIC, FactArgs, LexicalArgs, SemanticArgs
from gemrag.strategies.remem.gist_prompts import GistAnswer
from gemrag.strategies.remem.gists import plan_gists, run_gists
from gemrag.strategies.remem.strategy import fact_text
from gemrag.types import Hit

NAME = "remem_gist"
VERBATIM, GIST, FACT_ROW = 0, 1, 2
"""Values of the ``node_kind`` array."""
AXES = {name: ("n",) for name in ("node_ids", "node_kind", "node_gist", "node_day")} | {"node_vectors": ("n", "d")}
"""Every array is indexed by the node axis n (turns, gists, facts), so deleting a document is the generic prune
(:func:`gemrag.strategies.platform.incremental.generic_prune`, in :meth:`RememGistStrategy.prune`). ``node_gist``: the
store id of the node's window gist (-1: none); ``node_day``: its date as a proleptic Gregorian ordinal (0: unknown)."""


class RememGistConfig(BaseModel):
    """The ``[remem_gist]`` configuration section (``GEMRAG_REMEM_GIST__<FIELD>``, ``--set remem_gist.<field>=``).
    Names and defaults follow the seed ("Agent Configuration", "Return Chunk Type").

    Attributes:
        gist_window: most turns per gist window (default 12).
        agent_fixed_tools: fixed mode, the seed's (default True): retrieve with ``agent_fixed_retrieval_tool``,
            then answer; False: the model chooses tools.
        agent_max_steps: most agent steps; default (None) 2 in fixed mode, 5 in flexible mode. Fixed mode allows
            1 (retrieve only, no LLM call) or 2; flexible mode 1 to 20.
        agent_fixed_retrieval_tool: fixed mode's tool (default ``semantic_retrieve``, over ``return_chunk``).
        return_chunk: the hits' kind, ``"verbatim"`` (turns, default) or ``"gists"``.
        top_k: results per tool call when the model gives no ``k`` (default 10; at most 20).
        tool_result_chars: longest tool result shown to the model (characters, default 3000).
        tool_budget: ``"shared"`` (default): the agent is shown at most B distinct retrieved items over all its
            tool calls (B the retrieval budget), so its prompt holds what a B-item retrieval holds; ``"per_call"``
            (gemrag's earlier rule): every call shows up to ``top_k`` items, whatever B.
        window_turns: how a retrieved gist or fact stands for its window's turns: ``"ranked"`` (default: the turns
            most similar to the question first, so a budget cut keeps the relevant ones) or ``"order"`` (gemrag's
            earlier rule: the window's turns in conversation order, so a cut keeps its first turns).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    gist_window: int = Field(12, ge=1, le=200)
    agent_fixed_tools: bool = True
    agent_max_steps: int | None = Field(None, ge=1, le=20)
    agent_fixed_retrieval_tool: Literal["semantic_retrieve", "lexical_retrieve", "fact_retrieve"] = SEMANTIC
    return_chunk: Literal["verbatim", "gists"] = "verbatim"
    top_k: int = Field(10, ge=1, le=MAX_K)
    tool_result_chars: int = Field(3000, ge=200, le=50_000)
    tool_budget: Literal["shared", "per_call"] = "shared"
    window_turns: Literal["ranked", "order"] = "ranked"

    @model_validator(mode="after")
    def _steps(self) -> RememGistConfig:
        if self.agent_fixed_tools and self.agent_max_steps is not None and self.agent_max_steps > 2:
            raise ValueError("agent_max_steps must be 1 (retrieve only) or 2 (retrieve, answer) in fixed mode")
        return self

    @property
    def max_steps(self) -> int:
        """``agent_max_steps``, or its default for the mode (2 fixed, 5 flexible)."""
        return self.agent_max_steps or (2 if self.agent_fixed_tools else 5)


def _day(iso: str | None) -> int:
    return date.fromisoformat(iso).toordinal() if iso else 0


@dataclass
class LoadedGist:
    """One published generation, prepared for the tools.

    Attributes:
        ids: (n,) int64 store ids. kind: (n,) int8 (:data:`VERBATIM`, :data:`GIST`, :data:`FACT_ROW`).
        vectors: (n, d) float32. gist: (n,) int64 window gist ids. day: (n,) int64 ordinals. texts: id -> text.
        rows: kind -> (k,) int64 rows of that kind. bm25: the bm25s index over the verbatim rows (None: no verbatim
            rows).
    """

    ids: np.ndarray
    kind: np.ndarray
    vectors: np.ndarray
    gist: np.ndarray
    day: np.ndarray
    texts: dict[int, str]
    rows: dict[int, np.ndarray]
    bm25: Any
    strategy: str = ""
    generation: int = 0

    @classmethod
    def from_published(cls, ctx: StrategyContext, published: Published) -> LoadedGist:
        """Prepare a generation: node texts in one query, the BM25 index of the turns (bm25s)."""
        a = published.arrays
        kind = np.asarray(a["node_kind"])
        rows = {k: np.flatnonzero(kind == k) for k in (VERBATIM, GIST, FACT_ROW)}
        ids = np.asarray(a["node_ids"])
        texts = {n.id: n.text for n in ctx.store.nodes(strategy=published.strategy)}
        bm25 = None
        if rows[VERBATIM].size:
            import bm25s

            bm25 = bm25s.BM25()
            bm25.index(tokenize([texts.get(int(ids[r]), "") for r in rows[VERBATIM]]), show_progress=False)
        return cls(ids, kind, np.asarray(a["node_vectors"]), np.asarray(a["node_gist"]), np.asarray(a["node_day"]),
                   texts, rows, bm25, published.strategy, published.generation)  # fmt: skip

    def hits(self, rows: np.ndarray, scores: np.ndarray) -> list[ToolHit]:
        """Tool hits for node rows (best first) and their scores."""
        return [ToolHit(int(self.ids[r]), self.text(int(r)), float(s)) for r, s in zip(rows, scores, strict=True)]

    def text(self, row: int) -> str:
        """What the agent is shown for a row (a fact with its date)."""
        text = self.texts.get(int(self.ids[row]), "")
        if self.kind[row] == FACT_ROW and self.day[row]:
            return f"{text} ({date.fromordinal(int(self.day[row])).isoformat()})"
        return text

    def dense(self, ctx: StrategyContext, query: str, rows: np.ndarray, k: int) -> list[ToolHit]:
        """The ``k`` rows most similar to ``query`` among ``rows`` (cosine)."""
        if rows.size == 0:
            return []
        v = prompt_vector(ctx, query)
        subset = None if rows.size == self.vectors.shape[0] else rows  # the whole array: the store's index answers
        build = (self.strategy, self.generation)
        found, scores = nearest(ctx, build, "node_vectors", self.vectors, v, k, rows=subset)
        return self.hits(found, scores)

    def lexical(self, query: str, k: int) -> list[ToolHit]:
        """The ``k`` turns with the highest BM25 score for ``query`` (only turns sharing a word with it)."""
        if self.bm25 is None:
            return []
        token_ids = self.bm25.get_tokens_ids(tokenize([query])[0])
        scores = np.asarray(self.bm25.get_scores_from_ids(token_ids), dtype=np.float64)
        order = top_k(scores, k)
        order = order[scores[order] > 0]
        return self.hits(self.rows[VERBATIM][order], scores[order])

    def facts_between(self, start: str | None, end: str | None) -> np.ndarray:
        """The fact rows dated within ``[start, end]`` (bounds as :func:`~gemrag.strategies.platform.conversation.
        date_bound`; facts without a date are left out when a bound is given).

        Raises:
            ValueError: a bound is not a date.
        """
        lo, hi = date_bound(start, end=False), date_bound(end, end=True)
        rows = self.rows[FACT_ROW]
        if lo is None and hi is None:
            return rows
        days = self.day[rows]
        keep = days > 0
        keep &= days >= lo.toordinal() if lo else keep
        keep &= days <= hi.toordinal() if hi else keep
        return rows[keep]


Row = tuple[int, int, str, int, int]
"""One row of the published arrays: (node_kind, store id, embedded text, window gist id or -1, day ordinal)."""


def _window_nodes(
    ctx: StrategyContext, build: tuple[str, int], w: Window, answer: GistAnswer | None, first_ord: int
) -> list[Row]:
    """Store one window's turns, and its gist and facts when it has a gist answer, as nodes of build
    ``(strategy, generation)``; return their rows."""
    strategy, generation = build
    turns = []
    for i, t in enumerate(w.turns):
        said = {"speaker": t.speaker, "date": t.date, "iso_date": t.iso_date, "session": t.session}
        node = ctx.store.add_node(
            strategy, generation, "verbatim", t.line, ord_=first_ord + i, meta={**said, "members": t.sources},
            sources=t.sources,
        )  # fmt: skip
        turns.append((node, t))
    if answer is None:
        return [(VERBATIM, node, t.line, -1, _day(t.iso_date)) for node, t in turns]
    meta: dict[str, Any] = {
        "date": w.date,
        "iso_date": w.iso_date,
        "session": w.session,
        "members": [n for n, _ in turns],
    }
    gist = ctx.store.add_node(strategy, generation, "gist", answer.gist, meta=meta, sources=w.sources)
    rows: list[Row] = [(VERBATIM, node, t.line, gist, _day(t.iso_date)) for node, t in turns]
    rows.append((GIST, gist, answer.gist, gist, _day(w.iso_date)))
    for f in answer.facts:
        triple = [f.subject.strip(), f.predicate.strip(), f.object.strip()]
        stated = parse_date(f.time)
        meta = {"triple": triple, "time": stated, "session_date": w.iso_date, "gist": gist}
        node = ctx.store.add_node(strategy, generation, "fact", fact_text(triple), meta=meta, sources=w.sources)
        rows.append((FACT_ROW, node, fact_text(triple), gist, _day(stated or w.iso_date)))
    return rows


@register(NAME, config=RememGistConfig)
class RememGistStrategy:
    """REMem's episodic-gist strategy: verbatim turns, gists and timed facts, searched by a tool-calling agent."""

    name = NAME

    def __init__(self, config: RememGistConfig | None = None) -> None:
        self.config = config or RememGistConfig()

    @property
    def default_budget(self) -> int:
        """Hits when the caller gives no budget: ``top_k``."""
        return self.config.top_k

    def plan(self, ctx: StrategyContext, work: PlanWork) -> StrategyPlan:
        """What building now would cost: one gist call per session window whose start chunk lacks its artefact
        (:func:`~gemrag.strategies.remem.gists.plan_gists`); writes nothing."""
        windows: list[Window] = []
        for _, doc_chunks in groupby(work.chunks, key=lambda c: c.doc_id):
            windows += session_windows(document_turns(list(doc_chunks)), self.config.gist_window)
        gists = plan_gists(ctx, work, NAME, windows, self.config.gist_window)
        return StrategyPlan(self.name, len(work.new_chunks(ctx, self.name)), [gists])

    def build(self, ctx: StrategyContext) -> None:
        """Turns, gists (LLM, for windows without an artefact) and facts, published as a new generation.

        Raises:
            MemoryNotIndexedError: the memory holds no chunks.
            GemragError: a fatal model error (the artefacts committed before it stay).
        """
        windows = self._windows(chunk_nodes(ctx))
        generation = ctx.store.begin_build(self.name)
        # the gist artefacts belong to remem_gist, so every strategy built on them shares the LLM answers
        answers, report = run_gists(ctx, NAME, windows, self.config.gist_window)
        rows: list[Row] = []
        with ctx.store.transaction():
            for w, answer in zip(windows, answers, strict=True):
                rows += _window_nodes(ctx, (self.name, generation), w, answer, len(rows))
        kinds, ids, texts, gists, days = (list(column) for column in zip(*rows, strict=True))
        arrays = {
            "node_ids": np.array(ids, dtype=np.int64),
            "node_kind": np.array(kinds, dtype=np.int8),
            "node_vectors": np.asarray(ctx.embedder.embed(texts), dtype=np.float32),
            "node_gist": np.array(gists, dtype=np.int64),
            "node_day": np.array(days, dtype=np.int64),
        }
        meta = {
            "turns": kinds.count(VERBATIM),
            "windows": len(windows),
            "gists": kinds.count(GIST),
            "facts": kinds.count(FACT_ROW),
            "failed_windows": sum(a is None for a in answers),
            "gist_calls": report.items,
        }
        publish_arrays(ctx, self.name, generation, arrays, axes=AXES, meta=meta, search=["node_vectors"])

    def _windows(self, chunks: list[NodeRecord]) -> list[Window]:
        """The session windows of ``chunks`` (in reading order), document by document: a window never spans two."""
        windows: list[Window] = []
        for _, doc_chunks in groupby(chunks, key=lambda c: c.doc_id):
            windows += session_windows(document_turns(list(doc_chunks)), self.config.gist_window)
        return windows

    def prune(self, ctx: StrategyContext, gone: set[int], generation: int) -> Publication | None:
        """The published build without the removed chunks' rows
        (:func:`~gemrag.strategies.platform.incremental.generic_prune`), which is the build without them: a window,
        its gist and its facts come from one document, so every window of a removed chunk's document leaves whole
        (its nodes are among ``gone``) and no other row depended on it. The build's counts (turns, windows, gists,
        facts, failed windows) are those of what remains; ``gist_calls`` stays the last build's.

        Returns:
            The pruned generation, written but not published; None when the strategy has no published build.
        """
        published = ctx.store.load_published(self.name, mmap=False)
        if published is None:
            return None
        gone_ids = np.fromiter(gone, dtype=np.int64, count=len(gone))
        kinds = np.asarray(published.arrays["node_kind"])[~np.isin(np.asarray(published.arrays["node_ids"]), gone_ids)]
        windows = len(self._windows(remaining_chunks(ctx, self.name, gone)))
        gists = int((kinds == GIST).sum())
        counts = {"turns": int((kinds == VERBATIM).sum()), "windows": windows, "gists": gists}
        counts |= {"facts": int((kinds == FACT_ROW).sum()), "failed_windows": windows - gists}
        return generic_prune(ctx, self.name, gone, generation, meta=counts)

    def _loaded(self, ctx: StrategyContext) -> LoadedGist:
        return load_published(ctx, self.name, lambda p: LoadedGist.from_published(ctx, p))

    def tools(self, ctx: StrategyContext, g: LoadedGist) -> Any:
        """The agent's retrieval tools over a loaded generation (:data:`gemrag.strategies.remem.agent.Tools`)."""
        cfg = self.config

        def run(tool: str, arguments: dict[str, Any]) -> list[ToolHit]:
            if tool == SEMANTIC:  # fixed mode's call names no target: search the return_chunk kind
                a = SemanticArgs.model_validate({"target": cfg.return_chunk, **arguments})
                return g.dense(ctx, a.query, g.rows[GIST if a.target == "gists" else VERBATIM], a.k or cfg.top_k)
            if tool == LEXICAL:
                b = LexicalArgs.model_validate(arguments)
                return g.lexical(b.query, b.k or cfg.top_k)
            if tool == FACT:
                c = FactArgs.model_validate(arguments)
                return g.dense(ctx, c.query, g.facts_between(c.start, c.end), c.k or cfg.top_k)
            raise ValueError(f"unknown tool {tool!r}")

        return run

    def node_budget(self, budget: int | None) -> int | None:
        """The items the agent may be shown in one run: ``budget`` with ``tool_budget = "shared"``, else None."""
        return budget if self.config.tool_budget == "shared" else None

    def ask_agent(self, ctx: StrategyContext, question: str, budget: int | None = None) -> AgentResult:
        """Run the agent on ``question`` over the published generation (call inside ``ctx.store.snapshot()``).

        Raises:
            MemoryNotIndexedError: the strategy was not built in this memory.
            GemragError: a fatal model error.
        """
        cfg = self.config
        g = self._loaded(ctx)
        retrieve_only = cfg.agent_fixed_tools and cfg.max_steps == 1
        fixed = cfg.agent_fixed_retrieval_tool if cfg.agent_fixed_tools else None
        return run_agent(
            None if retrieve_only else ctx.get_llm(),
            question,
            self.tools(ctx, g),
            max_steps=cfg.max_steps,
            fixed_tool=fixed,
            result_chars=cfg.tool_result_chars,
            node_budget=self.node_budget(budget),
        )

    def warm(self, ctx: StrategyContext, budget: int) -> None:
        """Load the published generation and, unless the agent only retrieves (``agent_fixed_tools`` with
        ``max_steps = 1``), the LLM, spending no LLM call (:func:`~gemrag.strategies.platform.common.warm_loaded`: a
        warm-up question would cost an agent run); ``budget`` is unused.

        Raises:
            MemoryNotIndexedError: the strategy was not built in this memory.
        """
        cfg = self.config
        warm_loaded(ctx, self._loaded, llm=not (cfg.agent_fixed_tools and cfg.max_steps == 1))

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        """The turns (``return_chunk = "verbatim"``) or gists (``"gists"``) the agent retrieved for ``question``.

        Returns:
            At most ``budget`` hits of kind ``"verbatim"`` or ``"gist"`` in the order the agent retrieved them (a
            retrieved gist stands for its turns, a retrieved turn or fact for its window's gist); ``score`` is
            ``1 / (1 + rank)``. Every hit's ``meta``: ``agent_answer`` (str or None), ``agent_steps`` (the tool
            calls with their arguments and result ids) and, when a call stayed malformed, ``agent_error``. An
            agent that retrieved nothing (it answered at once, or every tool call found nothing) returns no hits,
            so its ungrounded answer is not used: :meth:`gemrag.memory.Memory.answer` then answers from an empty
            context (for LoCoMo, one that may say the answer is not mentioned).

        Raises:
            MemoryNotIndexedError: the strategy was not built in this memory.
            StaleGenerationError: a newer generation replaced the one being read (the caller retries).
        """
        if ctx.store.published_generation(self.name) is None:
            raise not_indexed(ctx, self.name)
        with ctx.store.snapshot():
            result = self.ask_agent(ctx, question, budget)
            g = self._loaded(ctx)
            ranked = prompt_vector(ctx, question) if self.config.window_turns == "ranked" else None
            chosen = self._returned(g, result.node_ids, ranked)[:budget]
            meta: dict[str, Any] = {"agent_answer": result.answer, "agent_steps": result.steps}
            if result.error:
                meta["agent_error"] = result.error
            kind: Literal["verbatim", "gist"] = "verbatim" if self.config.return_chunk == "verbatim" else "gist"
            return [
                Hit(nid, kind, 1.0 / (1 + rank), g.texts.get(nid, ""), rank, dict(meta))
                for rank, nid in enumerate(chosen)
            ]

    def _returned(self, g: LoadedGist, node_ids: list[int], question: np.ndarray | None = None) -> list[int]:
        """The retrieved nodes as ``return_chunk`` node ids, in order, each once; a gist or fact stands for its
        window's turns, most similar to ``question`` ((d,) float32 vector) first, or in conversation order when
        ``question`` is None."""
        row = {int(n): r for r, n in enumerate(g.ids)}
        turns_of: dict[int, list[int]] = {}
        turn_rows = g.rows[VERBATIM]
        if question is not None and turn_rows.size:
            order, _ = cosine_ranking(question, g.vectors[turn_rows], int(turn_rows.size))
            turn_rows = turn_rows[order]
        for r in turn_rows:
            turns_of.setdefault(int(g.gist[r]), []).append(int(g.ids[r]))
        out: list[int] = []
        for nid in node_ids:
            r = row.get(int(nid))
            if r is None:
                continue
            if self.config.return_chunk == "gists":
                # a turn whose window gist left with a removed turn of its window stands for itself
                gist = int(g.gist[r])
                found = [gist] if gist in row else [int(nid)] if g.kind[r] == VERBATIM else []
            elif g.kind[r] == VERBATIM:
                found = [int(nid)]
            else:
                found = turns_of.get(int(g.gist[r]), [])
            out += [n for n in found if n not in out]
        return out

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        """Turns, windows, gists, facts and failed windows of the published build (``gemrag info``)."""
        manifest = ctx.store.manifest(self.name)
        meta = manifest.meta if manifest else {}
        keys = ("turns", "windows", "gists", "facts", "failed_windows")
        return {"generation": manifest.generation if manifest else None, **{k: meta.get(k) for k in keys}}
