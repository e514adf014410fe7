"""How long a model answers each LLM pass, recorded across the memories of this machine, for cost plans.

A cost plan (:mod:`gemrag.memory.index_plan`) estimates a pass's completion tokens from the answers the memory itself
recorded for that pass (:func:`gemrag.strategies.platform.planning.signature`), else from the pass's typical
completion, a constant measured with one model. Answer lengths differ by model (on the same COVID-QA chunks the 0.5B
wrote 254 completion tokens per UnWeaver entity answer where the constant said 380), so a new memory would repeat the
error every time. After each build, :func:`record_lengths` keeps the mean completion of each pass the model answered
in that memory in ``<cache dir>/model-completions/<sha256 of the model id>.json``; :func:`machine_lengths` pools them
over memories, and the plan of any later memory with the same model uses them where it has too few answers of its own.

What the file holds: per pass, the SHA-256 of its signature (never the signature: a pass opening with a user message
would otherwise carry the first 200 characters of a document), and per memory (the SHA-256 of its location) the
number of answers and their mean completion tokens. No text of any document or answer, so forgetting a document
(:mod:`gemrag.memory.forgetting`) has nothing to erase here. Only passes that open with a system message are recorded.
A memory's entry is replaced at each of its builds (its newest answers), never added to, so rebuilding counts nothing
twice.

Writing never fails a build: an unwritable cache directory loses the record (logged), nothing else.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gemrag.config import Config
from gemrag.models.cache import INPUT_KEY
from gemrag.strategies.platform.planning import signature

__all__ = [
    "RECORDED",
    "lengths_path",
    "machine_key",
    "machine_lengths",
    "model_cache_dir",
    "pass_means",
    "record_lengths",
]

VERSION = 1
"""Version of the file's layout (a new layout starts a new file)."""
RECORDED = 5000
"""Recorded answers of a model read from a memory: for its rates, chars per token and each pass's mean completion."""

log = logging.getLogger(__name__)


def model_cache_dir(config: Config) -> Path:
    """The model cache directory of a memory's configuration: ``config.cache_dir``, else the default one
    (``$GEMRAG_CACHE_DIR`` or ``~/.cache/gemrag/models``). The models' calibrations and answer-length records live
    below it."""
    from gemrag.models.llama.weights import default_cache_dir  # the llama package loads only when it is needed

    return Path(config.cache_dir or default_cache_dir()).expanduser()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def lengths_path(cache_dir: Path, model_id: str) -> Path:
    """The record of ``model_id``: ``<cache_dir>/model-completions/<sha256 of version and model id>.json``."""
    return cache_dir / "model-completions" / f"{_digest(f'{VERSION}|{model_id}')}.json"


def pass_means(responses: Sequence[dict[str, Any]]) -> dict[str, tuple[int, float]]:
    """``{signature: (answers, mean completion tokens)}`` of cached ``responses`` (the store's
    ``recent_llm_responses`` rows) that recorded their request's messages; a response without them is skipped."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for r in responses:
        messages = r.get(INPUT_KEY)
        if messages:
            acc = sums[signature(messages)]
            acc[0] += 1
            acc[1] += float(r.get("completion_tokens") or 0)
    return {k: (int(n), total / n) for k, (n, total) in sums.items()}


def _read(path: Path) -> dict[str, dict[str, list[float]]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        passes = data["passes"]
        return passes if isinstance(passes, dict) else {}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def record_lengths(cache_dir: Path, model_id: str, location: str, responses: Sequence[dict[str, Any]]) -> int:
    """Replace memory ``location``'s entry in ``model_id``'s record with the pass means of its cached ``responses``
    (those of the model, newest first, as ``recent_llm_responses`` returns them); passes whose first message is not a
    system message are left out (module docstring).

    Returns:
        The passes recorded (0 when nothing was, or the file could not be written: logged, never raised).
    """
    system = [r for r in responses if (r.get(INPUT_KEY) or [{}])[0].get("role") == "system"]
    means = pass_means(system)
    if not means:
        return 0
    path = lengths_path(cache_dir, model_id)
    passes = _read(path)
    memory = _digest(location)
    for key in passes.values():
        key.pop(memory, None)
    for sig, (n, mean) in means.items():
        passes.setdefault(_digest(sig), {})[memory] = [n, round(mean, 2)]
    passes = {k: v for k, v in passes.items() if v}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".lengths-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"version": VERSION, "model": model_id, "passes": passes}, f)
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("could not record the model's answer lengths in %s: %s", path, exc)
        return 0
    return len(means)


def machine_lengths(cache_dir: Path, model_id: str) -> dict[str, tuple[int, float]]:
    """``{sha256 of a pass signature (32 hex): (answers, mean completion tokens)}`` of ``model_id`` pooled over the
    memories of this machine (a mean weighted by their answers); empty when nothing is recorded or the file is
    unreadable."""
    out = {}
    for key, memories in _read(lengths_path(cache_dir, model_id)).items():
        try:
            n = sum(int(v[0]) for v in memories.values())
            total = sum(int(v[0]) * float(v[1]) for v in memories.values())
        except (TypeError, ValueError, IndexError, AttributeError):
            continue
        if n > 0:
            out[key] = (n, total / n)
    return out


def machine_key(sig: str) -> str:
    """The key of pass signature ``sig`` in :func:`machine_lengths`."""
    return _digest(sig)
