"""A store is a facade over part objects (``gemrag.store.parts``): each backend's part objects against each role
protocol's method signatures, parameter by parameter; every public method of a part declared by its protocol (the rest
is private); the facade having every member with its protocol's signature and forwarding each call, with its
arguments, to the part that has it, a swapped part included; swapping parts through ``open_store(parts=...)``."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

from backends import MemoryAt
from gemrag.store import MemoryStore, open_store
from gemrag.store.parts import (
    PART_ROLES,
    BuildLockLike,
    Erasing,
    MemoryParts,
    SourceStore,
    StoreDatabase,
    StrategyStore,
    role_members,
)

BACKEND_ATTRIBUTES = {
    "database": {"build_lock", "busy_timeout", "conn", "directory", "durable", "path"}
    | {
        "url",
        "conninfo",
        "schema",
        "hnsw_above",
        "ef_search",
        "pgvector",
        "scratch",
        "has_scratch",
        "restart_snapshot",
    },
    "arrays": {"arrays_directory", "stale_arrays"},
    "vectors": {"database_rows", "drop_vectors"},
}
"""Public names a backend's part has beyond its protocol: its own settings and what its sibling parts of the same
backend call (a PostgreSQL memory's build arrays drop the vector tables of the generations they remove)."""


def _members(role: type) -> list[str]:
    """The members a part must have: its protocol's, and for the database the internal ones the other parts call."""
    names = role_members(role)
    return names + (["_query", "_best_effort"] if role.__name__ == "Database" else [])


def _declared(role: type, name: str) -> Any:
    """What ``role`` (or the role protocol it is made of that declares it) declares as ``name``; None for an attribute
    declared by annotation alone."""
    return next((vars(cls)[name] for cls in role.__mro__ if name in vars(cls)), None)


def _same_signature(declared: Any, implemented: Any, where: str) -> None:
    """``implemented`` (a bound method) takes the parameters of ``declared`` (the protocol's function, with ``self``) in
    the same order, with the same kinds and defaults; any further parameter has a default."""
    want = list(inspect.signature(declared).parameters.values())[1:]
    got = list(inspect.signature(implemented).parameters.values())
    assert len(got) >= len(want), f"{where}: {got} lacks parameters of {want}"
    for w, g in zip(want, got, strict=False):
        assert (g.name, g.kind, g.default) == (w.name, w.kind, w.default), f"{where}: {g} is not {w}"
    for extra in got[len(want) :]:
        assert extra.default is not inspect.Parameter.empty or extra.kind is inspect.Parameter.VAR_KEYWORD, where


@pytest.mark.parametrize("field", list(PART_ROLES))
def test_each_backends_part_has_its_protocols_signatures(memory_at: MemoryAt, field: str) -> None:
    role = PART_ROLES[field]
    store = open_store(memory_at("m"))
    try:
        part = getattr(store.parts, field)
        assert isinstance(part, role)
        protocols = {cls for r in (*PART_ROLES.values(), StoreDatabase) for cls in r.__mro__}
        for name in _members(role):
            # an implementation that subclasses its protocol (for its docstrings) must still define every member (an
            # instance attribute, such as a database's readonly, has no owner class)
            owner = next((cls for cls in type(part).__mro__ if name in vars(cls)), None)
            assert owner not in protocols, f"{type(part).__name__}.{name} is only declared, by {owner}"
            declared = _declared(StoreDatabase if name.startswith("_") else role, name)
            if declared is None or isinstance(declared, property):  # an attribute (readonly) or a property
                assert hasattr(part, name) and not inspect.ismethod(getattr(part, name)), name
                continue
            _same_signature(declared, getattr(part, name), f"{type(part).__name__}.{name}")
        public = {n for n in dir(part) if not n.startswith("_")}
        undeclared = public - set(role_members(role)) - BACKEND_ATTRIBUTES.get(field, set())
        if field == "lock":  # the database is the build-lock part too
            undeclared -= set(role_members(PART_ROLES["database"])) | BACKEND_ATTRIBUTES["database"]
        assert undeclared == set(), f"{type(part).__name__}: public but in no protocol"
    finally:
        store.close()


def test_the_facade_has_every_member_of_every_role_with_its_signature(memory_at: MemoryAt) -> None:
    store = open_store(memory_at("m"))
    try:
        assert isinstance(store, MemoryStore)
        for protocol in (MemoryParts, StrategyStore, SourceStore, Erasing):
            assert isinstance(store, protocol)
        for role in PART_ROLES.values():
            for name in role_members(role):
                declared = _declared(role, name)
                assert name in vars(MemoryStore) or any(name in vars(base) for base in MemoryStore.__mro__), name
                if isinstance(declared, property):
                    assert isinstance(inspect.getattr_static(store, name), property), name
                else:
                    _same_signature(declared, getattr(store, name), f"MemoryStore.{name}")
        assert store.database is store.parts.database
        assert isinstance(store.build_lock(), BuildLockLike)
    finally:
        store.close()


def test_every_public_member_of_the_facade_has_its_protocols_docstring() -> None:
    """``help(store.nodes)``, ``inspect.getdoc`` and the API reference read each member's contract: the docstring its
    protocol declares (the facade's members are made from the declarations, not written again)."""
    public = [name for name in dir(MemoryStore) if not name.startswith("_")]
    assert set(role_members(MemoryParts)) <= set(public)
    declared = {name: _declared(role, name) for role in PART_ROLES.values() for name in role_members(role)}
    for name in public:
        doc = inspect.getdoc(getattr(MemoryStore, name))
        assert doc, f"MemoryStore.{name} has no docstring"
        if name in declared:
            assert doc == inspect.getdoc(declared[name]), f"MemoryStore.{name} is not documented as its protocol"
    assert inspect.signature(MemoryStore.add_node) == inspect.signature(declared["add_node"])


class _Recorder:
    """A part that records every call made on it and answers it with ``(name, args, kwargs)``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args, kwargs))
            return (name, args, kwargs)

        return call


def test_the_facade_forwards_every_member_to_its_part_with_its_arguments(memory_at: MemoryAt) -> None:
    store = open_store(memory_at("m"))
    real = {field: getattr(store.parts, field) for field in PART_ROLES}
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    try:
        for field, role in PART_ROLES.items():
            recorder = _Recorder()
            setattr(store.parts, field, recorder)
            for name in role_members(role):
                declared = _declared(role, name)
                if isinstance(declared, property):
                    setattr(recorder, name, object())
                    assert getattr(store, name) is getattr(recorder, name), f"store.{name}"
                    continue
                params = list(inspect.signature(declared).parameters.values())[1:]
                args = tuple(object() for p in params if p.kind in positional)
                kwargs = {p.name: object() for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}
                getattr(store, name)(*args, **kwargs)
                assert recorder.calls[-1] == (name, args, kwargs), f"store.{name} is not parts.{field}.{name}"
    finally:
        for field, part in real.items():
            setattr(store.parts, field, part)
        store.close()


class _Counting:
    """A vector-search part counting the searches it hands to the backend's."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, 0

    def index_vectors(self, *args: Any) -> list[str]:
        return list(self.inner.index_vectors(*args))

    def nearest(self, *args: Any, **kw: Any) -> Any:
        self.calls += 1
        return self.inner.nearest(*args, **kw)


def test_a_part_passed_to_open_store_is_the_one_every_caller_reaches(memory_at: MemoryAt) -> None:
    store = open_store(memory_at("m"), parts={"vectors": lambda parts: _Counting(parts.vectors)})
    try:
        search = store.parts.vectors
        assert isinstance(search, _Counting) and search.inner is not search
        vectors = np.eye(3, dtype=np.float32)
        rows, scores = store.nearest("s", 1, "v", vectors, np.array([0.0, 1.0, 0.0]), 1)
        assert search.calls == 1 and rows.tolist() == [1] and scores[0] == pytest.approx(1.0)
        store.parts.vectors = search.inner  # swapped back: the facade looks the part up at each call
        store.nearest("s", 1, "v", vectors, np.array([0.0, 1.0, 0.0]), 1)
        assert search.calls == 1
    finally:
        store.close()


def test_open_store_refuses_an_unknown_part_or_an_object_lacking_its_methods(memory_at: MemoryAt) -> None:
    location = memory_at("m")
    with pytest.raises(ValueError, match="no part 'search'"):
        open_store(location, parts={"search": lambda parts: parts.vectors})
    with pytest.raises(ValueError, match="no part 'database'"):
        open_store(location, parts={"database": lambda parts: parts.database})
    with pytest.raises(ValueError, match="lacks methods of VectorSearch"):
        open_store(location, parts={"vectors": lambda parts: object()})
    open_store(location).close()  # the refused opens closed their database


def test_the_names_of_the_mixins_are_deprecated_aliases_of_their_parts() -> None:
    import gemrag.store as store_package
    from gemrag.store import FileArrays
    from gemrag.store.sqlite.store import SqliteDatabase

    with pytest.warns(DeprecationWarning, match="FileArraysMixin is deprecated"):
        assert store_package.FileArraysMixin is FileArrays
    with pytest.warns(DeprecationWarning, match="SqliteRows is deprecated"):
        assert store_package.SqliteRows is SqliteDatabase
    with pytest.raises(AttributeError):
        _ = store_package.NoSuchPart
