"""``unweaver``: chunks retrieved through the ideas they contain, elected by the question's most similar ideas
(UnWeaver paper, section 2 "Mathematics of UnWeaver" and Appendix A).

Build (offline):
  1. one LLM call per chunk extracts ``(name, description)`` pairs, descriptions from that chunk only
     (:mod:`gemrag.strategies.unweaver.prompts`), through the extraction pipeline (artefacts of kind ``"entities"``:
     cached, resumable, failures recorded and retried); the prompt holds the chunk's text alone, as the paper's
     (``unweaver.read_titles = true``: its document's title too, :mod:`gemrag.strategies.platform.titles`);
  2. entities are grouped into equivalence classes by normalized name
     (:mod:`gemrag.strategies.unweaver.entity_classes`);
     with ``semantic_merge`` also classes whose representatives' cosine is at least ``semantic_threshold``;
  3. each class's representative (name + its descriptions in chunk order, LLM-shortened above
     ``representative_max_chars``: :mod:`gemrag.strategies.unweaver.representatives`) is embedded: the vector database
     of
     eq. (7); the chunk–class matrix ``D`` (classes x chunks, scipy.sparse) records which class came from which
     chunk (eq. 6). Classes are store nodes (kind ``entity``, sources: their chunks), so deleting a document
     deletes the classes only it named.
Retrieve (online):
  1. the ``top_k_classes`` classes by cosine similarity to the question (eq. 12) become approval ballots over the
     chunks they came from (section 2; :mod:`gemrag.strategies.unweaver.ballots`);
  2. a committee of K = budget chunks is elected by ``rule`` (AV, PAV, CC, sequential PAV/CC; or the released
     code's frequency x rank score): :mod:`gemrag.strategies.unweaver.committee`;
  3. optionally (``alignment``), the proportional-fairness or least-squares allocation of Appendix A.2
     (:mod:`gemrag.strategies.unweaver.alignment`) prices the candidate chunks, and the committee is reordered by price
     (``alignment_use = "reorder"``) or the K highest-priced chunks replace it (``"select"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from pydantic import ConfigDict, Field

from gemrag.config import ReadTitles
from gemrag.graph.synonyms import synonym_pairs
from gemrag.store import NodeRecord, Published
from gemrag.store.publish import Publication
from gemrag.strategies.base import StrategyContext, register
from gemrag.strategies.platform.common import (
    chunk_hits,
    chunk_nodes,
    cosine_scores,
    load_published,
    not_indexed,
    prompt_vector,
    publish_arrays,
)
from gemrag.strategies.platform.extraction import Extraction, extract_artifacts
from gemrag.strategies.platform.incremental import pruned_publication, rebuild_inputs, remaining_chunks, take
from gemrag.strategies.platform.planning import PlanWork, StrategyPlan, artifact_pass, artifact_todo
from gemrag.strategies.platform.titles import strategy_reads_titles, title_version
from gemrag.strategies.unweaver.alignment import fairness_allocation, least_squares_alignment, relevance_weights
from gemrag.strategies.unweaver.ballots import Ballots, approval_ballots
from gemrag.strategies.unweaver.committee import elect, require_abcvoting
from gemrag.strategies.unweaver.entity_classes import EntityClasses, equivalence_classes, merge_classes
from gemrag.strategies.unweaver.prompts import (
    MAX_DESCRIPTION_CHARS,
    MAX_NAME_CHARS,
    ChunkEntities,
    entities_prompt,
    entities_schema,
    entities_version,
    entity_cap,
)
from gemrag.strategies.unweaver.representatives import (
    Representative,
    plan_shortenings,
    published_shortenings,
    representatives,
    reused_representatives,
)
from gemrag.types import Hit

NAME = "unweaver"
ENTITIES_KIND = "entities"
ATTEMPTS = 3
"""Structured-output attempts per chunk per build."""
UNBOUNDED_MAX_TOKENS = 4096
"""Completion limit of one extraction call with no entity cap (``max_entities = 0``; tokens)."""


ENTITY_TOKENS = 254
"""Typical completion tokens of one entity answer: the 0.5B's mean over 267 answers on four COVID-QA papers (the cost
plan's estimate-against-actual run in docs/results.md; it was 380, a guess from call times, and over-estimated that
build's completion tokens 1.50 times). The mean recorded for this model (in the memory, else on this machine:
:mod:`gemrag.memory.answer_lengths`) replaces it once there are answers."""


def extraction_max_tokens(cap: int) -> int:
    """Completion limit of one extraction call (tokens): the JSON list of ``cap`` entities at about 4 characters
    per token (1,276 for 12), :data:`UNBOUNDED_MAX_TOKENS` with no cap (``cap = 0``)."""
    return 16 + cap * (MAX_NAME_CHARS + MAX_DESCRIPTION_CHARS) // 4 if cap > 0 else UNBOUNDED_MAX_TOKENS


class UnweaverConfig(ReadTitles):
    """UnWeaver's settings, the ``[unweaver]`` section (``GEMRAG_UNWEAVER__<FIELD>``, ``--set unweaver.<field>=``).

    Attributes:
        top_k_classes: classes retrieved per question, the voters (default 10, as the released code).
        rule: the committee rule: ``"av"``, ``"pav"`` (default), ``"cc"``, ``"seq-pav"``, ``"seq-cc"`` (abcvoting,
            extra ``gemrag[unweaver]``) or ``"released"`` (the released code's frequency x rank score).
        weighted: weight each ballot by its class's cosine similarity to the question (default False: the paper's
            voters approve with equal weight, section 2, "the voter approves of the chunk iff" it holds the class;
            True is gemrag's earlier default, kept as a variant).
        qa_top_k: chunks handed to the LLM when ``ask``/``retrieve`` get no budget (default 5).
        representative_max_chars: length above which a class's concatenated descriptions are shortened by the
            LLM (characters; default 4000, as the released code).
        shorten_tokens: completion limit of one shortening call (tokens; default 300).
        semantic_merge: also merge classes whose representatives' cosine similarity is at least
            ``semantic_threshold`` (footnote 8; default False: syntactic equivalence only, as the paper). The
            similar pairs come from :func:`gemrag.graph.synonyms.synonym_pairs` (exact below 20,000 classes, faiss
            HNSW above; at most 100 neighbours per class); merged classes are the connected components.
        semantic_threshold: that cosine (default 0.9).
        alignment: ``"none"`` (default), ``"fairness"`` (log utility, eqs. 18-20) or ``"least_squares"`` (eq. 21).
        alignment_use: ``"reorder"`` the elected chunks by their alignment price (default) or ``"select"`` the K
            highest-priced candidate chunks instead of the election.
        chunk_budget: ``c_i``, each chunk's budget of idea strength (eq. 16; default 1.0).
        max_entities: most entities one extraction may list (:func:`~gemrag.strategies.unweaver.prompts.entity_cap`):
            None (default) sizes the cap by the chunk, ``max(12, memory.chunk_tokens // 8)``; 0 sets none (the paper's
            "no limit"; the completion limit, 4,096 tokens, still ends the list); n caps at n. The cap is part of
            the artefact version, so changing it re-extracts.
        read_titles: extract from a chunk's document title and text (:class:`~gemrag.config.ReadTitles`; default:
            the chunk alone, as the paper). Part of the artefact version too.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    top_k_classes: int = Field(10, ge=1, le=1000)
    rule: Literal["av", "pav", "cc", "seq-pav", "seq-cc", "released"] = "pav"
    weighted: bool = False
    qa_top_k: int = Field(5, ge=1, le=200)
    representative_max_chars: int = Field(4000, ge=100)
    shorten_tokens: int = Field(300, ge=16, le=4000)
    semantic_merge: bool = False
    semantic_threshold: float = Field(0.9, ge=-1.0, le=1.0)
    alignment: Literal["none", "fairness", "least_squares"] = "none"
    alignment_use: Literal["reorder", "select"] = "reorder"
    chunk_budget: float = Field(1.0, gt=0)
    max_entities: int | None = Field(None, ge=0, le=1000)


AXES = {"node_ids": ("n",), "class_ids": ("e",), "class_vectors": ("e", "d"), "incidence": ("e", "n")}
"""Named dimensions: n chunks, e classes, d embedding size; ``incidence`` is the chunk–class matrix D."""


@dataclass
class LoadedUnweaver:
    """A published generation. node_ids: (n,) int64 chunk ids. class_ids: (e,) int64 class node ids.
    class_vectors: (e, d) float32. incidence: (e, n) csr_matrix, 1 where a class came from a chunk."""

    node_ids: np.ndarray
    class_ids: np.ndarray
    class_vectors: np.ndarray
    incidence: sp.csr_matrix

    @classmethod
    def from_published(cls, published: Published) -> LoadedUnweaver:
        """Read the arrays of a published generation."""
        a = published.arrays
        return cls(
            np.asarray(a["node_ids"]),
            np.asarray(a["class_ids"]),
            np.asarray(a["class_vectors"]),
            sp.csr_matrix(a["incidence"]),
        )


def extraction(cap: int) -> Extraction[NodeRecord]:
    """The per-chunk entity pass (:func:`~gemrag.strategies.unweaver.prompts.entities_prompt`) listing at most
    ``cap`` entities (0: no cap)."""
    return Extraction(
        "UnWeaver entities",
        lambda node: entities_prompt(node.text),
        ChunkEntities,
        schema=entities_schema(cap),
        max_tokens=extraction_max_tokens(cap),
        attempts=ATTEMPTS,
    )


@register(NAME, config=UnweaverConfig)
class UnweaverStrategy:
    """UnWeaver: entity equivalence classes and approval-based committee elections over chunks."""

    name = NAME
    reads_titles = False
    """Entities of the chunk alone by default (section 2: the ideas a chunk contains)."""

    def __init__(self, config: UnweaverConfig | None = None) -> None:
        self.config = config or UnweaverConfig()

    @property
    def default_budget(self) -> int:
        """Chunks in the context when the caller gives no budget: ``qa_top_k``."""
        return self.config.qa_top_k

    @property
    def nested(self) -> bool:
        """Whether the first k of a K-chunk retrieval are the k-chunk retrieval (k < K). True for AV and the
        released score (top K by a per-chunk score) without alignment; False for PAV, CC and their sequential forms
        (a committee of K is not a committee of k plus more chunks, and the elected set is ranked by approval
        score). ``gemrag eval`` does not elect a committee per k: Recall@k reads the first k chunks of the one
        committee of its ranking's size, as for every strategy (:func:`gemrag.eval.metrics.first_passages`)."""
        return self.config.rule in ("av", "released") and self.config.alignment == "none"

    def version(self, ctx: StrategyContext) -> str:
        """The artefact version of this configuration's extraction (its entity cap, and whether it reads titles)."""
        version = entities_version(entity_cap(self.config.max_entities, ctx.config.memory.chunk_tokens))
        return title_version(ctx, version, strategy_reads_titles(ctx, NAME))

    def _entities(self, ctx: StrategyContext, chunks: list[NodeRecord]) -> tuple[list[list[str]], list[list[str]]]:
        """Each chunk's extracted entity names and descriptions, from the stored artefacts (no LLM call)."""
        found = ctx.store.artifacts(NAME, ENTITIES_KIND, ChunkEntities, self.version(ctx), [c.id for c in chunks])
        entities = [found[c.id].entities if c.id in found else [] for c in chunks]
        return [[e.name for e in chunk] for chunk in entities], [[e.description for e in chunk] for chunk in entities]

    def _classes(
        self,
        ctx: StrategyContext,
        chunks: list[NodeRecord],
        known: Mapping[tuple[str, str], Representative] | None = None,
    ) -> tuple[EntityClasses, list[Representative | None]] | None:
        """Extraction artefacts -> classes and representatives (semantic merging when configured). ``known``: no LLM
        call, long classes reuse these shortenings (:func:`reused_representatives`; None where it has none), and
        None is returned when a semantic merge would need a representative it lacks."""
        cfg = self.config
        names, descriptions = self._entities(ctx, chunks)
        classes = equivalence_classes(names)
        options = {"max_chars": cfg.representative_max_chars, "shorten_tokens": cfg.shorten_tokens}

        def texts(classes: EntityClasses) -> list[Representative | None]:
            if known is None:
                return list(representatives(ctx, classes, descriptions, **options))
            return reused_representatives(classes, descriptions, max_chars=cfg.representative_max_chars, known=known)

        reps = texts(classes)
        if cfg.semantic_merge and len(classes) > 1:
            if any(r is None for r in reps):
                return None
            vectors = ctx.embedder.embed([r.text for r in reps if r is not None])
            src, dst, _ = synonym_pairs(vectors, cfg.semantic_threshold, top_k=100)
            if src.size:
                classes = merge_classes(classes, (src, dst))
                reps = texts(classes)
        return classes, reps

    def plan(self, ctx: StrategyContext, work: PlanWork) -> StrategyPlan:
        """What building now would cost: the entity pass for the chunks that lack it, then the shortenings of the
        classes known so far whose descriptions are too long (an estimate while some chunks are not extracted:
        their entities may lengthen a class); writes nothing."""
        cap = entity_cap(self.config.max_entities, ctx.config.memory.chunk_tokens)
        titles, version = strategy_reads_titles(ctx, NAME), self.version(ctx)
        todo = artifact_todo(ctx, work, strategy=NAME, kind=ENTITIES_KIND, version=version, attempts=ATTEMPTS)
        spec = extraction(cap)
        entities, answers = artifact_pass(work, todo, spec, titles=titles, typical_completion=ENTITY_TOKENS)
        found = ctx.store.artifacts(NAME, ENTITIES_KIND, ChunkEntities, version, [c.id for c in work.stored()])
        for (chunk, _), answer in zip(todo, answers, strict=True):
            if answer is not None and isinstance(answer.get("parsed"), dict):
                found[chunk.id] = ChunkEntities.model_validate(answer["parsed"])
        known = [found[c.id].entities if c.id in found else [] for c in work.chunks]
        classes = equivalence_classes([[e.name for e in chunk] for chunk in known])
        cfg = self.config
        shorten = plan_shortenings(
            work,
            classes,
            [[e.description for e in chunk] for chunk in known],
            max_chars=cfg.representative_max_chars,
            shorten_tokens=cfg.shorten_tokens,
        )
        plan = StrategyPlan(NAME, len(work.new_chunks(ctx, NAME)), [entities, shorten])
        if entities.calls:
            shorten.exact = False
            shorten.note = "over the entities known so far: the chunks still to extract may lengthen more classes"
        return plan

    def build(self, ctx: StrategyContext) -> None:
        """Extract entities for the chunks that lack them, then classes, representatives, their vectors and the
        chunk–class matrix over every chunk, published as a new generation.

        Raises:
            MemoryNotIndexedError: the memory holds no chunks.
            GemragError: a fatal model error (the artefacts committed before it stay).
        """
        require_abcvoting(self.config.rule)
        chunks = chunk_nodes(ctx)
        generation = ctx.store.begin_build(NAME)
        cap = entity_cap(self.config.max_entities, ctx.config.memory.chunk_tokens)
        titles, version = strategy_reads_titles(ctx, NAME), self.version(ctx)
        report = extract_artifacts(
            ctx, chunks, extraction(cap), strategy=NAME, kind=ENTITIES_KIND, version=version, titles=titles
        )
        built = self._classes(ctx, chunks)
        assert built is not None  # with the LLM, every class has its representative
        arrays, meta = self._assemble(ctx, generation, chunks, *built)
        meta |= {"failed_this_build": report.failed}
        publish_arrays(ctx, NAME, generation, arrays, axes=AXES, meta=meta)

    def _assemble(
        self,
        ctx: StrategyContext,
        generation: int,
        chunks: list[NodeRecord],
        classes: EntityClasses,
        found: list[Representative | None],
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The class store nodes (added to ``generation``), their vectors and the chunk–class matrix over
        ``chunks``; a class without a representative (None) is left out. Returns ``(arrays, meta)``."""
        keep = [j for j, r in enumerate(found) if r is not None]
        reps = [r for r in found if r is not None]
        chunk_ids = np.array([c.id for c in chunks], dtype=np.int64)
        vectors = ctx.embedder.embed([r.text for r in reps]) if reps else np.zeros((0, ctx.embedder.dim), np.float32)
        D = sp.csr_matrix(classes.incidence[keep])
        with ctx.store.transaction():
            class_ids = [
                ctx.store.add_node(
                    NAME,
                    generation,
                    "entity",
                    rep.name,
                    ord_=j,
                    meta={"key": classes.keys[keep[j]], "representative": rep.text, "shortened": rep.shortened},
                    sources=[int(chunk_ids[i]) for i in D.indices[D.indptr[j] : D.indptr[j + 1]]],
                )
                for j, rep in enumerate(reps)
            ]
        arrays = {
            "node_ids": chunk_ids,
            "class_ids": np.array(class_ids, dtype=np.int64),
            "class_vectors": np.asarray(vectors, dtype=np.float32),
            "incidence": D,
        }
        version = self.version(ctx)
        meta = {
            "chunks": len(chunks),
            "classes": len(reps),
            "entities": int(sum(len(classes.members[j]) for j in keep)),
            "extracted_chunks": len(
                ctx.store.artifacts(NAME, ENTITIES_KIND, ChunkEntities, version, [int(i) for i in chunk_ids])
            ),
            "entity_cap": entity_cap(self.config.max_entities, ctx.config.memory.chunk_tokens),
            "shortened": sum(r.shortened == "llm" for r in reps),
            "truncated": sum(r.shortened == "truncated" for r in reps),
        }
        return arrays, meta

    def prune(self, ctx: StrategyContext, gone: set[int], generation: int) -> Publication | None:
        """The published build as a build without the removed chunks makes it (DESIGN.md, "Forgetting": a kept node
        keeps nothing of a removed source), with no LLM call: the classes are formed again from the stored entity
        artefacts of the chunks the build covered that remain
        (:func:`~gemrag.strategies.platform.incremental.remaining_chunks`), by the paper's rule (section 2: entities
        whose names are syntactically equivalent form one class; its representative is its name and its members'
        descriptions in chunk order, Appendix A eq. 4, shortened above ``representative_max_chars``, footnote 4). So
        a class another chunk names stays with the display name of its first remaining member, the descriptions of
        the remaining chunks only and their vector, and D (eq. 6) loses the removed chunks' columns. The one
        exception: a class whose remaining descriptions are too long and differ from the published class's needs an
        LLM shortening, so it is left out until the next ``index`` makes it (a class unchanged by the removal keeps
        its shortening, :func:`~gemrag.strategies.unweaver.representatives.reused_representatives`); with
        ``semantic_merge`` and such a class, the rows of the removed chunks and classes are dropped instead
        (:meth:`_drop_rows`). The class nodes are new nodes of the pruned generation; the embedder is asked for the
        representatives' vectors again (answered by its cache for those embedded before).

        Returns:
            The rebuilt generation, written but not published; None when the strategy has no published build or no
            chunk of it remains.
        """
        inputs = rebuild_inputs(ctx, NAME, gone)
        if inputs is None:
            return None
        published, chunks = inputs
        before = remaining_chunks(ctx, NAME, set())  # the build's chunks, the removed ones still stored
        known = published_shortenings(
            *self._entities(ctx, before),
            ctx.store.nodes("entity", strategy=NAME),
            max_chars=self.config.representative_max_chars,
        )
        built = self._classes(ctx, chunks, known=known)
        if built is None:
            return self._drop_rows(ctx, published, gone, generation)
        arrays, meta = self._assemble(ctx, generation, chunks, *built)
        return pruned_publication(ctx, published, generation, arrays, dict(AXES), meta, carry=False)

    def _drop_rows(self, ctx: StrategyContext, published: Published, gone: set[int], generation: int) -> Publication:
        """The published build without the removed chunks (columns of D) and classes (rows), and without the
        classes left with no chunk: the fallback of :meth:`prune` (the classes that lost a chunk are among the
        removed nodes, :mod:`gemrag.strategies.platform.forgetting`; the next build remakes them)."""
        a = published.arrays
        gone_ids = np.fromiter(gone, dtype=np.int64, count=len(gone))
        keep_n = ~np.isin(np.asarray(a["node_ids"]), gone_ids)
        D = sp.csr_matrix(take(a["incidence"], ("e", "n"), "n", keep_n))
        keep_e = ~np.isin(np.asarray(a["class_ids"]), gone_ids) & (np.diff(D.indptr) > 0)
        arrays = {name: take(take(m, AXES[name], "n", keep_n), AXES[name], "e", keep_e) for name, m in a.items()}
        return pruned_publication(ctx, published, generation, arrays, dict(AXES))

    def _loaded(self, ctx: StrategyContext) -> LoadedUnweaver:
        return load_published(ctx, NAME, LoadedUnweaver.from_published)

    def _align(self, g: LoadedUnweaver, ballots: Ballots, v_p: np.ndarray) -> np.ndarray:
        """Each candidate's alignment price (Appendix A.2), (c,) float64."""
        R = ballots.approvals.T.toarray()  # candidates x voters
        c = np.full(R.shape[0], self.config.chunk_budget)
        if self.config.alignment == "fairness":
            return fairness_allocation(R, relevance_weights(ballots.similarity), c).prices
        return least_squares_alignment(g.class_vectors[ballots.classes], v_p, R, c).prices

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        """The chunks elected for ``question`` (module docstring).

        Returns:
            At most ``budget`` chunk hits (fewer when the voters approve fewer chunks), best first. ``score``: the
            chunk's weighted approval score (the released score for ``rule="released"``; the alignment price with
            ``alignment_use="select"``). ``meta``: ``rule``, ``classes`` (the voting classes' names, most similar
            first) and, with alignment, ``alignment``.

        Raises:
            MemoryNotIndexedError: the strategy was not built in this memory.
            GemragError: the rule's library is missing.
        """
        if ctx.store.published_generation(NAME) is None:
            raise not_indexed(ctx, NAME)
        cfg = self.config
        v_p = prompt_vector(ctx, question)
        with ctx.store.snapshot():
            g = self._loaded(ctx)
            if g.class_ids.size == 0 or budget < 1:
                return []
            ballots = approval_ballots(g.incidence, cosine_scores(v_p, g.class_vectors), cfg.top_k_classes)
            k = min(budget, int(ballots.candidates.size))
            if k == 0:
                return []
            meta: dict[str, Any] = {
                "rule": cfg.rule,
                "classes": [ctx.store.node(int(g.class_ids[j])).text for j in ballots.classes],
            }
            if cfg.alignment != "none" and cfg.alignment_use == "select":
                prices = self._align(g, ballots, v_p)
                order = np.argsort(-prices, kind="stable")[:k]
                scores = prices[order]
                meta["alignment"] = cfg.alignment
            else:
                order, scores = elect(ballots, k, cfg.rule, weighted=cfg.weighted, top_k=cfg.top_k_classes)
                if cfg.alignment != "none":
                    prices = self._align(g, ballots, v_p)
                    position = np.argsort(-prices[order], kind="stable")
                    order, scores = order[position], scores[position]
                    meta["alignment"] = cfg.alignment
            ids = g.node_ids[ballots.candidates[order]]
            return chunk_hits(ctx, ids.tolist(), np.asarray(scores, dtype=np.float64).tolist(), meta)

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        """Chunks, classes, entities, extracted chunks, shortened and truncated representatives (``gemrag info``)."""
        manifest = ctx.store.manifest(NAME)
        meta = manifest.meta if manifest else {}
        keys = ("chunks", "classes", "entities", "extracted_chunks", "shortened", "truncated")
        return {"generation": manifest.generation if manifest else None, **{k: meta.get(k) for k in keys}}
