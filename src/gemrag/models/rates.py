"""How fast a model reads and writes on this machine: the rates a cost plan turns tokens into minutes with.

Two measures, never a guess:

* **calibration** (a model run in this process, such as llama.cpp: its backend has ``n_threads``): one warm-up call,
  one timed call that reads a ~250-token prompt and writes one token, one that reads a short prompt and writes up to
  :data:`GENERATED` tokens; solving ``seconds = prompt tokens / prompt rate + completion tokens / generation rate``
  for the two timed calls gives both rates. Each prompt starts with a random nonce, so llama.cpp reuses no cached
  prefix. The result is cached as JSON under ``<cache dir>/model-rates/`` keyed by the model id, its cache identity
  and the machine (host name, CPU model, cores, ``n_threads``): it is measured once per model and machine
  (:func:`calibrate`; ``refresh`` measures again; so does a load average that moved by more than
  :data:`LOAD_DRIFT` a core since the cached measure, which records its load). A calibration made while the machine
  was busy (a load above its core count, :func:`busy`) is never kept as the machine's speed: its detail says so.
* **recorded** (any backend, the only measure of a remote endpoint's): the seconds and tokens of the model's calls
  the memory cached (:meth:`gemrag.store.Store.recent_llm_responses`), fitted by least squares to the same two
  rates (:func:`recorded_rates`). An HTTP call's seconds are its own wall-clock time, and ``concurrency`` of them run
  at once, so a build's time is their sum divided by the concurrency; llama.cpp's seconds are each call's share of
  the engine's time (they add up to the wall-clock time), so its concurrency is 1.

Without either the minutes are unknown (:data:`UNKNOWN`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import secrets
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from time import perf_counter
from typing import Any, Literal

import numpy as np

from gemrag.models.base import LLM, Message, cache_identity_of

__all__ = [
    "GENERATED",
    "UNKNOWN",
    "Rates",
    "busy",
    "calibrate",
    "cached_calibration",
    "calibration_path",
    "load_drifted",
    "machine",
    "recorded_rates",
    "runs_here",
]

VERSION = 1
"""Version of the calibration procedure (part of the cache key: a new procedure measures again)."""
GENERATED = 48
"""Tokens the generation call asks for (the model may stop earlier; the rate uses what it wrote)."""
MIN_RECORDED = 5
"""Recorded calls needed for :func:`recorded_rates`."""
LOAD_DRIFT = 0.5
"""Load-average change per core past which :func:`calibrate` measures again: on two cores, a calibration cached at
load 6.2 and used at load 0.1 made a 1.5B plan 3.4 times too long (docs/results.md); a change of more than 1.0 there
(0.5 a core) re-measures (seconds) instead."""

_READ = (
    "The lighthouse keeper climbed the spiral stairs every evening at dusk, carrying a can of oil and a cloth. "
    "From the gallery he could see the fishing boats returning to the harbour, the church tower above the roofs, "
    "and the dark line of the cliffs to the north. In winter the storms came from the west, and the waves broke "
    "over the rocks so high that the spray reached the lamp room. He kept a log of every ship that passed, its "
    "name when he could read it, the weather and the hour. His daughter, who taught at the village school, "
    "brought him bread and news on Sundays; she said the mayor wanted to replace the lamp with an automatic one, "
    "and that the keeper would then have to find other work. He did not believe it. The sea, he said, needs "
    "someone who watches it. "
)
"""The prompt-processing call's text (English prose, ~220 tokens in the Qwen2.5 tokenizer)."""

Source = Literal["calibration", "recorded", "unknown"]


@dataclass(frozen=True)
class Rates:
    """A model's speed on this machine.

    Attributes:
        source: ``"calibration"``, ``"recorded"`` or ``"unknown"`` (no measure: no minutes).
        prompt_per_second: prompt tokens read per second (None when unknown).
        completion_per_second: tokens generated per second (None when unknown).
        concurrency: calls whose seconds overlap (recorded HTTP calls: the backend's ``concurrency``), >= 1.
        reuses_prefix: the prompt rate applies only to the prompt tokens not kept from a slot's previous call
            (a calibration of llama.cpp, which keeps the prefix); False for recorded rates (their fit already
            includes what the backend reused).
        detail: where the rates come from, for people (when, on what, at what load).
    """

    source: Source
    prompt_per_second: float | None = None
    completion_per_second: float | None = None
    concurrency: int = 1
    reuses_prefix: bool = False
    detail: str = ""

    def seconds(self, prompt_tokens: int, completion_tokens: int, reused_prompt_tokens: int = 0) -> float | None:
        """Wall-clock seconds of calls with these tokens, or None when the rates are unknown."""
        if self.prompt_per_second is None or self.completion_per_second is None:
            return None
        read = prompt_tokens - (reused_prompt_tokens if self.reuses_prefix else 0)
        busy = max(read, 0) / self.prompt_per_second + completion_tokens / self.completion_per_second
        return busy / max(self.concurrency, 1)


UNKNOWN = Rates("unknown", detail="no calibration and no recorded calls of this model: minutes unknown")
"""The rates of a model that was neither calibrated nor recorded."""


def runs_here(llm: object) -> bool:
    """Whether ``llm`` runs in this process on this machine's CPU threads (it has ``n_threads``: llama.cpp), so a
    calibration measures it; a remote endpoint is measured by its recorded calls only."""
    return isinstance(getattr(llm, "n_threads", None), int)


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine(n_threads: int | None = None) -> dict[str, Any]:
    """What identifies this machine for a calibration: host name, CPU model, logical cores, the model's threads."""
    return {"host": socket.gethostname(), "cpu": _cpu_model(), "cores": os.cpu_count(), "n_threads": n_threads}


def calibration_path(llm: LLM, cache_dir: Path) -> Path:
    """The calibration file of ``llm`` on this machine: ``<cache_dir>/model-rates/<sha256 of the key>.json``, the key
    being the procedure's version, the model id, its cache identity and :func:`machine`."""
    key = {
        "version": VERSION,
        "model": llm.model_id,
        "identity": cache_identity_of(llm),
        "machine": machine(getattr(llm, "n_threads", None)),
    }
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode("utf-8")).hexdigest()
    return cache_dir / "model-rates" / f"{digest[:32]}.json"


def _load() -> float:
    """The 1-minute load average (0.0 where the system has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0


def busy(load: float, cores: int | None = None) -> bool:
    """Whether a load average above the machine's core count (``cores``, default :func:`os.cpu_count`) makes a
    calibration unrepresentative: other work then competes for every core (tried: load 7.9 on 2 cores measured
    0.4 generated tokens/s and planned 205 minutes for a build that takes 6 idle)."""
    return load > (cores or os.cpu_count() or 1)


def _from_record(record: dict[str, Any]) -> Rates:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record["measured_at"]))
    cores = os.cpu_count() or 1
    warning = (
        f"; measured while the machine was busy (load {record['load']:.1f} on {cores} cores): these minutes run "
        "long, and the measure is not kept (the next plan measures again; --recalibrate when the machine is idle)"
        if busy(float(record["load"]), cores)
        else ""
    )
    return Rates(
        "calibration",
        float(record["prompt_per_second"]),
        float(record["completion_per_second"]),
        reuses_prefix=True,
        detail=(
            f"calibrated {when} on {record['machine']['cpu']} ({record['machine']['n_threads']} threads): "
            f"{record['prompt_per_second']:.1f} prompt and {record['completion_per_second']:.1f} generated tokens/s "
            f"at load {record['load']:.1f} (now {_load():.1f}; --recalibrate measures again){warning}"
        ),
    )


def _cached_record(llm: LLM, cache_dir: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(calibration_path(llm, cache_dir).read_text(encoding="utf-8"))
        _from_record(record)
        if busy(float(record["load"])):  # kept by an earlier release: never used as the machine's speed
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return record if isinstance(record, dict) else None


def cached_calibration(llm: LLM, cache_dir: Path) -> Rates | None:
    """The calibration of ``llm`` on this machine cached by :func:`calibrate`, or None (none, or unreadable)."""
    record = _cached_record(llm, cache_dir)
    return None if record is None else _from_record(record)


def load_drifted(record: dict[str, Any], now: float | None = None) -> bool:
    """Whether the machine's load changed by more than :data:`LOAD_DRIFT` a core since calibration ``record`` was
    measured (``now``: the 1-minute load average, default the current one)."""
    now = _load() if now is None else now
    return abs(float(record.get("load", now)) - now) > LOAD_DRIFT * (os.cpu_count() or 1)


def _timed(llm: LLM, messages: list[Message], max_tokens: int, clock: Callable[[], float]) -> tuple[float, int, int]:
    t0 = clock()
    completion = llm.complete(messages, max_tokens=max_tokens, temperature=0.0)
    return clock() - t0, int(completion.usage.prompt_tokens), int(completion.usage.completion_tokens)


def _solve(read: tuple[float, int, int], write: tuple[float, int, int]) -> tuple[float, float]:
    """Seconds per prompt token and per generated token from the two timed calls ``(seconds, prompt, completion)``:
    the 2 x 2 system when it has a positive solution, else each call alone."""
    (ta, pa, ca), (tb, pb, cb) = read, write
    matrix = np.array([[pa, ca], [pb, cb]], dtype=np.float64)
    with contextlib.suppress(np.linalg.LinAlgError):
        x, y = np.linalg.solve(matrix, np.array([ta, tb]))
        if x > 0 and y > 0:
            return float(x), float(y)
    x = ta / max(pa, 1)
    return x, max(tb - pb * x, 1e-6) / max(cb, 1)


def calibrate(
    llm: LLM,
    cache_dir: Path,
    *,
    refresh: bool = False,
    clock: Callable[[], float] | None = None,
    announce: Callable[[str], None] | None = None,
) -> Rates:
    """The prompt and generation rates of ``llm`` on this machine: cached (:func:`cached_calibration`) unless
    ``refresh`` or the load changed since (:func:`load_drifted`), else measured now with three calls of the backend
    itself (module docstring; seconds: the model's load, then about 250 prompt tokens and up to :data:`GENERATED`
    generated ones) and cached, unless measured while the machine was :func:`busy` (a load above its core count):
    then the rates are returned with a detail saying so, and not kept.

    Args:
        llm: the backend (not the memory's cached LLM: its cache would answer the calls).
        cache_dir: the model cache directory (the file goes to ``model-rates/`` below it).
        refresh: measure again even when a calibration is cached.
        clock: seconds (default :func:`time.perf_counter`; tests pass a fake one).
        announce: called with the model's id before measuring (not when the calibration is cached).

    Raises:
        GemragError: the model could not be loaded or failed (as its calls would in a build).
    """
    if not refresh:
        found = _cached_record(llm, cache_dir)
        if found is not None and not load_drifted(found):
            return _from_record(found)
    if announce is not None:
        announce(llm.model_id)
    clock = clock or perf_counter
    nonce = secrets.token_hex(4)
    llm.complete([{"role": "user", "content": f"{nonce} Say yes."}], max_tokens=1, temperature=0.0)  # loads it
    read = _timed(
        llm,
        [{"role": "system", "content": f"[{nonce}a] You read carefully."}, {"role": "user", "content": _READ}],
        1,
        clock,
    )
    write = _timed(
        llm,
        [{"role": "user", "content": f"[{nonce}b] Count from 1 to 200, separated by commas."}],
        GENERATED,
        clock,
    )
    per_prompt, per_token = _solve(read, write)
    record = {
        "version": VERSION,
        "model": llm.model_id,
        "machine": machine(getattr(llm, "n_threads", None)),
        "measured_at": time.time(),
        "load": _load(),
        "prompt_per_second": 1.0 / per_prompt,
        "completion_per_second": 1.0 / per_token,
        "calls": [list(read), list(write)],
    }
    if busy(float(str(record["load"]))):  # not kept: its detail says so
        return _from_record(record)
    path = calibration_path(llm, cache_dir)
    with contextlib.suppress(OSError):  # an unwritable cache only costs a calibration next time
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    return _from_record(record)


def recorded_rates(responses: Sequence[dict[str, Any]], *, concurrency: int = 1, model: str = "") -> Rates | None:
    """Rates fitted to recorded calls (:meth:`gemrag.store.Store.recent_llm_responses`): least squares of
    ``seconds ~ prompt tokens x a + completion tokens x b`` with a, b >= 0 (one of them alone when the joint fit
    makes the other negative).

    Args:
        responses: cached responses with ``prompt_tokens``, ``completion_tokens`` and ``seconds``.
        concurrency: calls in flight at once whose seconds overlap (an HTTP backend's ``concurrency``).
        model: the model's id, for the detail.

    Returns:
        The rates, or None with fewer than :data:`MIN_RECORDED` calls that took time.
    """
    rows = [
        (float(r.get("prompt_tokens") or 0), float(r.get("completion_tokens") or 0), float(r.get("seconds") or 0))
        for r in responses
    ]
    rows = [r for r in rows if r[2] > 0 and (r[0] or r[1])]
    if len(rows) < MIN_RECORDED:
        return None
    data = np.array(rows, dtype=np.float64)
    x, t = data[:, :2], data[:, 2]
    coef, *_ = np.linalg.lstsq(x, t, rcond=None)
    a, b = (float(c) for c in coef)
    if a <= 0 or b <= 0:  # one rate alone: all-in seconds per token of the other kind
        column = 1 if b > 0 else 0
        share = float(t.sum() / max(x[:, column].sum(), 1.0))
        a, b = (0.0, share) if column == 1 else (share, 0.0)
    prompt_rate = 1.0 / a if a > 0 else float("inf")
    completion_rate = 1.0 / b if b > 0 else float("inf")
    detail = f"recorded: {len(rows)} calls of {model or 'this model'} in this memory"
    return Rates("recorded", prompt_rate, completion_rate, max(int(concurrency), 1), False, detail)


def describe(rates: Rates) -> dict[str, Any]:
    """``rates`` as a JSON-serializable dict (infinite rates as None)."""
    out = asdict(rates)
    for k in ("prompt_per_second", "completion_per_second"):
        if out[k] is not None and not np.isfinite(out[k]):
            out[k] = None
    return out
