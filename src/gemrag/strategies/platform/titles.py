"""Chunk titles per method: whether a strategy reads a chunk as ``title\\ntext`` or as its text alone.

A memory records once whether its chunks have their document's title available (``memory.chunk_titles``,
:data:`TITLES_META`, :func:`gemrag.memory.documents.record_titles`). Each strategy then decides whether it reads them
(:func:`strategy_reads_titles`), and passes its decision to every platform function that reads the chunks' text
(:func:`indexed_text_of`, :func:`indexed_nodes`, ``embed_node_ids``, ``chunk_ids_and_vectors``,
``extract_artifacts``):

* by default as its paper does, the class attribute ``reads_titles`` (:func:`gemrag.strategies.base.title_default`):
  dense, bm25 and remem read titles (HippoRAG 2 indexes ``title\\ntext`` passages; BM25 and dense were measured with
  and without them, docs/results.md); gem, unweaver, hlgraph and raptor do not (GEM-RAG section III.B.1, UnWeaver
  section 2, HLGraphRAG section 3 and RAPTOR section 3 extract from and embed the chunk alone). ``fused`` has no
  choice of its own: each part reads as it does alone. ``full``, ``remem_gist`` and ``remem_temporal`` index no chunk
  text (the LLM reads the chunks, the gists are written from conversation turns), so they read no title;
* the setting ``read_titles`` of the strategy's section overrides it (:class:`gemrag.config.ReadTitles`);
* a strategy already built keeps what its build read, unless the setting says otherwise: every build records its
  decision as ``read_titles`` in its manifest's params (``common.build_params``), and a build made before this
  choice existed read titles exactly when the memory recorded them. So an older memory's indexes never mix the two
  inputs: an incremental build reads as the build it extends, until a build with an explicit setting replaces it.

What a strategy computes once per chunk and keeps across builds (extraction artefacts, GEM's utility questions)
must not be reused across the two inputs: artefact versions carry the decision (:func:`title_version`), GEM
resets its questions when its decision changes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Protocol

from gemrag.errors import IncompatibleMemoryError
from gemrag.store import NodeRecord
from gemrag.store.parts import BuildArrays, MetaRows
from gemrag.strategies.base import StrategyContext, strategy_config, title_default

TITLES_META = "chunk_titles"
"""The memory's ``meta`` key recording whether its chunks have their document's title available to the strategies
(``memory.chunk_titles``; absent or false: no strategy reads titles)."""
READ_TITLES = "read_titles"
"""The setting of a strategy's section (:class:`gemrag.config.ReadTitles`) and the key of a build's manifest params
recording what the build read (a bool)."""
UNTITLED = frozenset({"", "text", "stdin"})
"""Titles that name no subject (the defaults of ``Memory.add_text`` and of standard input): never put before a chunk."""
UNTITLED_VERSION = "+untitled"
"""Suffix of an artefact version extracted without titles in a memory that has them (:func:`title_version`)."""


class TitleReads(MetaRows, BuildArrays, Protocol):
    """What reading the titles' settings uses of a store: the memory's meta and the builds' manifests."""


def memory_titles(store: TitleReads) -> bool:
    """Whether the memory's chunks have their document's title available (what :data:`TITLES_META` records)."""
    return bool(store.get_meta(TITLES_META, False))


def built_titles(store: TitleReads, strategy: str) -> bool | None:
    """Whether the published build of ``strategy`` read titles: what its manifest's params record, or, for a build
    made before builds recorded it, the memory's record (every strategy read titles exactly when the memory had
    them). None: never built."""
    manifest = store.manifest(strategy)
    if manifest is None:
        return None
    recorded = manifest.params.get(READ_TITLES)
    return memory_titles(store) if recorded is None else bool(recorded)


def strategy_reads_titles(ctx: StrategyContext, strategy: str) -> bool:
    """Whether ``strategy`` reads its chunks as ``title\\ntext`` in this memory now (module docstring): its
    section's ``read_titles`` when set, else what its published build read, else its paper's default; always False
    in a memory without titles and for a strategy that reads no indexed text.

    Raises:
        IncompatibleMemoryError: ``read_titles = true`` for a memory recorded without titles.
        UnknownStrategyError: no strategy has that name.
        ConfigError: its section is invalid.
    """
    default = title_default(strategy)
    if default is None:
        return False
    setting = getattr(strategy_config(strategy, ctx.config), READ_TITLES, None)
    available = memory_titles(ctx.store)
    if setting is not None:
        if setting and not available:
            raise IncompatibleMemoryError(
                f"{strategy}.read_titles = true, but this memory's chunks have no titles (memory.chunk_titles = false, "
                "or chunked before titles existed): drop the setting or index into a new memory directory"
            )
        return bool(setting)
    if not available:
        return False
    built = built_titles(ctx.store, strategy)
    return default if built is None else built


def build_titles(store: TitleReads, strategies: Sequence[str]) -> dict[str, bool]:
    """What the published build of each of ``strategies`` that reads chunk text read (``gemrag info``): name ->
    True (``title\\ntext``) or False (the text alone); strategies never built, or reading no indexed text, are left
    out. Unknown names are treated as reading no indexed text."""
    out = {}
    for name in strategies:
        try:
            reads = title_default(name) is not None
        except KeyError:
            reads = False
        built = built_titles(store, name) if reads else None
        if built is not None:
            out[name] = built
    return out


def title_version(ctx: StrategyContext, version: str, titles: bool) -> str:
    """The artefact version of an extraction of prompt version ``version`` from ``titles``' input: ``version`` when
    the input is the one extractions of this version were made from before strategies chose (the memory's record),
    else ``version`` + :data:`UNTITLED_VERSION`, so artefacts of one input are never read as the other's and an
    older memory's artefacts stay valid."""
    return version if titles == memory_titles(ctx.store) else f"{version}{UNTITLED_VERSION}"


def indexed_text_of(ctx: StrategyContext, *, titles: bool) -> Callable[[NodeRecord], str]:
    """``node -> its indexed text``: with ``titles`` (the calling strategy's :func:`strategy_reads_titles`), a chunk's
    document title, a newline and its text (HippoRAG 2's ``title\\ntext`` passages); else, for every other node,
    or a title in :data:`UNTITLED`, the node's text. The titles are read once, when this is called."""
    if not titles:
        return lambda node: node.text
    names = {int(d["id"]): str(d["title"] or "").strip() for d in ctx.store.documents()}

    def text_of(node: NodeRecord) -> str:
        title = names.get(node.doc_id, "") if node.kind == "chunk" and node.doc_id is not None else ""
        return node.text if title in UNTITLED else f"{title}\n{node.text}"

    return text_of


def indexed_nodes(ctx: StrategyContext, nodes: Sequence[NodeRecord], *, titles: bool) -> list[NodeRecord]:
    """Copies of ``nodes`` whose ``text`` is their indexed text (:func:`indexed_text_of` with ``titles``), for the
    extraction passes that read ``node.text``; ids and everything else unchanged."""
    text_of = indexed_text_of(ctx, titles=titles)
    return [dataclasses.replace(n, text=text_of(n)) for n in nodes]
