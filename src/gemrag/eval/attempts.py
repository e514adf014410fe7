"""The cost of an index build that ``gemrag eval`` resumed after an interruption (Ctrl-C, ``kill``, a machine's
time limit).

A build's cost is what :class:`~gemrag.eval.costs.CostTap` measures around :meth:`Memory.index
<gemrag.memory.Memory.index>`. A build commits its work item by item, so one resumed after an interruption
requests only the items not committed yet: the resuming invocation's tap sees the rest of the build, not all of
it. Every call of ``Memory.index`` by the runner is therefore logged first in ``out_dir/attempts.jsonl``, with
the memory's usage mark (:meth:`Store.usage_mark <gemrag.store.Store.usage_mark>`: every model call of a build is
a row of the memory's ``usage`` table, written at once) and the wall-clock time. When a build completes, the
``index``-phase usage rows of the same run's earlier attempts in that memory, each from its mark to the next
attempt's mark in the memory, are added to the measured cost (:func:`add_earlier`).

Limits: an item whose model call finished but whose result was not committed when the process stopped is served
from the LLM cache on resume and counted twice (at most the items in flight at the interruption); an earlier
attempt's seconds run from its start to its last model call.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from gemrag.eval.run_files import JsonlAppender, read_jsonl
from gemrag.store.parts import Caches

__all__ = ["BuildAttempts", "add_earlier", "shared_build"]

COST_KEYS = ("prompt_tokens", "completion_tokens", "embedding_tokens", "llm_calls", "llm_cached")


class BuildAttempts:
    """The log of build attempts of one evaluation directory (``attempts.jsonl``, one JSON object per line:
    ``memory``, ``run``, ``mark`` (usage row id before the attempt), ``started`` (Unix seconds)).

    Args:
        path: the log file (created on the first attempt).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries = read_jsonl(path)
        self._out: JsonlAppender | None = None

    def start(self, memory: str, run: str, store: Caches) -> dict[str, Any]:
        """Log an attempt to build ``run`` in the memory directory named ``memory`` (whose store is ``store``),
        about to start.

        Returns:
            The costs of the same run's earlier attempts in that memory (keys of :data:`COST_KEYS` and
            ``seconds``; zeros when there was none), for :func:`add_earlier` once this attempt completes.
        """
        mark = store.usage_mark()
        mine = [e for e in self.entries if e["memory"] == memory]
        earlier = dict.fromkeys((*COST_KEYS, "seconds"), 0.0)
        for i, e in enumerate(mine):
            if e["run"] != run:
                continue
            upto = mine[i + 1]["mark"] if i + 1 < len(mine) else mark
            used = store.usage_after(int(e["mark"]), int(upto))
            for key in COST_KEYS:
                earlier[key] += used[key]
            if used["last_at"]:
                earlier["seconds"] += max(0.0, used["last_at"] - float(e["started"]))
        entry = {"memory": memory, "run": run, "mark": mark, "started": time.time()}
        if self._out is None:
            self._out = JsonlAppender(self.path)
        self._out.write(entry)
        self.entries.append(entry)
        return earlier

    def close(self) -> None:
        """Close the log file."""
        if self._out is not None:
            self._out.close()
            self._out = None


def add_earlier(measured: dict[str, int], seconds: float, earlier: dict[str, Any]) -> tuple[dict[str, int], float]:
    """``measured`` (a :class:`CostTap` count) and ``seconds`` of a completed attempt plus the ``earlier``
    attempts' costs (:meth:`BuildAttempts.start`): the build's cost. ``measured`` is not modified."""
    total = {k: int(v) + int(earlier.get(k, 0)) for k, v in measured.items()}
    return total, seconds + float(earlier.get("seconds", 0.0))


def shared_build(index: list[dict[str, Any]], memory: str, strategy: str, measured: dict[str, int]) -> dict[str, Any]:
    """The cost of an earlier build of ``strategy`` in the memory named ``memory`` (an ``index.jsonl`` entry of
    ``index``; a retrieval-only ablation rebuilds from what that build stored, which is not its cost) with
    ``shared_with`` and the ``measured`` cost of the rebuild as ``rebuild`` (see :mod:`gemrag.eval.tokens`), or
    ``{}`` when there is none."""
    keys = ("seconds", "prompt_tokens", "completion_tokens", "embedding_tokens", "llm_calls", "llm_cached")
    for e in index:
        if e["memory"] == memory and e.get("base_strategy") == strategy and not e.get("shared_with"):
            return {k: e.get(k, 0) for k in keys} | {"shared_with": e["strategy"], "rebuild": dict(measured)}
    return {}
