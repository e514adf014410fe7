"""The rows a publish writes, inside the caller's transaction (see :mod:`gemrag.store.publish`)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

from gemrag.errors import GemragError
from gemrag.store.parts import Connection
from gemrag.store.publish_types import KEEP_COVERS, Edges, Publication


def withdraw_rows(c: Connection, strategy: str) -> None:
    c.execute("DELETE FROM builds WHERE strategy = ?", (strategy,))
    c.execute("DELETE FROM nodes WHERE strategy = ? AND generation IS NOT NULL", (strategy,))
    c.execute("DELETE FROM edges WHERE strategy = ?", (strategy,))
    c.execute("DELETE FROM build_chunks WHERE strategy = ?", (strategy,))


def _edge_sets(edges: Edges | Mapping[str, Edges] | None) -> dict[str, Edges]:
    if edges is None:
        return {}
    if isinstance(edges, Mapping):
        return dict(edges)
    return {"": edges}


def publish_rows(c: Connection, p: Publication) -> None:
    """The rows of one publication, inside the caller's transaction."""
    s, g = p.strategy, p.generation
    row = c.execute("SELECT generation FROM builds WHERE strategy = ?", (s,)).fetchone()
    current = int(row[0]) if row else None
    if current is not None and current >= g:
        raise GemragError(f"generation {current} of {s!r} was published while generation {g} was built")
    if p.carry and current is not None:
        c.executemany(
            "DELETE FROM nodes WHERE id = ? AND strategy = ? AND generation = ?",
            ((int(i), s, current) for i in p.retire),
        )
        c.executemany(
            "DELETE FROM edges WHERE strategy = ? AND (src = ? OR dst = ?)", ((s, int(i), int(i)) for i in p.retire)
        )
        c.execute("UPDATE nodes SET generation = ? WHERE strategy = ? AND generation = ?", (g, s, current))
        # an edge the new build staged too keeps the new build's row (the old one is deleted below)
        c.execute(
            "DELETE FROM edges WHERE strategy = ? AND generation = ? AND EXISTS (SELECT 1 FROM edges x"
            " WHERE x.strategy = edges.strategy AND x.generation = ? AND x.kind = edges.kind AND x.src = edges.src"
            " AND x.dst = edges.dst)",
            (s, current, g),
        )
        c.execute("UPDATE edges SET generation = ? WHERE strategy = ? AND generation = ?", (g, s, current))
    c.execute(
        "INSERT OR REPLACE INTO builds(strategy, generation, published_at, arrays, paths, meta, params, models)"
        " VALUES (?,?,?,?,?,?,?,?)",
        (
            s,
            g,
            time.time(),
            json.dumps([e.as_dict() for e in p.arrays]),
            json.dumps(list(p.paths)),
            json.dumps(p.meta or {}),
            json.dumps(p.params or {}),
            json.dumps(p.models or {}),
        ),
    )
    c.execute("DELETE FROM nodes WHERE strategy = ? AND generation IS NOT NULL AND generation != ?", (s, g))
    c.execute("DELETE FROM edges WHERE strategy = ? AND generation != ?", (s, g))
    for kind, (src, dst, weight) in _edge_sets(p.edges).items():
        c.executemany(
            "INSERT OR REPLACE INTO edges(strategy, kind, generation, src, dst, weight) VALUES (?,?,?,?,?,?)",
            ((s, kind, g, a, b, w) for a, b, w in zip(src.tolist(), dst.tolist(), weight.tolist(), strict=True)),
        )
    if p.covers != KEEP_COVERS:
        c.execute("DELETE FROM build_chunks WHERE strategy = ?", (s,))
        if p.covers is None:
            c.execute("INSERT INTO build_chunks(strategy, chunk_id) SELECT ?, id FROM nodes WHERE kind = 'chunk'", (s,))
        else:
            c.executemany(
                "INSERT OR IGNORE INTO build_chunks(strategy, chunk_id) VALUES (?, ?)", ((s, int(i)) for i in p.covers)
            )
