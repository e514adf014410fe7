"""The small file helpers of an evaluation's output directory: JSON Lines records read (:func:`read_jsonl`) and
appended from several threads (:class:`JsonlAppender`: ``records.jsonl``, ``index.jsonl``, ``attempts.jsonl``), the
configuration as recorded (:func:`redact_config`: API keys hidden), the fingerprint that keeps one configuration per
directory (:func:`check_fingerprint`: ``run.json``), and values made JSON-ready (:func:`json_ready`).
"""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Any

from gemrag.config import Config
from gemrag.errors import ConfigError

__all__ = ["JsonlAppender", "check_fingerprint", "json_ready", "read_jsonl", "redact_config"]


def json_ready(value: Any) -> Any:
    """Replace NaN / inf by None (JSON has no NaN) and paths by strings, recursively (dict keys become strings,
    tuples lists); every other value is returned as it is."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON Lines file (``[]`` when it does not exist).

    A line that is not valid JSON (a torn last line after an interruption) is skipped.
    """
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


class JsonlAppender:
    """Appends one JSON object per line to ``path`` and flushes each line, safely from several threads.

    If the file ends in a torn line (no final newline), a newline is written first so the next record
    starts on its own line.
    """

    def __init__(self, path: Path) -> None:
        self._lock = threading.Lock()
        torn = path.exists() and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")
        self._file = path.open("a", encoding="utf-8")
        if torn:
            self._file.write("\n")

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record`` (JSON-serializable) as one line and flush."""
        with self._lock:
            self._file.write(json.dumps(json_ready(record), ensure_ascii=False) + "\n")
            self._file.flush()

    def close(self) -> None:
        """Close the file."""
        self._file.close()


def redact_config(config: Config) -> dict[str, Any]:
    """The configuration as JSON-ready data with API keys replaced by ``"***"``."""
    data = config.model_dump(mode="json")
    for section in ("llm", "embedder"):
        if data.get(section, {}).get("api_key"):
            data[section]["api_key"] = "***"
    return data


def check_fingerprint(out_dir: Path, fingerprint: dict[str, Any]) -> None:
    """Refuse to mix results of different configurations in one output directory.

    ``fingerprint`` (what the records depend on: dataset, budget, models, gem parameters...) is compared
    with ``out_dir/run.json`` from an earlier run, then written there.

    Raises:
        ConfigError: ``run.json`` exists and differs (the message names the differing keys).
    """
    path = out_dir / "run.json"
    if path.exists():
        old = json.loads(path.read_text(encoding="utf-8"))
        changed = sorted(k for k in set(old) | set(fingerprint) if old.get(k) != fingerprint.get(k))
        if changed:
            raise ConfigError(
                f"{out_dir} holds results of another configuration (differs in {', '.join(changed)}); "
                "use another --out directory or delete it"
            )
    path.write_text(json.dumps(fingerprint, indent=2), encoding="utf-8")
