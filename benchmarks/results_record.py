"""Benchmark figures as records in the repository's ``results/`` directory, beside the evaluation runs.

A record is ``results/NAME.json``: the header of a published evaluation run (:class:`gemrag.eval.published.
PublishedRun`: ``schema_version``, ``name``, ``command``, ``code`` (commit and version), ``date``, ``seconds``,
``machine`` with the load averages at the start and the end) followed by ``kind`` (which benchmark) and the
benchmark's own figures. The documentation cites the record beside each table it takes from one.
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gemrag.eval.publish_origin import check_publish_name, code_version, machine_info
from gemrag.eval.published import SCHEMA_VERSION

RESULTS = Path(__file__).resolve().parents[1] / "results"


def write_record(
    name: str,
    kind: str,
    figures: Mapping[str, Any],
    *,
    argv: Sequence[str] | None,
    seconds: float,
    load: Iterable[float],
    root: Path = RESULTS,
    code: Mapping[str, str] | None = None,
) -> Path:
    """Write ``root/NAME.json`` (module docstring) and return its path.

    Args:
        name: the record's name (a plain file name without ``.json``).
        kind: the benchmark (``forgetting``, ``erase-cost``).
        figures: the benchmark's figures (JSON-serialisable).
        argv: the benchmark's arguments (None: ``sys.argv[1:]``), recorded as its command.
        seconds: the run's wall time. load: the 1-minute load averages at its start and end.
        code: the code the run started with (:func:`gemrag.eval.publish_origin.code_version` taken at its start;
            None: now, which a run writing its record more than once must not use, as commits made meanwhile would be
            named).

    Raises:
        InputError: ``name`` is not a plain file name.
    """
    check_publish_name(name)
    script = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "benchmark"
    args = list(sys.argv[1:] if argv is None else argv)
    record = {
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "command": shlex.join(["python", f"benchmarks/{script}", *args]),
        "code": dict(code) if code is not None else code_version(),
        "date": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
        "seconds": round(seconds, 1),
        "machine": machine_info(load).model_dump(),
        "kind": kind,
        **figures,
    }
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"{name}.json"
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
