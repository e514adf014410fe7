"""``hlgraph``: HLGraphRAG (Zeng, "HLGraphRAG: A Graph Retrieval Augmentation System for Human-like Synthesis of
Information", section 3 "Design"): who did what to whom, why and when, in an association graph walked depth-first.

Build (section 3, "Encoding"):
  1. one LLM call per chunk through the extraction pipeline lists the subjects, the subject relations (meaning,
     object 1, object 2) (SRQ) and the events (event, object 1, object 2, why) with a time frame (CR), each
     relation and event with its passive voice (:mod:`gemrag.strategies.hlgraph.facts`; artefacts, resumable), from
     the chunk's text alone as the paper (``hlgraph.read_titles = true``: with its document's title,
     :mod:`gemrag.strategies.platform.titles`);
  2. the AssociationGraph (:mod:`gemrag.strategies.hlgraph.association`): subject and event nodes embedded with the
     memory's
     embedder (the paper: all-MiniLM-L6-v2, gemrag's default too); every fact stored in both directions with the
     right voice (directional weights, DW); an event node is joined to its participants by edges labelled with
     the event, so an idea about the event reaches it and routes to who took part (context routing);
  3. subjects, events and SRQ relations become store nodes (kinds ``subject``, ``event``, ``relation``) with the
     chunks they came from as sources, so deleting a document deletes what only it said; the relation rows are
     published as arrays and the node pairs as store edges (kind ``association``, weight = relations on the pair).
Retrieve (section 3, "Main Idea Breakdown", "Retrieval system", "Ranked Retrieval"):
  1. the LLM splits the question into main ideas (structured output; on failure the question is the one idea);
  2. each idea's most similar node (cosine) starts a depth-first traversal collecting up to ``max_nodes`` nodes,
     ranked (RR: :meth:`gemrag.strategies.hlgraph.association.AssociationGraph.ranked_neighbours`) or in edge order;
  3. the context: per idea, the relations and events among the collected nodes rendered as sentences in the
     direction walked (one hit), then the chunks that stated them (up to ``source_chunks``).

Where the paper is silent, gemrag chooses (and says so in the docstrings): one extraction call per chunk, one
worked example, merging equal subjects and facts across chunks, the RR score's formula, ``max_nodes`` per idea,
the rendering of the sentences and the source chunks. The switches ``ranked`` (RR), ``directional`` (DW) and
``routing`` (CR) give the paper's ablation (Figure 5.1); none of them costs an LLM call, as the extraction is
shared (``directional`` and ``routing`` need ``index`` again, ``ranked`` does not).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import ConfigDict, Field

from gemrag.config import ReadTitles
from gemrag.errors import GemragError, StructuredOutputError, is_fatal
from gemrag.models.structured import complete_structured
from gemrag.store import Published
from gemrag.store.publish import Publication
from gemrag.strategies.base import StrategyContext, register
from gemrag.strategies.hlgraph.association import AssociationGraph
from gemrag.strategies.hlgraph.facts import (
    fact_sentence,
    plan_extraction_pass,
    run_extraction_pass,
    stored_answers,
)
from gemrag.strategies.hlgraph.graph_arrays import AXES, EVENT, NAME, PAIR, graph_arrays
from gemrag.strategies.hlgraph.prompts import (
    MAX_IDEAS,
    MAX_ITEM_CHARS,
    MainIdeas,
    ideas_prompt,
    ideas_schema,
)
from gemrag.strategies.platform.common import (
    chunk_hits,
    chunk_ids_and_vectors,
    chunk_nodes,
    cosine_ranking,
    load_published,
    not_indexed,
    prompt_vector,
    publish_arrays,
)
from gemrag.strategies.platform.incremental import pruned_publication, rebuild_inputs
from gemrag.strategies.platform.planning import PlanWork, StrategyPlan
from gemrag.strategies.platform.titles import strategy_reads_titles
from gemrag.types import SOURCE_NODES, Hit

IDEAS_MAX_TOKENS = 16 + MAX_IDEAS * (MAX_ITEM_CHARS // 3 + 4)


class HLGraphConfig(ReadTitles):
    """HLGraphRAG's settings, the ``[hlgraph]`` configuration section (``GEMRAG_HLGRAPH__<FIELD>``,
    ``--set hlgraph.<field>=``).

    Attributes:
        max_nodes: nodes one traversal collects (default 5: the paper's "max amount of 5 nodes", section 3). The
            paper does not say whether the limit is per main idea or per question; gemrag applies it per idea.
        max_ideas: most main ideas the question is split into (default 3; the paper gives no number).
        split_question: ask the LLM for the main ideas (default True); False: the question is the one idea (no
            LLM call at retrieval).
        ranked: ranked retrieval, RR (default True); False: neighbours in edge order.
        directional: directional weights, DW (default True): the reverse direction of a fact carries its passive
            voice; False: the forward label both ways (the paper's error case). Needs ``index`` again.
        routing: context routing, CR (default True): events become nodes and relations; False: the SRQ
            relations only. Needs ``index`` again.
        passive: who writes the passive voice of DW: ``"llm"`` (default; the rule when the model wrote none) or
            ``"rule"`` (:func:`gemrag.strategies.hlgraph.facts.passive_voice` always).
        source_chunks: chunks stating the retrieved relations added after them (default 0: the collected graph
            knowledge only, as the paper gives the model; 3 was gemrag's earlier default, kept as a variant).
        read_titles: extract from a chunk's document title and text (:class:`~gemrag.config.ReadTitles`; default:
            the chunk alone, as the paper). Needs ``index`` again (a new extraction).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_nodes: int = Field(5, ge=1, le=200)
    max_ideas: int = Field(3, ge=1, le=MAX_IDEAS)
    split_question: bool = True
    ranked: bool = True
    directional: bool = True
    routing: bool = True
    passive: Literal["llm", "rule"] = "llm"
    source_chunks: int = Field(0, ge=0, le=100)


@dataclass
class LoadedHLGraph:
    """One published generation, prepared once for retrieval.

    Attributes:
        node_ids: (n,) int64 store ids. node_kind: (n,) int8 (``SUBJECT`` / ``EVENT``). graph: the
        AssociationGraph. rel_fact / rel_role: (r,) int64.
        rel_inverse: (r,) bool. directional: the build's DW switch (for rendering).
    """

    node_ids: np.ndarray
    node_kind: np.ndarray
    graph: AssociationGraph
    rel_fact: np.ndarray
    rel_role: np.ndarray
    rel_inverse: np.ndarray
    directional: bool

    @classmethod
    def from_published(cls, published: Published) -> LoadedHLGraph:
        """Build the in-memory graph from the arrays."""
        a = published.arrays
        graph = AssociationGraph(a["node_vectors"], a["rel_src"], a["rel_dst"], a["rel_labels"], a["rel_weight"])
        return cls(
            np.asarray(a["node_ids"]),
            np.asarray(a["node_kind"]),
            graph,
            np.asarray(a["rel_fact"], dtype=np.int64),
            np.asarray(a["rel_role"], dtype=np.int64),
            np.asarray(a["rel_inverse"]).astype(bool),
            bool(published.meta.get("directional", True)),
        )


@register(NAME, config=HLGraphConfig)
class HLGraphStrategy:
    """HLGraphRAG: the association graph of subjects and events and its (ranked) depth-first retrieval."""

    name = NAME
    reads_titles = False
    """Subjects and events of the chunk alone by default (section 3, "Encoding")."""
    kept_kinds = frozenset({"subject", "relation"})
    """A subject (a name) and a subject relation (two names and a meaning) are stated by each chunk they came from on
    its own, so they stay while another chunk states them; an event leaves with any of its chunks, since its why and
    when came from the chunk that stated it first (:mod:`gemrag.strategies.platform.forgetting`). Either way
    :meth:`prune` makes them again from the chunks that remain, with the wording of the first of them."""

    def __init__(self, config: HLGraphConfig | None = None) -> None:
        self.config = config or HLGraphConfig()

    @property
    def default_budget(self) -> int:
        """Hits when the caller gives no budget: one per main idea plus the source chunks."""
        return self.config.max_ideas + self.config.source_chunks

    # -- build ----------------------------------------------------------------------------------------------
    def plan(self, ctx: StrategyContext, work: PlanWork) -> StrategyPlan:
        """What building now would cost: one extraction call per chunk that lacks it
        (:func:`~gemrag.strategies.hlgraph.facts.plan_extraction_pass`); writes nothing."""
        passes = [plan_extraction_pass(ctx, work, titles=strategy_reads_titles(ctx, NAME))]
        return StrategyPlan(NAME, len(work.new_chunks(ctx, NAME)), passes)

    def build(self, ctx: StrategyContext) -> None:
        """Extract the chunks that lack it, assemble the graph from every chunk's answer, publish a generation.

        Raises:
            MemoryNotIndexedError: the memory holds no chunks.
            GemragError: a fatal model error (the artefacts committed before it stay).
        """
        chunks = chunk_nodes(ctx)
        generation = ctx.store.begin_build(NAME)
        answers, _ = run_extraction_pass(ctx, chunks, titles=strategy_reads_titles(ctx, NAME))
        arrays, meta, edges = graph_arrays(ctx, generation, chunks, answers, self.config)
        publish_arrays(ctx, NAME, generation, arrays, axes=AXES, meta=meta, edges={"association": edges})

    def prune(self, ctx: StrategyContext, gone: set[int], generation: int) -> Publication | None:
        """The published graph as a build without the removed chunks makes it (DESIGN.md, "Forgetting": a kept node
        keeps nothing of a removed source): reassembled, with no LLM call, from the stored extraction answers of the
        chunks the build covered that remain (:func:`~gemrag.strategies.hlgraph.facts.stored_answers`,
        :func:`~gemrag.strategies.platform.incremental.remaining_chunks`), by the build's merge rule
        (:func:`~gemrag.strategies.hlgraph.facts.assemble`: equal normalized names and labels meet, the first chunk
        in reading order gives the wording; the paper, section 3, "Encoding", does not say how to merge). So a subject
        or a relation another chunk states stays with the surface form, label and passive voice of the first chunk
        that remains; an event another chunk states stays with that chunk's why and time frame; a relation's weight
        (the chunks stating it) and the association edges count the remaining chunks only. The nodes are new nodes
        of the pruned generation; the embedder is asked for the node and label vectors again (answered by its
        cache, but for a wording no remaining chunk had first before).

        Returns:
            The rebuilt generation, written but not published (its nodes replace the previous generation's);
            None when the strategy has no published build or no chunk of it remains.
        """
        inputs = rebuild_inputs(ctx, NAME, gone)
        if inputs is None:
            return None
        published, chunks = inputs
        answers = stored_answers(ctx, chunks, titles=strategy_reads_titles(ctx, NAME))
        arrays, meta, edges = graph_arrays(ctx, generation, chunks, answers, self.config)
        return pruned_publication(
            ctx, published, generation, arrays, dict(AXES), meta, carry=False, edges={"association": edges}
        )

    # -- retrieve -------------------------------------------------------------------------------------------
    def main_ideas(self, ctx: StrategyContext, question: str) -> tuple[list[str], str | None]:
        """The question's main ideas (section 3, "Main Idea Breakdown"): ``(ideas, None)``, or ``([question],
        error)`` when the answer stayed malformed or the request failed without being fatal; ``([question],
        None)`` with ``split_question = false`` or an empty list.

        Raises:
            GemragError: a fatal one.
        """
        cfg = self.config
        if not cfg.split_question:
            return [question], None
        try:
            answer = complete_structured(
                ctx.get_llm(),
                ideas_prompt(question, cfg.max_ideas),
                MainIdeas,
                schema=ideas_schema(cfg.max_ideas),
                max_tokens=IDEAS_MAX_TOKENS,
            )
        except StructuredOutputError as exc:
            return [question], str(exc)
        except GemragError as exc:
            if is_fatal(exc):
                raise
            return [question], str(exc)
        ideas = list(dict.fromkeys(" ".join(i.split()) for i in answer.ideas if i.strip()))[: cfg.max_ideas]
        return ideas or [question], None

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        """Context for ``question`` (module docstring, Retrieve).

        Returns:
            At most ``budget`` hits: first one ``"relations"`` hit per main idea that reached a relation (text:
            the sentences, one per line; ``node_id``: the idea's start node; ``score``: the idea's cosine to it;
            ``meta``: ``idea``, ``nodes`` (store ids collected, in order), ``facts`` (store ids rendered; also under
            :data:`~gemrag.types.SOURCE_NODES`, what the hit's provenance reads)), then up
            to ``source_chunks`` ``"chunk"`` hits, the chunks stating most of the rendered facts first (``score``:
            how many; with no fact rendered, the chunks of the collected nodes). Every hit's ``meta`` has
            ``ideas`` (and ``ideas_error`` when the split failed). An empty graph, or one where nothing was
            reached, gives dense retrieval over the chunks (``meta["fallback"] = "dense"``).

        Raises:
            MemoryNotIndexedError: the strategy was not built in this memory.
            StaleGenerationError: a newer generation replaced the one being read (the caller retries).
        """
        if ctx.store.published_generation(NAME) is None:
            raise not_indexed(ctx, NAME)
        cfg = self.config
        ideas, error = self.main_ideas(ctx, question)
        common: dict[str, Any] = {"ideas": ideas, **({"ideas_error": error} if error else {})}
        with ctx.store.snapshot():
            g = load_published(ctx, NAME, LoadedHLGraph.from_published)
            if g.graph.n_nodes == 0:
                return self._dense(ctx, question, budget, common)
            vectors = ctx.embedder.embed(ideas)
            hits: list[Hit] = []
            rendered: set[int] = set()
            order: list[int] = []
            reached: list[int] = []
            for idea, vector in zip(ideas, vectors, strict=True):
                start, similarity = g.graph.nearest(vector)
                walk = g.graph.traverse(start, vector, cfg.max_nodes, ranked=cfg.ranked)
                reached += [int(g.node_ids[u]) for u in walk.nodes]
                sentences, facts = self._sentences(ctx, g, walk.nodes, walk.parents, rendered)
                order += facts
                if sentences:
                    meta = {**common, "idea": idea, "nodes": [int(g.node_ids[u]) for u in walk.nodes], "facts": facts}
                    meta[SOURCE_NODES] = facts  # its provenance: the chunks these facts were extracted from
                    hits.append(Hit(int(g.node_ids[start]), "relations", similarity, "\n".join(sentences), 0, meta))
            hits = hits[:budget]
            room = min(cfg.source_chunks, budget - len(hits))
            if room > 0:
                hits += self._source_chunks(ctx, order or reached, room, common)
            if not hits:
                return self._dense(ctx, question, budget, common)
            return [Hit(h.node_id, h.kind, h.score, h.text, rank, h.meta) for rank, h in enumerate(hits)]

    def _sentences(
        self, ctx: StrategyContext, g: LoadedHLGraph, nodes: list[int], parents: list[int], rendered: set[int]
    ) -> tuple[list[str], list[int]]:
        """Sentences of the facts among ``nodes`` not yet rendered: the edges walked first (parent -> child, in
        visit order, in the voice of that direction), then the events whose nodes were collected, then the other
        edges between collected nodes; each fact once."""

        def read(row: int) -> tuple[int, bool]:  # (fact id, read in the inverse voice?)
            return int(g.rel_fact[row]), bool(g.rel_inverse[row]) and int(g.rel_role[row]) == PAIR

        walked = [read(r) for u, p in zip(nodes[1:], parents[1:], strict=True) for r in g.graph.relations(p, u)]
        events = [(int(g.node_ids[u]), False) for u in nodes if g.node_kind[u] == EVENT]  # an event node: its event
        rows = walked + events + [read(r) for r in g.graph.relations_among(nodes)]
        sentences, facts = [], []
        for fact, inverse in rows:
            if fact in rendered:
                continue
            rendered.add(fact)
            m = ctx.store.node(fact).meta
            sentences.append(
                fact_sentence(
                    m["kind"],
                    m["object1"],
                    m["label"],
                    m["object2"],
                    passive=m["passive"],
                    why=m["why"],
                    time=m["time"],
                    inverse=inverse,
                    directional=g.directional,
                )
            )
            facts.append(fact)
        return sentences, facts

    def _source_chunks(self, ctx: StrategyContext, nodes: list[int], room: int, common: dict[str, Any]) -> list[Hit]:
        sources = ctx.store.node_sources(sorted(set(nodes)))
        counts: Counter[int] = Counter()
        first: dict[int, int] = {}
        for node in nodes:
            for chunk in sources.get(node, []):
                counts[chunk] += 1
                first.setdefault(chunk, len(first))
        ranked = sorted(counts, key=lambda c: (-counts[c], first[c]))[:room]
        return chunk_hits(ctx, ranked, [float(counts[c]) for c in ranked], common)

    def _dense(self, ctx: StrategyContext, question: str, budget: int, common: dict[str, Any]) -> list[Hit]:
        ids, vectors = chunk_ids_and_vectors(ctx, titles=strategy_reads_titles(ctx, NAME))
        order, scores = cosine_ranking(prompt_vector(ctx, question), vectors, budget)
        return chunk_hits(ctx, ids[order].tolist(), scores.tolist(), {**common, "fallback": "dense"})

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        """Subjects, events, relations, relation rows, passives written by rule and the switches (``gemrag info``)."""
        manifest = ctx.store.manifest(NAME)
        meta = manifest.meta if manifest else {}
        keys = ("subjects", "events", "relations", "relation_rows", "passive_by_rule", "extracted_chunks")
        return {
            "generation": manifest.generation if manifest else None,
            **{k: meta.get(k) for k in (*keys, "directional", "routing")},
            "ranked": self.config.ranked,
        }


__all__ = ["HLGraphConfig", "HLGraphStrategy", "LoadedHLGraph"]
