"""A user's type checker reads the store classes as concrete: mypy (``--strict``, the installed gemrag read through its
``py.typed`` marker, PEP 561) passes over code that constructs ``Store``, ``PostgresStore`` and ``MemoryStore``
directly and calls their members, and holds those calls to the role protocols' signatures.

The check fails when the facade's members are again invisible to a type checker (``Cannot instantiate abstract
class``), when gemrag stops shipping its types (an import error, or the deliberately wrong call below no longer being
an error: ``warn_unused_ignores``), or when a member's signature or return type stops matching the snippet."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import gemrag

USER_CODE = """\
from contextlib import AbstractContextManager
from pathlib import Path

from gemrag.store import MemoryStore, NodeRecord, Store
from gemrag.store.parts import BuildLockLike, Connection, Dialect, StrategyStore
from gemrag.store.postgres.backend import PostgresStore
from gemrag.store.sqlite.store import sqlite_parts


def chunk_texts(store: StrategyStore) -> list[str]:
    return [node.text for node in store.nodes("chunk")]


store = Store(Path("memory"), readonly=False, busy_timeout=2.0)
shared = PostgresStore("postgresql://user@localhost/db?schema=notes", pool_size=2)
facade = MemoryStore(sqlite_parts(Path("memory")))

readonly: bool = store.readonly
dialect: Dialect = shared.dialect
on_sqlite: bool = store.database.dialect == "sqlite"
in_transaction: AbstractContextManager[Connection] = store.transaction()
with in_transaction:
    store.set_meta("owner", "me")
nodes: list[NodeRecord] = store.nodes("chunk", strategy="gem")
texts: list[str] = chunk_texts(shared) + chunk_texts(facade)
usage: dict[str, dict[str, float]] = shared.usage_by_phase()
lock: BuildLockLike = facade.build_lock()
store.nodes(kind=3)  # type: ignore[arg-type]  # an error only while mypy reads nodes' declared signature
for each in (store, shared, facade):
    each.close()
"""


def test_a_users_mypy_passes_over_code_constructing_both_stores(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    package = Path(gemrag.__file__).parent
    assert (package / "py.typed").is_file(), "gemrag ships no py.typed: a user's type checker would not read its types"
    user = tmp_path / "user_code.py"
    user.write_text(USER_CODE)
    (tmp_path / "mypy.ini").write_text("[mypy]\nstrict = True\nwarn_unused_ignores = True\n")
    pytest_cache = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider
    cache = pytest_cache.mkdir("mypy-user-code") if pytest_cache else tmp_path / "cache"
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--cache-dir", str(cache), user.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success: no issues found in 1 source file" in run.stdout


def test_a_member_named_under_a_part_that_does_not_declare_it_is_refused() -> None:
    """The facade names each member with its part; a member named under another part would forward to a part without
    it, so the class refuses it when it is made."""
    from gemrag.store.base import _member
    from gemrag.store.parts import Caches, Rows

    assert _member("rows", Rows.nodes).__wrapped__ is Rows.nodes
    with pytest.raises(TypeError, match="the caches part does not declare it"):
        _member("caches", Rows.nodes)
    with pytest.raises(TypeError, match="the rows part does not declare it"):
        _member("rows", Caches.usage_by_phase)
