"""Building blocks every strategy over the memory's chunks shares (one place, no copies per strategy).

* the chunks and their embeddings (through ``ctx.embedder``, which caches every vector in the memory, so
  strategies sharing a memory embed each text once);
* the prompt vector, top-B selection and cosine ranking (the "Embed" baseline of the GEM-RAG paper,
  section IV);
* publishing a strategy's build as a generation and loading the published one (once per generation), with a
  clear error before ``index``;
* MiniLM token counts (the unit of the chunk size T and of token budgets);
* turning ranked chunk ids into :class:`~gemrag.types.Hit` lists;
* checking that an optional dependency (the ``eval`` extra) is installed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Literal, TypeVar

import numpy as np
from numpy.typing import NDArray
from tokenizers import Tokenizer

from gemrag.errors import GemragError, MemoryNotIndexedError
from gemrag.graph.validate import top_indices, unit_rows
from gemrag.ingest.tokenizer import minilm_tokenizer
from gemrag.store import NodeRecord, Published
from gemrag.store.arrays import Matrix
from gemrag.store.publish_types import Edges, Publication
from gemrag.store.schema import REBUILD_META
from gemrag.strategies.base import StrategyContext, strategy_config, title_default
from gemrag.strategies.platform.titles import READ_TITLES, indexed_text_of, strategy_reads_titles
from gemrag.types import Hit


def document_order(node: NodeRecord) -> tuple[int, int, int]:
    """Sort key of chunks in reading order: by document id (documents in the order first added; a new version of a
    source keeps its document's id, so its place), then position in the document."""
    return (node.doc_id or 0, node.ord, node.id)


def chunk_nodes(ctx: StrategyContext) -> list[NodeRecord]:
    """Every chunk of the memory in reading order (:func:`document_order`: documents in the order first added, each
    in document order; the same as id order unless a source was updated).

    Raises:
        MemoryNotIndexedError: the memory holds no chunks (add documents and run ``index`` first).
    """
    chunks = sorted(ctx.store.nodes("chunk"), key=document_order)
    if not chunks:
        raise MemoryNotIndexedError("the memory holds no text: add documents and run `gemrag index` first")
    return chunks


def embed_node_ids(ctx: StrategyContext, node_ids: Sequence[int], *, titles: bool) -> NDArray[np.float32]:
    """``E(indexed text)`` of the given store nodes (:func:`~gemrag.strategies.platform.titles.indexed_text_of`: a
    chunk's title and text with ``titles``, the calling strategy's decision), through the memory's cached embedder.

    Returns:
        ``(len(node_ids), d)`` float32, unit rows.

    Raises:
        KeyError: a node id is not in the store.
    """
    text_of = indexed_text_of(ctx, titles=titles)
    return ctx.embedder.embed([text_of(ctx.store.node(int(i))) for i in node_ids])


def chunk_ids_and_vectors(
    ctx: StrategyContext, chunks: Sequence[NodeRecord] | None = None, *, titles: bool
) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """All chunk ids and their vectors ``v_i = E(CHUNK_i)`` (of the chunks' indexed text,
    :func:`~gemrag.strategies.platform.titles.indexed_text_of`), in store order.

    Args:
        ctx: the strategy context.
        chunks: the chunks if already loaded (default: :func:`chunk_nodes`).
        titles: whether the calling strategy reads titles
            (:func:`~gemrag.strategies.platform.titles.strategy_reads_titles`).

    Returns:
        ``(ids (n,) int64, vectors (n, d) float32 unit rows)``.

    Raises:
        MemoryNotIndexedError: the memory holds no chunks.
    """
    nodes = list(chunks) if chunks is not None else chunk_nodes(ctx)
    ids = np.array([n.id for n in nodes], dtype=np.int64)
    text_of = indexed_text_of(ctx, titles=titles)
    return ids, ctx.embedder.embed([text_of(n) for n in nodes])


def prompt_vector(ctx: StrategyContext, question: str) -> NDArray[np.float32]:
    """``v_p = E(p)``: the question's embedding, ``(d,)`` float32."""
    vector: NDArray[np.float32] = ctx.embedder.embed([question])[0]
    return vector


def cosine_scores(prompt_vec: NDArray[np.floating], vectors: NDArray[np.floating]) -> NDArray[np.float64]:
    """``cos(v_p, v_u)`` for every row ``v_u`` of ``vectors``.

    Args:
        prompt_vec: ``(d,)`` float, not all zero.
        vectors: ``(n, d)`` float (any norm; an all-zero row scores 0).

    Returns:
        ``(n,)`` float64 cosines in ``[-1, 1]``.

    Raises:
        ValueError: the prompt vector is all zero or the dimensions disagree.
    """
    p = np.asarray(prompt_vec, dtype=np.float64)
    norm = float(np.linalg.norm(p))
    if norm == 0.0:
        raise ValueError("the prompt vector is all zero")
    mat = np.asarray(vectors)
    if mat.ndim != 2 or mat.shape[1] != p.shape[0]:
        raise ValueError(f"vectors must have shape (n, {p.shape[0]}), got {mat.shape}")
    return unit_rows(mat) @ (p / norm)


def top_k(scores: NDArray[np.floating], budget: int) -> NDArray[np.int64]:
    """Indices of the ``budget`` highest scores, best first, ties to the lower index (the rule every strategy
    and :mod:`gemrag.strategies.gem.search` use). ``budget > n`` returns all ``n``."""
    return top_indices(np.asarray(scores, dtype=np.float64), budget)


def cosine_ranking(
    prompt_vec: NDArray[np.floating], vectors: NDArray[np.floating], budget: int
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Top-``budget`` rows by cosine similarity to the prompt (ties: lower index first).

    Returns:
        ``(indices (min(B, n),) int64 best first, their cosines float64)``.

    Raises:
        ValueError: as :func:`cosine_scores`.
    """
    scores = cosine_scores(prompt_vec, vectors)
    order = top_k(scores, budget)
    return order, scores[order]


def nearest(
    ctx: StrategyContext,
    published: tuple[str, int],
    name: str,
    vectors: NDArray[np.floating],
    prompt_vec: NDArray[np.floating],
    k: int,
    rows: NDArray[np.int64] | None = None,
    unit: NDArray[np.floating] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The ``k`` rows of a published vector array most cosine-similar to the prompt, through the store's
    vector-search part (:meth:`gemrag.store.vectors.ExactSearch.nearest`: numpy on SQLite, pgvector on PostgreSQL),
    with the rule of :func:`cosine_ranking` (best first, ties to the lower row). On SQLite, an array published with an
    HNSW artefact (``search`` arrays of at least :data:`~gemrag.store.hnsw.ANN_ABOVE` rows) is searched
    approximately: HNSW candidates rescored exactly (:mod:`gemrag.store.hnsw`).

    Args:
        ctx: the strategy context.
        published: ``(strategy, generation)`` of the loaded build the array belongs to.
        name: the array's name (indexed when published with ``search=[name]``).
        vectors: ``(n, d)`` float, the array as loaded.
        prompt_vec: ``(d,)`` float, not all zero.
        k: how many rows.
        rows: optional ``(m,)`` int rows to search among.
        unit: optional ``(n, d)`` unit rows (float32 or float64) of ``vectors``, made once per loaded build
            (:func:`gemrag.graph.ann.unit_rows32`; no float64 copy per query).

    Returns:
        ``(row indices (min(k, m),) int64 into vectors, cosines float64)``, best first.

    Raises:
        ValueError: a zero or mis-sized prompt vector.
    """
    strategy, generation = published
    return ctx.store.nearest(strategy, generation, name, vectors, prompt_vec, k, rows=rows, unit=unit)


T = TypeVar("T")


def build_params(ctx: StrategyContext, strategy: str) -> dict[str, Any]:
    """Strategy ``strategy``'s validated configuration section as JSON values, for its manifest (``{}`` for a
    strategy without settings, or a name no strategy is registered under); for a strategy that reads chunk text,
    ``read_titles`` is what this build read (a bool,
    :func:`~gemrag.strategies.platform.titles.strategy_reads_titles`), so later builds and ``gemrag info`` know it.

    Raises:
        ConfigError: the section is invalid (checked when the memory opened, so not in practice).
    """
    try:
        section = strategy_config(strategy, ctx.config)
        reads_chunk_text = title_default(strategy) is not None
    except KeyError:
        return {}
    params = section.model_dump(mode="json") if section is not None else {}
    if reads_chunk_text:
        params[READ_TITLES] = strategy_reads_titles(ctx, strategy)
    return params


def build_models(ctx: StrategyContext) -> dict[str, Any]:
    """The model ids a build used, for its manifest: the embedder's, and the LLM's once it was loaded."""
    models: dict[str, Any] = {"embedder": ctx.embedder.model_id}
    llm = ctx.state.get(LLM_MODEL_KEY)
    if llm is not None:
        models["llm"] = llm
    return models


LLM_MODEL_KEY = "models:llm"
"""``ctx.state`` key holding the loaded LLM's model id (set by :class:`gemrag.memory.Memory`)."""


SEARCH_META = "vector_search"
"""Manifest ``meta`` key listing the arrays a build published for :func:`nearest` (a pruned generation keeps
them indexed)."""


def write_publication(
    ctx: StrategyContext,
    strategy: str,
    generation: int,
    arrays: dict[str, Matrix],
    *,
    axes: dict[str, tuple[str, ...]] | None = None,
    meta: dict[str, Any] | None = None,
    paths: Sequence[str] = (),
    edges: Edges | Mapping[str, Edges] | None = None,
    covers: Sequence[int] | Literal["keep"] | None = None,
    carry: bool = False,
    retire: Sequence[int] = (),
    search: Sequence[str] = (),
) -> Publication:
    """Write a build's arrays (dense numpy arrays or scipy.sparse matrices) as generation ``generation`` and
    return its :class:`~gemrag.store.publish.Publication` (parameters and model ids filled in), not yet
    published. ``axes`` names each array's dimensions so readers can check they agree. ``carry`` keeps the
    previous generation's nodes and edges, except the node ids in ``retire`` (and their edges). ``search`` names
    the ``(n, d)`` vector arrays that :func:`nearest` searches: the store's vector-search part indexes them (see
    :meth:`gemrag.store.vectors.ExactSearch.index_vectors`): in the database where it can (PostgreSQL + pgvector), or
    as an HNSW artefact published with the build (SQLite, from :data:`~gemrag.store.hnsw.ANN_ABOVE` rows on).

    Raises:
        ValueError: bad array names, ``axes`` that do not match an array, or a ``search`` name that is not an array.
    """
    names = axes or {}
    entries = [ctx.store.write_array(strategy, generation, name, a, names.get(name)) for name, a in arrays.items()]
    indexes = []
    for name in search:
        if name not in arrays:
            raise ValueError(f"search names {name!r}, which is not one of the build's arrays")
        indexes += ctx.store.index_vectors(strategy, generation, name, np.asarray(arrays[name]))
    if search:
        meta = {**(meta or {}), SEARCH_META: list(search)}
    return Publication(
        strategy,
        generation,
        entries,
        meta,
        [*paths, *indexes],
        edges,
        covers,
        build_params(ctx, strategy),
        build_models(ctx),
        carry,
        tuple(int(n) for n in retire),
    )


def publish_arrays(
    ctx: StrategyContext, strategy: str, generation: int, arrays: dict[str, Matrix], **options: Any
) -> None:
    """Write a build's arrays as generation ``generation`` and publish it atomically with its parameters, model
    ids and the chunks it covers (see :mod:`gemrag.store.publish`). ``options`` are those of
    :func:`write_publication` (``axes``, ``meta``, ``paths``, ``edges``, ``covers`` — None: every chunk now —
    ``carry`` and ``search``).

    Raises:
        ValueError: arrays disagree on a named axis.
        TypeError: an unknown option.
    """
    ctx.store.publish_many([write_publication(ctx, strategy, generation, arrays, **options)])


def not_indexed(ctx: StrategyContext, strategy: str, message: str | None = None) -> MemoryNotIndexedError:
    """The error for a strategy with no published build (naming the fix, and why when an older gemrag's index
    was not adopted by the schema upgrade)."""
    if strategy in (ctx.store.get_meta(REBUILD_META) or []):
        return MemoryNotIndexedError(
            f"this memory's {strategy!r} index was written by an older gemrag and could not be verified (an "
            f"interrupted build?): rebuild it with `gemrag index` (strategy {strategy}); cached LLM answers make "
            "that cost no LLM call"
        )
    return MemoryNotIndexedError(
        message
        or f"this memory has no {strategy!r} index yet: build it first "
        f"(Memory.index(strategy={strategy!r}), or `gemrag index` with GEMRAG_STRATEGY={strategy})"
    )


def load_published(
    ctx: StrategyContext,
    strategy: str,
    make: Callable[[Published], T],
    *,
    mmap: bool = True,
    message: str | None = None,
) -> T:
    """``make(published build)``, computed once per published generation and kept in ``ctx.state``.

    A newer generation published by another process is picked up at the next call. Call it inside
    ``ctx.store.snapshot()`` when later reads (node texts) must belong to the same generation.

    Raises:
        MemoryNotIndexedError: the strategy was never built in this memory (``message`` overrides the text).
        StaleGenerationError: the generation was replaced while it was read (retry).
        DamagedMemoryError: its files do not match its manifest.
    """
    generation = ctx.store.published_generation(strategy)
    if generation is None:
        raise not_indexed(ctx, strategy, message)
    key = f"published:{strategy}"
    cached = ctx.state.get(key)
    if cached is not None and cached[0] == generation:
        value: T = cached[1]
        return value
    published = ctx.store.load_published(strategy, mmap=mmap)
    if published is None:
        raise not_indexed(ctx, strategy, message)
    value = make(published)
    ctx.state[key] = (published.generation, value)
    return value


@lru_cache(maxsize=1)
def _counter() -> Tokenizer:
    return minilm_tokenizer()


def count_tokens(text: str) -> int:
    """Length of ``text`` in all-MiniLM-L6-v2 WordPiece tokens (no special tokens): the unit of the chunk
    size T and of the token budgets (``budget x chunk_tokens``)."""
    return len(_counter().encode(text, add_special_tokens=False).ids)


def chunk_hits(
    ctx: StrategyContext,
    node_ids: Sequence[int],
    scores: Sequence[float],
    meta: dict[str, Any] | None = None,
) -> list[Hit]:
    """Hits for ranked chunk ids (kind ``"chunk"``, text from the store, ranks 0, 1, ...).

    Args:
        ctx: the strategy context.
        node_ids: store ids of chunk nodes, best first.
        scores: the strategy's score of each, same length.
        meta: extra fields copied into every hit's ``meta``.
    """
    nodes = ctx.store.nodes_by_id(node_ids)  # one query, not one per hit (a round trip each on PostgreSQL)
    return [
        Hit(int(nid), "chunk", float(score), nodes[int(nid)].text, rank, dict(meta or {}))
        for rank, (nid, score) in enumerate(zip(node_ids, scores, strict=True))
    ]


def require(*modules: str, strategy: str) -> None:
    """Check that optional packages are importable, without importing them.

    Raises:
        GemragError: a module is missing; the message names the ``eval`` extra that provides it.
    """
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise GemragError(f"the {strategy!r} strategy needs {', '.join(missing)}: pip install 'gemrag[eval]'")


def warm_loaded(ctx: StrategyContext, load: Callable[[StrategyContext], object], *, llm: bool) -> None:
    """A ``warm`` method's body (:func:`gemrag.strategies.base.warm_strategy`) for a strategy that may call the LLM
    at query time: ``load(ctx)`` its published generation (e.g. through :func:`load_published`) and, when ``llm``,
    load the LLM, spending no LLM call (a warm-up question would spend the strategy's query-time calls).

    Raises:
        MemoryNotIndexedError: the strategy was never built. StaleGenerationError, DamagedMemoryError: as
            :func:`load_published`. GemragError: the LLM failed to load.
    """
    with ctx.store.snapshot():
        load(ctx)
    if llm:
        ctx.get_llm()
