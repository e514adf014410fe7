"""Keeping strategies in step with the memory's documents: build states, stale warnings, deleting a document.

Used by :class:`gemrag.memory.Memory` (``retrieve`` checks the strategy's state once per change; ``delete``
removes a document). Every strategy's build records the chunks it covers (:mod:`gemrag.store.graph_rows`), so:

* a strategy is *never built*, *built* (over exactly the memory's chunks) or *stale* (N new chunks, N deleted);
  retrieving from a stale strategy warns once (:class:`StaleStrategyWarning`, on stderr), from an unbuilt one
  raises :class:`~gemrag.errors.MemoryNotIndexedError` naming ``gemrag index --strategy X`` (or builds it);
* deleting a document removes, in ONE transaction with a pruned generation of every built strategy
  (:mod:`gemrag.strategies.platform.incremental`), the document, its chunks, their artefacts and questions, every
  derived node with one of its chunks among its inputs (a summary, a gist, a class; an entity or a triple that
  another chunk still states stays: :mod:`gemrag.strategies.platform.forgetting`), and every edge touching them. No
  LLM call: what depended on the deleted chunks (GEM's eigenvectors and the summaries whose members changed,
  RAPTOR's clusters) is recomputed by the next ``index``, which spends LLM calls only on what changed (cached
  answers are reused). No retrieval returns a hit resting on removed text
  (:func:`~gemrag.strategies.platform.forgetting.check_inputs` in :func:`retrieve_published`). A document held by
  several sources (one document per content, :mod:`gemrag.source_plan`) loses only the source named: it stays
  while another source holds it, and goes with its last source;
* a retrieval never puts two nodes with the same text into one context (:func:`retrieve_published`): the
  best-ranked is kept and the budget is filled with the next hits.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gemrag.errors import DamagedMemoryError, GemragError, StaleGenerationError
from gemrag.store import MemoryStore
from gemrag.store.erase import PurgeReport
from gemrag.store.graph_rows import BuildState
from gemrag.store.parts import Connection
from gemrag.store.publish import Publication
from gemrag.strategies import available
from gemrag.strategies.base import WARM_UP, Strategy, StrategyContext, warm_strategy
from gemrag.strategies.platform.common import build_models, not_indexed
from gemrag.strategies.platform.forgetting import check_inputs, forgotten_nodes
from gemrag.strategies.platform.incremental import prune_strategy
from gemrag.strategies.platform.titles import build_titles
from gemrag.types import SAME_TEXT, Hit, provenance_nodes


class MemoryHandle(Protocol):
    """What this module needs of a memory (:class:`gemrag.memory.Memory` is one): its store, its strategy context,
    its strategies by name and a build. A protocol, so that lifecycle does not import the memory that uses it."""

    store: MemoryStore
    ctx: StrategyContext

    def get_strategy(self, name: str | None = None) -> Strategy: ...

    def index(self, strategy: str | None = None, *, wait: float | None = None) -> Any: ...


class StaleStrategyWarning(UserWarning):
    """Retrieval from a strategy whose build predates added or deleted documents (run ``gemrag index``)."""


@dataclass
class DeleteReport:
    """What :meth:`gemrag.memory.Memory.delete` did.

    Attributes:
        document: the deleted document (id, source, title, n_chars, chunked); when only one of its sources was
            deleted, the document with that source's ``key``, ``source`` and ``title``.
        chunks: chunks deleted. derived_nodes: strategies' nodes deleted with them (every one made from them).
        pruned: strategies republished without the deleted nodes. withdrawn: strategies whose build had to be
            dropped (they must be rebuilt). llm_calls: LLM calls spent (0 without ``rebuild``: deleting needs no
            model).
        seconds: wall time.
        kept_by: the sources still holding the document (empty: the document was deleted).
        purge: with ``purge``, what was erased besides (caches, kept versions, chat exchanges, the files:
            :class:`~gemrag.store.erase.PurgeReport`); None without. ``chunks`` and ``derived_nodes`` count the
            exchanges' too.
        rebuilt: with ``rebuild``, the LLM calls each rebuilt strategy spent (name -> calls; ``llm_calls`` is their
            sum); empty without.
    """

    document: dict[str, Any]
    chunks: int
    derived_nodes: int
    pruned: list[str]
    withdrawn: list[str]
    llm_calls: int
    seconds: float
    kept_by: list[str] = field(default_factory=list)
    purge: PurgeReport | None = None
    rebuilt: dict[str, int] = field(default_factory=dict)


def needs_build(strategy: Strategy) -> bool:
    """False for strategies with nothing to build (``needs_build = False``, e.g. ``full``)."""
    return bool(getattr(strategy, "needs_build", True))


def strategy_states(memory: MemoryHandle) -> dict[str, BuildState]:
    """The state of every registered strategy and of every strategy built in the memory, by name."""
    names = sorted(set(available()) | set(memory.store.published_generations()))
    states = {}
    for name in names:
        try:
            if not needs_build(memory.get_strategy(name)):
                continue
        except (KeyError, GemragError):  # built by a strategy this process does not know (or cannot create)
            pass
        states[name] = memory.store.build_state(name)
    return states


def record_build(memory: MemoryHandle, strategy: Strategy, before: int | None) -> None:
    """After a successful build: a strategy that published nothing (it keeps no arrays, e.g. one that reads the
    chunks directly) gets an empty generation recording the chunks it covers, so its state can be tracked like
    any other's. Strategies with nothing to build, or that published, are left alone."""
    name = strategy.name
    if not needs_build(strategy) or memory.store.published_generation(name) != before:
        return
    manifest = memory.store.manifest(name)
    if manifest is not None and (manifest.arrays or manifest.paths):
        return  # it keeps its previous generation (nothing changed for it)
    generation = memory.store.begin_build(name)
    memory.store.publish(name, generation, [], carry=True, models=build_models(memory.ctx))


def check_ready(memory: MemoryHandle, strategy: Strategy, *, build: bool) -> None:
    """Before retrieving from ``strategy``: build it when unbuilt and ``build``, raise when unbuilt, warn once
    (stderr) when stale. Cached per (published generation, chunk set), so a retrieval costs one small query.

    Raises:
        MemoryNotIndexedError: the strategy was never built and ``build`` is False.
    """
    if not needs_build(strategy):
        return
    name = strategy.name
    key = (name, memory.store.published_generation(name), memory.store.chunk_signature())
    seen: set[tuple[Any, ...]] = memory.ctx.state.setdefault("lifecycle:checked", set())
    if key in seen:
        return
    state = memory.store.build_state(name)
    if state.state == "never built":
        if not build:
            raise not_indexed(
                memory.ctx,
                name,
                f"the strategy {name!r} has not been built in this memory: run `gemrag index --strategy {name} "
                f"--memory {memory.store.location}` (or retrieve with build=True / `gemrag ask --build-missing`)",
            )
        memory.index(name)
        return check_ready(memory, strategy, build=False)
    if state.state == "stale":
        warned: set[tuple[Any, ...]] = memory.ctx.state.setdefault("lifecycle:warned", set())
        if key not in warned:
            warned.add(key)
            message = (
                f"strategy {name!r} is {state.describe()}: its results ignore the change until "
                f"`gemrag index --strategy {name}` rebuilds it"
            )
            warnings.warn(StaleStrategyWarning(message), stacklevel=3)
    seen.add(key)


def resolve_document(memory: MemoryHandle, document: int | str) -> dict[str, Any]:
    """The one document ``document`` names: an id, or a source path / title as ``gemrag info`` lists them (of the
    document or of any of its further sources).

    Raises:
        GemragError: no document or several documents match.
    """
    matches = memory.store.find_documents(str(document))
    if not matches:
        raise GemragError(f"no document {document!r} in {memory.store.location} (see `gemrag info` for the list)")
    if len(matches) > 1:
        listed = ", ".join(f"{d['id']} ({d['source']})" for d in matches[:5])
        raise GemragError(f"{document!r} names {len(matches)} documents: {listed}; give its id")
    return matches[0]


def resolve_source(memory: MemoryHandle, document: int | str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The document ``document`` names (:func:`resolve_document`) and, when it names one source of a document held
    by several (its identity, exact path or title, else the end of its path), that source (a holder dict of
    :meth:`gemrag.store.MemoryStore.holders`); None: the whole document (named by its id, or by all its sources).

    Raises:
        GemragError: no document or several documents match, or ``document`` names several but not all of the
            sources of one document.
    """
    doc = resolve_document(memory, document)
    held = memory.store.holders(int(doc["id"]))
    ref = str(document)
    if len(held) < 2 or ref.strip() == str(doc["id"]):
        return doc, None
    named: list[dict[str, Any]] = []
    for match in (
        lambda h: h["key"] == ref,
        lambda h: ref in (h["source"], h["title"]),
        lambda h: str(h["source"]).endswith(ref),
    ):
        named = named or [h for h in held if match(h)]
    if len(named) == 1:
        return doc, named[0]
    if len(named) == len(held):
        return doc, None
    listed = ", ".join(str(h["source"]) for h in named)
    raise GemragError(f"{ref!r} names {len(named)} sources of document {doc['id']}: {listed}; give its path")


def delete_document(
    memory: MemoryHandle, document: int | str, *, keep_text: bool = False
) -> tuple[dict[str, Any], int, int, list[str], list[str], list[str]]:
    """Delete one document atomically (see the module docstring), recording it in the version history (reason
    ``deleted``; its text too when ``keep_text``); the caller holds the build lock. When ``document`` names one
    source of a document other sources hold too (:func:`resolve_source`), only that source goes (recorded in its
    history); the document, its chunks and every build stay.

    Returns:
        ``(document, chunks deleted, derived nodes deleted, pruned strategies, withdrawn strategies, sources still
        holding the document)``.

    Raises:
        GemragError: no such document (or an ambiguous name).
    """
    doc, source = resolve_source(memory, document)
    if source is not None:
        store = memory.store
        others = [h for h in store.holders(int(doc["id"])) if h["key"] != source["key"]]
        named = {**doc, **{k: source[k] for k in ("key", "source", "title", "added_at")}}
        with store.transaction() as c:
            store.record_version(c, named, "deleted", keep_text=keep_text)
            store.release_holders(c, [int(doc["id"])])
            store.set_holders(c, int(doc["id"]), others)
        return named, 0, 0, [], [], [str(h["source"]) for h in others]
    removal = remove_documents(memory, [(doc, "deleted")], keep_text=keep_text)
    return doc, removal.chunks, removal.derived_nodes, removal.pruned, removal.withdrawn, []


@dataclass
class Removal:
    """What :func:`remove_chunks` removed: chunks and derived nodes deleted, strategies pruned and withdrawn, and
    (when asked: ``collect_texts``) ``texts``, every text the memory held for them (chunk and derived node texts and
    meta, utility questions, artefacts: :meth:`gemrag.store.MemoryStore.texts_of`), read before they went."""

    chunks: int
    derived_nodes: int
    pruned: list[str]
    withdrawn: list[str]
    texts: list[str] = field(default_factory=list)


def remove_chunks(
    memory: MemoryHandle,
    chunk_ids: Sequence[int],
    rows: Callable[[Connection, list[int]], None],
    *,
    collect_texts: bool = False,
) -> Removal:
    """Delete chunks in ONE transaction with a pruned generation of every built strategy (no LLM call; the caller
    holds the build lock): the derived nodes that leave with them are found
    (:func:`~gemrag.strategies.platform.forgetting.forgotten_nodes`: every node with one of them among its inputs,
    but the kinds a strategy keeps while another source states them), each built strategy's published generation is
    pruned of both, and ``rows(c, derived)`` makes the row changes inside the transaction (it must delete the chunks
    and ``derived``, e.g. with ``Store.delete_nodes``, and may change documents). ``collect_texts``: also return
    the texts they held (``Removal.texts``), for a purge."""
    store = memory.store
    derived = forgotten_nodes(store, chunk_ids)
    gone = set(chunk_ids) | set(derived)
    texts = store.texts_of(sorted(gone)) if collect_texts and gone else []
    publications: list[Publication] = []
    withdrawn: list[str] = []
    for name in sorted(store.published_generations()) if gone else []:  # nothing chunked yet: no build changes
        try:
            strategy: Strategy | None = memory.get_strategy(name)
        except (KeyError, GemragError):
            strategy = None  # built by a strategy this process does not know: pruned generically if possible
        generation = store.begin_build(name)
        publication = prune_strategy(memory.ctx, name, strategy, gone, generation)
        if publication is None:
            withdrawn.append(name)
        else:
            publications.append(publication)
    store.publish_many(publications, before=lambda c: rows(c, derived), withdraw=withdrawn)
    return Removal(len(chunk_ids), len(derived), [p.strategy for p in publications], withdrawn, texts)


def remove_documents(
    memory: MemoryHandle,
    documents: Sequence[tuple[dict[str, Any], str]],
    *,
    keep_text: bool = False,
    collect_texts: bool = False,
) -> Removal:
    """Remove whole documents in ONE transaction (:func:`remove_chunks`): each document's version is recorded in
    ``document_versions`` (with its reason, ``removed`` or ``deleted``; its text when ``keep_text``; one row per
    source when several sources hold it), then it, its chunks and the derived nodes that leave with its chunks go.

    Args:
        documents: ``(document dict as Store.documents gives it, reason)`` pairs.
        keep_text: keep each version's text in the history. collect_texts: return the removed texts
            (``Removal.texts``, the documents' own texts first), for a purge.
    """
    store = memory.store
    chunk_ids = [c for doc, _ in documents for c in store.document_chunk_ids(int(doc["id"]))]

    def rows(c: Connection, derived: list[int]) -> None:
        for doc, reason in documents:
            held = store.holders(int(doc["id"]))
            for row in [{**doc, **{k: h[k] for k in ("key", "source", "title", "added_at")}} for h in held] or [doc]:
                store.record_version(c, row, reason, keep_text=keep_text)
        store.delete_nodes(c, derived)
        for doc, _ in documents:
            store.delete_rows(c, int(doc["id"]), [])

    own = [store.document_text(int(doc["id"])) for doc, _ in documents] if collect_texts else []
    removal = remove_chunks(memory, chunk_ids, rows, collect_texts=collect_texts)
    return dataclasses.replace(removal, texts=[*own, *removal.texts])


FILL_ROUNDS = 3
"""Retrievals at most per question when repeated texts are dropped (:func:`retrieve_published`): the first, then up
to two with a budget grown by the number of repeats, to fill the context with the next hits."""


def distinct_texts(hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` without any hit whose text an earlier (better-ranked) hit already has, ranks renumbered 0, 1, ...

    Two nodes with the same text (the same passage stored under two documents, a summary repeating a passage) would
    take two places in a context for one piece of information; every retrieval goes through this
    (:func:`retrieve_published`), whatever the strategy. The kept hit lists the dropped ones' nodes in
    ``meta[SAME_TEXT]`` (:data:`gemrag.types.SAME_TEXT`), so its provenance keeps their sources
    (:func:`gemrag.provenance.with_provenance`)."""
    first: dict[str, int] = {}
    out: list[Hit] = []
    for h in hits:
        at = first.get(h.text)
        if at is not None:
            kept = out[at]
            same = [*_same_text(kept), *provenance_nodes(h), *_same_text(h)]
            out[at] = dataclasses.replace(kept, meta={**kept.meta, SAME_TEXT: list(dict.fromkeys(same))})
            continue
        first[h.text] = len(out)
        out.append(h if h.rank == len(out) else dataclasses.replace(h, rank=len(out)))
    return out


def _same_text(hit: Hit) -> list[int]:
    """The nodes a hit already stands for beside its own (``meta[SAME_TEXT]``)."""
    named = hit.meta.get(SAME_TEXT)
    return [int(i) for i in named] if isinstance(named, list) else []


def retrieve_published(
    ctx: StrategyContext, strategy: Strategy, question: str, budget: int, attempts: int = 3
) -> list[Hit]:
    """``strategy.retrieve`` on its last published generation (:func:`read_published`), without repeated texts
    (:func:`distinct_texts`): when some were dropped and the strategy filled its budget, it is asked again with the
    budget grown by the number dropped (at most :data:`FILL_ROUNDS` retrievals in all), so the context keeps as
    many hits as the strategy first gave (fewer only when the memory holds fewer distinct texts).

    Raises:
        DamagedMemoryError: the published generation's files are missing or mismatched and no newer one exists.
        StaleGenerationError: generations kept changing for all ``attempts``.
        ForgottenTextError: a hit rests on removed text
            (:func:`~gemrag.strategies.platform.forgetting.check_inputs`): nothing is returned.
    """
    asked = budget
    hits = read_published(ctx, strategy, question, asked, attempts)
    wanted = len(hits)
    unique = distinct_texts(hits)
    for _ in range(FILL_ROUNDS - 1):
        if len(unique) >= wanted or len(unique) == len(hits) or len(hits) < asked:
            break
        asked += len(hits) - len(unique)
        hits = read_published(ctx, strategy, question, asked, attempts)
        unique = distinct_texts(hits)
    check_inputs(ctx.store, unique[:wanted])
    return unique[:wanted]


def warm_published(memory: MemoryHandle, strategy: str | None, budget: int) -> None:
    """Load what ``strategy``'s retrieval reads on its published generation (arrays; for ``iterative`` and the REMem
    strategies also the LLM, with no call), so that the next retrieval times retrieval alone: ``gemrag eval``'s
    untimed warm-up (:func:`~gemrag.strategies.base.warm_strategy`, ``budget`` in nodes), in the read scope of
    :meth:`gemrag.memory.Memory.retrieve`.

    Raises:
        MemoryNotIndexedError: the strategy has not been built. DamagedMemoryError: its files do not match its
            manifest. StaleGenerationError: another process published a newer generation while it loaded (not
            retried: the next retrieval reads the newer one).
    """
    chosen = memory.get_strategy(strategy)
    embedder = memory.ctx.embedder
    with memory.ctx.meter.phase("query"), memory.store.retrieval((embedder.model_id, [embedder.key(WARM_UP)])):
        check_ready(memory, chosen, build=False)
        warm_strategy(memory.ctx, chosen, budget)


def read_published(
    ctx: StrategyContext, strategy: Strategy, question: str, budget: int, attempts: int = 3
) -> list[Hit]:
    """``strategy.retrieve`` on its last published generation; when a newer generation is published while it is
    read (the old generation's files removed: :class:`~gemrag.errors.StaleGenerationError`), read the newer one,
    up to ``attempts`` times in all.

    Raises:
        DamagedMemoryError: the published generation's files are missing or mismatched and no newer one exists.
        StaleGenerationError: generations kept changing for all ``attempts``.
    """
    for attempt in range(attempts):
        try:
            return strategy.retrieve(ctx, question, budget)
        except StaleGenerationError as exc:  # a newer generation was published while reading: read it
            if ctx.store.published_generation(exc.strategy or strategy.name) == exc.generation:
                raise DamagedMemoryError(
                    f"the memory {ctx.store.location} is damaged: {exc}, yet no newer generation exists; "
                    "run `gemrag index` again to rebuild it"
                ) from exc
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def memory_stats(memory: MemoryHandle, strategy: Strategy) -> dict[str, Any]:
    """What :meth:`gemrag.memory.Memory.stats` reports: the memory's documents, the sources holding each (``sources``:
    document id -> source paths, primary first, for the documents several sources hold), chunk and summary counts,
    models, parameters, index seconds, tokens per phase, failures, ``strategy``'s own report (GEM: the spectrum report
    with Remarks 2 and 3), every strategy's build state (:func:`strategy_states`) and ``titles``: whether each built
    strategy that reads chunk text read the chunks' titles (name -> bool,
    :func:`gemrag.strategies.platform.titles.build_titles`)."""
    store = memory.store
    sources: dict[int, list[str]] = {}
    for h in store.holders():
        sources.setdefault(int(h["doc_id"]), []).append(str(h["source"]))
    return {
        "directory": store.location,
        "strategy": strategy.name,
        "documents": store.documents(),
        "sources": {i: s for i, s in sources.items() if len(s) > 1},
        "chunks": len(store.nodes("chunk")),
        "summary_nodes": len(store.nodes("summary")),
        "models": store.get_meta("models", {}),
        "params": store.get_meta("params", {}),
        "chunk_tokens": store.get_meta("chunk_tokens"),
        "index_seconds": store.get_meta("index_seconds", 0.0),
        "usage_by_phase": store.usage_by_phase(),
        "failures": store.failures(),
        "strategy_report": strategy.report(memory.ctx),
        "strategies": {name: state.describe() for name, state in strategy_states(memory).items()},
        "titles": build_titles(store, sorted(store.published_generations())),
    }
