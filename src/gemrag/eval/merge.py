"""Join evaluations run in several output directories into one (``gemrag eval ... --merge DIR``).

An evaluation is split across processes or machines by running the same command with other ``--strategies``
or ``--documents`` into other ``--out`` directories. :func:`merge_outputs` adds their results to the output
directory of the run at hand before it starts: the records (``records.jsonl``, one per question and run) and the
build measurements (``index.jsonl``, one per question group and run) that the directory does not have yet. The run
then skips what was merged and reports everything as if one process had run it. Only directories of the same
configuration are merged (their ``run.json`` must equal the run's fingerprint, see
:func:`gemrag.eval.run_files.check_fingerprint`); the memories stay in their own directories (a merged result is
not recomputed, so its memory is not needed).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gemrag.errors import ConfigError
from gemrag.eval.run_files import JsonlAppender, read_jsonl

__all__ = ["merge_outputs"]


def merge_outputs(out_dir: Path, sources: Sequence[Path], fingerprint: dict[str, Any]) -> dict[str, int]:
    """Append to ``out_dir`` the records and build measurements of ``sources`` that it lacks.

    Args:
        out_dir: the output directory of the run at hand (its ``run.json`` already written).
        sources: other output directories of ``gemrag eval`` with the same configuration.
        fingerprint: the run's fingerprint (what ``run.json`` holds).

    Returns:
        ``{"records": n, "builds": m}``: how many records and build measurements were added.

    Raises:
        ConfigError: a source is ``out_dir`` itself, is not an output directory of ``gemrag eval`` (no
            ``run.json``), or holds results of another configuration (the message names the differing keys).
    """
    records_path, index_path = out_dir / "records.jsonl", out_dir / "index.jsonl"
    done = {(r["question_id"], r["strategy"]) for r in read_jsonl(records_path)}
    built = {(e["group"], e["strategy"]) for e in read_jsonl(index_path)}
    added = {"records": 0, "builds": 0}
    for source in sources:
        _check(out_dir, Path(source), fingerprint)
    records, index = JsonlAppender(records_path), JsonlAppender(index_path)
    try:
        for source in map(Path, sources):
            for r in read_jsonl(source / "records.jsonl"):
                if (r["question_id"], r["strategy"]) not in done:
                    records.write(r)
                    done.add((r["question_id"], r["strategy"]))
                    added["records"] += 1
            for e in read_jsonl(source / "index.jsonl"):
                if (e["group"], e["strategy"]) not in built:
                    index.write(e)
                    built.add((e["group"], e["strategy"]))
                    added["builds"] += 1
    finally:
        records.close()
        index.close()
    return added


def _check(out_dir: Path, source: Path, fingerprint: dict[str, Any]) -> None:
    if source.resolve() == out_dir.resolve():
        raise ConfigError(f"--merge {source}: that is the output directory itself")
    run = source / "run.json"
    if not run.is_file():
        raise ConfigError(f"--merge {source}: not an output directory of gemrag eval (no run.json)")
    try:
        theirs = json.loads(run.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"--merge {source}: unreadable run.json ({exc})") from exc
    changed = sorted(k for k in set(theirs) | set(fingerprint) if theirs.get(k) != fingerprint.get(k))
    if changed:
        raise ConfigError(f"--merge {source}: results of another configuration (differs in {', '.join(changed)})")
