"""The store facade: what the rest of gemrag holds of a memory, whatever database holds it.

:class:`MemoryStore` is a facade over part objects (:mod:`gemrag.store.parts`: database, rows, documents, artefacts,
build arrays, vector search, caches, build lock), which a backend builds in one place and keeps in a
:class:`~gemrag.store.parts.StoreParts`:

* SQLite (:func:`gemrag.store.sqlite.store.sqlite_parts`): one memory = one directory (``memory.sqlite`` +
  generation-named array files): the SQLite database part, the arrays as files
  (:class:`~gemrag.store.files.FileArrays`), vector search in numpy with an HNSW artefact of large arrays
  (:class:`~gemrag.store.hnsw.HnswSearch`), a file build lock;
* PostgreSQL (:func:`gemrag.store.postgres.store.pg_parts`): one memory = one PostgreSQL schema (every row and every
  array of a build in the database, vector search in pgvector, the build lock a PostgreSQL advisory lock).

The rows, documents, artefacts, caches and build generations are written once (:mod:`~gemrag.store.rows`,
:mod:`~gemrag.store.graph_rows`, :mod:`~gemrag.store.documents`, :mod:`~gemrag.store.artifacts`,
:mod:`~gemrag.store.caches`, :mod:`~gemrag.store.publish`) in SQLite's dialect, run as it is on SQLite and translated
by :mod:`gemrag.store.postgres.dialect` on PostgreSQL.

The facade subclasses the protocol of every part (:class:`~gemrag.store.parts.MemoryParts`), so the API reference
and :func:`help` read each member's signature and contract where it is declared, once; the class body names each
member once, made from its declaration (``nodes = _member("rows", Rows.nodes)``, :func:`_member`): a method (or a
property) with the declared signature and docstring that forwards the call to the part that has it, looked up at each
call (a part swapped in :attr:`MemoryStore.parts` is the one called). A type checker reads each such member as the
declaration itself, so it sees a concrete class with the protocols' signatures (``Store(...)``, ``PostgresStore(...)``
and ``MemoryStore(parts)`` type-check; ``tests/store/test_store_types.py`` runs mypy on such code); a protocol member
the class body does not name is an error when this module is imported. A caller types against the protocols of the
roles it uses.
``examples/custom_store.py`` swaps parts."""

from __future__ import annotations

import functools
from typing import Any, TypeVar, cast

from gemrag.store.parts import (
    PART_ROLES,
    Artifacts,
    BuildArrays,
    BuildLocking,
    Caches,
    Database,
    Documents,
    MemoryParts,
    Rows,
    StoreDatabase,
    StoreParts,
    VectorSearch,
    role_members,
)

__all__ = ["MemoryStore"]

_Declared = TypeVar("_Declared")


def _forwarder(field: str, name: str, declared: Any) -> object:
    """The facade's member ``name``, declared by the protocol of the part ``field`` as ``declared`` (a function or a
    property): a property reading the part's attribute, or a method calling the part's, with the declared docstring
    and signature (``__wrapped__``, as :func:`functools.wraps` gives)."""

    def part(store: MemoryStore) -> Any:
        return getattr(store.parts, field)

    if isinstance(declared, property):
        return property(lambda store: getattr(part(store), name), doc=declared.__doc__)

    def member(store: MemoryStore, /, *args: Any, **kwargs: Any) -> Any:
        return getattr(part(store), name)(*args, **kwargs)

    functools.update_wrapper(member, declared)
    member.__module__, member.__qualname__ = __name__, f"MemoryStore.{name}"
    return member


def _member(field: str, declared: _Declared) -> _Declared:
    """The facade's member declared as ``declared`` (a method or a property of the protocol of the part ``field``,
    :data:`~gemrag.store.parts.PART_ROLES`), forwarding to that part (:func:`_forwarder`). Typed as the declaration
    itself, so a type checker reads the member with the protocol's signature, implemented.

    Raises:
        TypeError: ``declared`` is not what the protocol of ``field`` declares under its name (a member named under
            the wrong part).
    """
    function = declared.fget if isinstance(declared, property) else declared
    name = getattr(function, "__name__", "")
    if getattr(PART_ROLES[field], name, None) is not declared:
        role = PART_ROLES[field].__name__
        raise TypeError(f"{declared!r} is not {role}.{name}: the {field} part does not declare it")
    return cast(_Declared, _forwarder(field, name, declared))


# Made outside the class: inside it, mypy would infer _member's type variable from the inherited member's Literal type
# (Dialect) rather than from the argument; here it is inferred from the argument, the property as declared.
_DIALECT = _member("database", Database.dialect)


class MemoryStore(MemoryParts):
    """A memory's store: documents, chunks and derived nodes, utility questions, edges, artefacts, the model caches,
    usage, failures and the published builds, each kept by one part (see the module docstring for the backends).

    Every member of the part protocols (:class:`gemrag.store.parts.MemoryParts`) is a member of the store, answered
    by its part (``store.nodes(...)`` is ``store.parts.rows.nodes(...)``), with the protocol's signature and docstring.

    Args:
        parts: the part objects, every one set.

    Attributes:
        parts: the part objects.

    Raises:
        ValueError: a part is missing.
    """

    def __init__(self, parts: StoreParts) -> None:
        missing = parts.missing()
        if missing:
            raise ValueError(f"a store needs every part; missing: {', '.join(missing)}")
        self.parts = parts

    @property
    def database(self) -> StoreDatabase:
        """The database part (where the rows live; its backend's own attributes, e.g. a SQLite memory's
        ``directory``, are there)."""
        return self.parts.database

    # the database part (Database)
    dialect = _DIALECT
    readonly = _member("database", Database.readonly)
    location = _member("database", Database.location)
    in_snapshot = _member("database", Database.in_snapshot)
    transaction = _member("database", Database.transaction)
    snapshot = _member("database", Database.snapshot)
    retrieval = _member("database", Database.retrieval)
    secure_deletes = _member("database", Database.secure_deletes)
    erase_physically = _member("database", Database.erase_physically)
    close = _member("database", Database.close)
    # the rows part (Rows)
    build_state = _member("rows", Rows.build_state)
    covered_chunks = _member("rows", Rows.covered_chunks)
    delete_rows = _member("rows", Rows.delete_rows)
    delete_nodes = _member("rows", Rows.delete_nodes)
    add_edges = _member("rows", Rows.add_edges)
    edges = _member("rows", Rows.edges)
    edge_list = _member("rows", Rows.edge_list)
    set_questions = _member("rows", Rows.set_questions)
    fail_questions = _member("rows", Rows.fail_questions)
    reset_questions = _member("rows", Rows.reset_questions)
    questions = _member("rows", Rows.questions)
    nodes = _member("rows", Rows.nodes)
    node = _member("rows", Rows.node)
    nodes_by_id = _member("rows", Rows.nodes_by_id)
    passages = _member("rows", Rows.passages)
    add_node = _member("rows", Rows.add_node)
    add_summary_node = _member("rows", Rows.add_summary_node)
    node_sources = _member("rows", Rows.node_sources)
    nodes_only_from = _member("rows", Rows.nodes_only_from)
    nodes_citing = _member("rows", Rows.nodes_citing)
    texts_of = _member("rows", Rows.texts_of)
    add_document = _member("rows", Rows.add_document)
    documents = _member("rows", Rows.documents)
    document_text = _member("rows", Rows.document_text)
    unchunked_documents = _member("rows", Rows.unchunked_documents)
    add_chunks = _member("rows", Rows.add_chunks)
    find_documents = _member("rows", Rows.find_documents)
    document_chunk_ids = _member("rows", Rows.document_chunk_ids)
    chunk_signature = _member("rows", Rows.chunk_signature)
    get_meta = _member("rows", Rows.get_meta)
    set_meta = _member("rows", Rows.set_meta)
    # the documents part (Documents)
    document_by_key = _member("documents", Documents.document_by_key)
    documents_with_text = _member("documents", Documents.documents_with_text)
    holders = _member("documents", Documents.holders)
    release_holders = _member("documents", Documents.release_holders)
    set_holders = _member("documents", Documents.set_holders)
    insert_document = _member("documents", Documents.insert_document)
    update_document = _member("documents", Documents.update_document)
    place_chunks = _member("documents", Documents.place_chunks)
    set_inputs = _member("documents", Documents.set_inputs)
    document_inputs = _member("documents", Documents.document_inputs)
    documents_resting_on = _member("documents", Documents.documents_resting_on)
    record_version = _member("documents", Documents.record_version)
    document_history = _member("documents", Documents.document_history)
    # the artifacts part (Artifacts)
    put_artifact = _member("artifacts", Artifacts.put_artifact)
    put_artifacts = _member("artifacts", Artifacts.put_artifacts)
    get_artifact = _member("artifacts", Artifacts.get_artifact)
    artifacts = _member("artifacts", Artifacts.artifacts)
    missing_artifacts = _member("artifacts", Artifacts.missing_artifacts)
    artifact_counts = _member("artifacts", Artifacts.artifact_counts)
    delete_artifacts = _member("artifacts", Artifacts.delete_artifacts)
    # the arrays part (BuildArrays)
    published_generation = _member("arrays", BuildArrays.published_generation)
    published_generations = _member("arrays", BuildArrays.published_generations)
    manifest = _member("arrays", BuildArrays.manifest)
    load_published = _member("arrays", BuildArrays.load_published)
    begin_build = _member("arrays", BuildArrays.begin_build)
    write_array = _member("arrays", BuildArrays.write_array)
    artifact_path = _member("arrays", BuildArrays.artifact_path)
    sync_path = _member("arrays", BuildArrays.sync_path)
    publish = _member("arrays", BuildArrays.publish)
    publish_many = _member("arrays", BuildArrays.publish_many)
    withdraw = _member("arrays", BuildArrays.withdraw)
    stale_files = _member("arrays", BuildArrays.stale_files)
    remove_stale_files = _member("arrays", BuildArrays.remove_stale_files)
    remove_unpublished = _member("arrays", BuildArrays.remove_unpublished)
    # the vectors part (VectorSearch)
    index_vectors = _member("vectors", VectorSearch.index_vectors)
    nearest = _member("vectors", VectorSearch.nearest)
    # the caches part (Caches)
    get_embeddings = _member("caches", Caches.get_embeddings)
    put_embeddings = _member("caches", Caches.put_embeddings)
    get_llm = _member("caches", Caches.get_llm)
    put_llm = _member("caches", Caches.put_llm)
    cached_llm = _member("caches", Caches.cached_llm)
    recent_llm_responses = _member("caches", Caches.recent_llm_responses)
    llm_cache_counts = _member("caches", Caches.llm_cache_counts)
    log_usage = _member("caches", Caches.log_usage)
    usage_by_phase = _member("caches", Caches.usage_by_phase)
    usage_mark = _member("caches", Caches.usage_mark)
    usage_after = _member("caches", Caches.usage_after)
    record_failure = _member("caches", Caches.record_failure)
    failures = _member("caches", Caches.failures)
    forget_marks = _member("caches", Caches.forget_marks)
    forgotten_marks = _member("caches", Caches.forgotten_marks)
    purge_caches = _member("caches", Caches.purge_caches)
    # the lock part (BuildLocking)
    build_lock = _member("lock", BuildLocking.build_lock)


_unnamed = [name for role in PART_ROLES.values() for name in role_members(role) if name not in vars(MemoryStore)]
if _unnamed:  # a protocol member the class body forgot would answer with the protocol's empty body
    raise TypeError(f"MemoryStore names no member {', '.join(_unnamed)}: add `name = _member(part, Role.name)`")
