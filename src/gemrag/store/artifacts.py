"""Per-node LLM artefacts of a strategy: typed JSON rows keyed by (strategy, artefact kind, node id).

A strategy that asks the LLM something about every chunk (utility questions, entities, triples, events, ...)
stores each answer here as soon as it has it, validated by its pydantic model and stamped with the prompt
version that produced it. A build asks :meth:`ArtifactRows.missing_artifacts` which chunks still need one
(none stored, or stored by another prompt version), so an interrupted build resumes where it stopped, a new
prompt version recomputes everything, and adding a document costs LLM calls for its chunks only. Rows go with
their node (``ON DELETE CASCADE``): deleting a document deletes its chunks' artefacts. Artefacts are not part of
a build generation: they are inputs a build reads, kept across builds.

The store knows no strategy: ``strategy`` and ``kind`` are names (``[A-Za-z0-9_-]+``) the strategy chooses.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gemrag.errors import DamagedMemoryError
from gemrag.store.parts import Artifacts
from gemrag.store.sql_part import SqlPart

M = TypeVar("M", bound=BaseModel)
_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_BATCH = 500


def _check(strategy: str, kind: str) -> None:
    for what, name in (("strategy", strategy), ("artefact kind", kind)):
        if not _NAME.match(name):
            raise ValueError(f"{what} name {name!r} must match {_NAME.pattern}")


class ArtifactRows(SqlPart, Artifacts):
    """The artefacts part of a store (:class:`gemrag.store.parts.Artifacts`): artefact rows (arguments: those of
    :class:`~gemrag.store.sql_part.SqlPart`)."""

    def put_artifact(self, strategy: str, kind: str, node_id: int, value: BaseModel, version: str) -> None:
        self.put_artifacts(strategy, kind, [(node_id, value)], version)

    def put_artifacts(self, strategy: str, kind: str, values: Iterable[tuple[int, BaseModel]], version: str) -> None:
        _check(strategy, kind)
        now = time.time()
        rows = [(strategy, kind, int(n), version, v.model_dump_json(), now) for n, v in values]
        with self._db.transaction() as c:
            c.executemany(
                "INSERT OR REPLACE INTO artifacts(strategy, kind, node_id, version, data, created)"
                " VALUES (?,?,?,?,?,?)",
                rows,
            )

    def get_artifact(self, strategy: str, kind: str, node_id: int, model: type[M], version: str) -> M | None:
        return self.artifacts(strategy, kind, model, version, [node_id]).get(int(node_id))

    def artifacts(
        self, strategy: str, kind: str, model: type[M], version: str, node_ids: Sequence[int] | None = None
    ) -> dict[int, M]:
        _check(strategy, kind)
        sql = "SELECT node_id, data FROM artifacts WHERE strategy = ? AND kind = ? AND version = ?"
        rows: list[Any] = []
        if node_ids is None:
            rows = self._query(sql + " ORDER BY node_id", (strategy, kind, version))
        else:
            ids = [int(i) for i in node_ids]
            for i in range(0, len(ids), _BATCH):
                part = ids[i : i + _BATCH]
                marks = ",".join("?" * len(part))
                rows += self._query(sql + f" AND node_id IN ({marks})", (strategy, kind, version, *part))
        out: dict[int, M] = {}
        for node_id, data in rows:
            try:
                out[int(node_id)] = model.model_validate_json(data)
            except ValidationError as exc:
                raise DamagedMemoryError(
                    f"artefact {strategy}/{kind} of node {node_id} does not match {model.__name__}: {exc}"
                ) from exc
        return out

    def missing_artifacts(self, strategy: str, kind: str, version: str, node_ids: Sequence[int]) -> list[int]:
        _check(strategy, kind)
        have = {
            int(r[0])
            for r in self._query(
                "SELECT node_id FROM artifacts WHERE strategy = ? AND kind = ? AND version = ?",
                (strategy, kind, version),
            )
        }
        return [int(i) for i in node_ids if int(i) not in have]

    def artifact_counts(self, strategy: str | None = None) -> dict[tuple[str, str, str], int]:
        sql = "SELECT strategy, kind, version, COUNT(*) FROM artifacts"
        args: tuple[Any, ...] = ()
        if strategy is not None:
            sql, args = sql + " WHERE strategy = ?", (strategy,)
        return {(s, k, v): int(n) for s, k, v, n in self._query(sql + " GROUP BY strategy, kind, version", args)}

    def delete_artifacts(self, strategy: str, kind: str | None = None, *, stale_for: str | None = None) -> int:
        sql, args = "DELETE FROM artifacts WHERE strategy = ?", [strategy]
        if kind is not None:
            sql, args = sql + " AND kind = ?", [*args, kind]
        if stale_for is not None:
            sql, args = sql + " AND version != ?", [*args, stale_for]
        with self._db.transaction() as c:
            return int(c.execute(sql, args).rowcount)
