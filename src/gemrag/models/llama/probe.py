"""Run the local LLM once in a child process, so that a native crash becomes a one-line error.

A llama.cpp built for another CPU (llama-cpp-python's default ``-march=native`` build, an AVX-512/AMX wheel
from pip's cache) dies with SIGSEGV or SIGILL inside ``decode``, which kills the whole Python process with a
bare ``Segmentation fault``. Before the first in-process load, :class:`gemrag.models.llama.backend.LlamaCppLLM`
therefore calls :func:`ensure_model_runs`: a child process loads the GGUF and runs one short chat completion
and one JSON-schema constrained completion (:func:`run_probe`). Its outcome is a :class:`ProbeResult` — ok,
crashed (killed by a signal: SIGSEGV, SIGILL, SIGBUS, SIGABRT...), failed (a Python exception) or timed out —
whose :attr:`ProbeResult.message` is one line naming the cause and the fix. Success is cached on disk (one
small JSON file per key under ``<model cache dir>/model-checks/``), keyed by the llama-cpp-python version,
its shared libraries (path, size, mtime), the CPU, the GGUF's fingerprint and the load parameters (``n_ctx``,
``n_batch``, ``n_threads``, ``n_gpu_layers``, chat format), so only the first load after any of them changes
pays the few seconds; a failure is never cached.

Environment variables:

* ``GEMRAG_SKIP_MODEL_PROBE=1`` — skip the check (for builds known to work); a crash then kills the process.
* ``GEMRAG_MODEL_PROBE_TIMEOUT=SECONDS`` — how long the child may take (default 300 s).

The child runs :mod:`gemrag.models.llama.probe_child` by path (``python -X faulthandler -c <bootstrap>
probe_child.py TARGET REQUEST``): it imports only the standard library (and ``llama_cpp``), so it starts in
milliseconds. A *target* (``"module:function"`` or ``"/path/file.py:function"``) is the code the child runs;
tests pass one that kills itself with SIGSEGV. :mod:`gemrag.models.llama.build` reads the CPU features
llama.cpp was compiled with and those of this CPU, which name the cause of a crash.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import logging
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gemrag.models.llama import probe_child
from gemrag.models.llama.build import (
    CPUINFO_FLAG,
    LLAMA_CPP_PIN,
    NON_PORTABLE_PREFIXES,
    NOT_ISA,
    PORTABLE_CMAKE_ARGS,
    REBUILD_FIX,
    REBUILD_FIX_OUTSIDE_REPO,
    build_cpu_features,
    build_system_info,
    cpu_flags,
    cpu_model,
    last_line,
    llama_cpp_version,
    missing_on_cpu,
    ordered_features,
    parse_cpu_features,
    signal_name,
)
from gemrag.models.llama.probe_child import DEFAULT_TARGET, MARKER

__all__ = [
    "CPUINFO_FLAG",
    "DEFAULT_TARGET",
    "LLAMA_CPP_PIN",
    "MARKER",
    "NON_PORTABLE_PREFIXES",
    "NOT_ISA",
    "PORTABLE_CMAKE_ARGS",
    "ProbeRequest",
    "ProbeResult",
    "REBUILD_FIX",
    "REBUILD_FIX_OUTSIDE_REPO",
    "SKIP_ENV",
    "TIMEOUT_ENV",
    "build_cpu_features",
    "build_system_info",
    "cpu_flags",
    "cpu_model",
    "default_timeout",
    "ensure_model_runs",
    "llama_cpp_version",
    "missing_on_cpu",
    "ordered_features",
    "parse_cpu_features",
    "probe_key",
    "run_probe",
    "signal_name",
]

log = logging.getLogger("gemrag.models.llama.probe")

SKIP_ENV = "GEMRAG_SKIP_MODEL_PROBE"
TIMEOUT_ENV = "GEMRAG_MODEL_PROBE_TIMEOUT"
#: Seconds the child may take by default (loading a 1.5B GGUF and 20 tokens take a few seconds on 2 cores).
DEFAULT_TIMEOUT = 300.0
#: Windows exit codes of native crashes (there is no signal there).
WINDOWS_CRASHES = {0xC0000005: "access violation", 0xC000001D: "illegal instruction", 0xC0000409: "stack overrun"}
#: For each step of the child: how a crash message and a timeout message name it.
_PHASES = {
    "start": ("while starting the check of", "starting"),
    "import": ("while loading the llama.cpp library for", "importing llama_cpp"),
    "load": ("while loading", "loading the model"),
    "chat": ("during the first completion of", "running the first completion"),
    "json": ("during a JSON-constrained completion of", "running a JSON-constrained completion"),
    "close": ("while freeing", "freeing the model"),
    "done": ("after running", "exiting"),
}
# The child's bootstrap: drop the current directory from sys.path (a ./llama_cpp must not shadow the real
# one) and run probe_child.py as a private module (dataclasses need it in sys.modules).
_BOOT = (
    "import importlib.util, sys\n"
    "del sys.path[0]\n"
    "spec = importlib.util.spec_from_file_location('_gemrag_probe_child', sys.argv[1])\n"
    "mod = importlib.util.module_from_spec(spec); sys.modules[spec.name] = mod; spec.loader.exec_module(mod)\n"
    "sys.exit(mod.child_main(sys.argv[2:]))\n"
)

Status = Literal["ok", "crashed", "failed", "timeout"]


@dataclass(frozen=True)
class ProbeRequest:
    """What the child loads and how (the same parameters the in-process load uses).

    Attributes:
        model_path: the GGUF file (str path).
        label: the model's name in messages (``"qwen2.5-coder-1.5b"``, a file name).
        n_ctx: context window (tokens). n_threads: CPU threads (None = llama.cpp's default).
        n_batch: prompt batch size (tokens). n_gpu_layers: layers offloaded to a GPU (0 = none, -1 = all).
        chat_format: a llama-cpp-python chat format, None = the GGUF's template. seed: sampling seed.
        fingerprint: the GGUF's identity (see :func:`gemrag.models.llama.weights.gguf_fingerprint`); only used in
            the cache key.
    """

    model_path: str
    label: str = ""
    n_ctx: int = 4096
    n_threads: int | None = None
    n_batch: int = 512
    n_gpu_layers: int = 0
    chat_format: str | None = None
    seed: int = 0
    fingerprint: str = ""


@dataclass(frozen=True)
class ProbeResult:
    """The outcome of one check.

    Attributes:
        status: ``"ok"``, ``"crashed"`` (killed by a signal / a native crash code), ``"failed"`` (a Python
            exception or an unexplained exit code) or ``"timeout"``.
        model: the model's label. seconds: wall time of the child (float, s).
        phase: the last step the child started: start, import, load, chat, json, close or done.
        signal: the signal's name for a crash (``"SIGSEGV"``), else None. returncode: the child's exit code.
        error: the exception text (failed), the innermost Python frame or assertion text (crashed), or "".
        version: the llama-cpp-python version (None if unknown). features: the CPU features the build was
            compiled with, in llama.cpp's order. cpu_missing: those of them this CPU lacks.
        chat: the chat completion's text. json: the constrained completion's text. timeout: the limit used (s).
    """

    status: Status
    model: str
    seconds: float = 0.0
    phase: str = "start"
    signal: str | None = None
    returncode: int | None = None
    error: str = ""
    version: str | None = None
    features: tuple[str, ...] = ()
    cpu_missing: tuple[str, ...] = ()
    chat: str = ""
    json: str = ""
    timeout: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the model loaded and completed both prompts."""
        return self.status == "ok"

    @property
    def message(self) -> str:
        """One line: what happened, why, and what to do."""
        return _message(self)


def _message(r: ProbeResult) -> str:
    isa = [f for f in r.features if f not in NOT_ISA]
    build = f"llama-cpp-python {r.version or 'unknown version'}, built with {' '.join(isa) or 'unknown CPU features'}"
    if r.status == "ok":
        return f"{r.model} runs ({build}): answered in {r.seconds:.1f} s"
    if r.status == "timeout":
        return (
            f"llama.cpp did not finish a short test completion of {r.model} within {r.timeout:g} s ({build}; "
            f"it was still {_PHASES.get(r.phase, ('', 'running'))[1]}): the machine is too slow or overloaded, or "
            f"llama.cpp hangs; set {TIMEOUT_ENV}=SECONDS to wait longer, or {SKIP_ENV}=1 to skip this check"
        )
    if r.status == "failed":
        return f"llama.cpp could not run {r.model} ({build}): {r.error or f'exit code {r.returncode}'}"
    where = f", {r.error}" if r.error else ""
    head = f"llama.cpp crashed with {r.signal} {_PHASES.get(r.phase, ('while running',))[0]} {r.model} ({build}{where})"
    if r.signal == "SIGKILL":
        return (
            f"{head}: it was killed, most likely by the out-of-memory killer; free memory, or use a smaller model "
            "(--llm-model qwen2.5-coder-0.5b) or context (GEMRAG_LLM__N_CTX)"
        )
    cause = "this build of llama.cpp does not work on this CPU"
    if r.cpu_missing:
        cause = f"this build of llama.cpp uses {' '.join(r.cpu_missing)}, which this CPU lacks"
    fix = f"{REBUILD_FIX} (outside the gemrag repository: {REBUILD_FIX_OUTSIDE_REPO})"
    return f"{head}: {cause}; rebuild it portably: {fix}"


# -- the cache of successful checks ---------------------------------------------------------------------------


def _library_files() -> list[list[Any]]:
    spec = importlib.util.find_spec("llama_cpp")
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec is not None else []
    dirs = [d for r in roots for d in (r, r / "lib")]
    if os.environ.get("LLAMA_CPP_LIB_PATH"):
        dirs.append(Path(os.environ["LLAMA_CPP_LIB_PATH"]))
    files: list[list[Any]] = []
    for d in dirs:
        with contextlib.suppress(OSError):
            for p in sorted(d.iterdir()):
                if re.search(r"\.(so|dylib|dll)(\.|$)", p.name) and p.is_file():
                    st = p.stat()
                    files.append([str(p.resolve()), st.st_size, st.st_mtime_ns])
    return files


def probe_key(request: ProbeRequest) -> str:
    """The cache key (sha256 hex) of a check: the llama.cpp build, this CPU, the interpreter and ``request``.

    The build is llama-cpp-python's version and its shared libraries' paths, sizes and mtimes (a rebuild
    changes them); the GGUF is ``request.fingerprint`` (or its path, size and mtime when empty).
    """
    gguf: Any = request.fingerprint
    if not gguf:
        st = Path(request.model_path).stat()
        gguf = [str(Path(request.model_path).resolve()), st.st_size, st.st_mtime_ns]
    payload = {
        "v": 1,
        "llama_cpp": llama_cpp_version(),
        "libs": _library_files(),
        "python": sys.executable,
        "cpu": [platform.machine(), cpu_model(), hashlib.sha256(" ".join(sorted(cpu_flags())).encode()).hexdigest()],
        "gguf": gguf,
        "request": {k: v for k, v in dataclasses.asdict(request).items() if k not in ("label", "fingerprint")},
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()


def _read_cached(path: Path) -> ProbeResult | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        result = ProbeResult(**{**data, "features": tuple(data.get("features", ())), "cpu_missing": ()})
    except (OSError, ValueError, TypeError):
        return None
    return result if result.ok else None


def _write_cached(path: Path, result: ProbeResult) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".probe.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(dataclasses.asdict(result), f)
        os.replace(tmp, path)
    except OSError as e:  # a read-only cache only costs a check per load
        log.debug("could not cache the model check in %s: %s", path, e)


def default_timeout() -> float:
    """Seconds the check may take: ``$GEMRAG_MODEL_PROBE_TIMEOUT`` when set to a positive number, else 300."""
    try:
        seconds = float(os.environ.get(TIMEOUT_ENV, "").strip() or DEFAULT_TIMEOUT)
    except ValueError:
        return DEFAULT_TIMEOUT
    return seconds if seconds > 0 else DEFAULT_TIMEOUT


def skip_requested() -> bool:
    """True when ``GEMRAG_SKIP_MODEL_PROBE`` is set to 1/true/yes/on."""
    return os.environ.get(SKIP_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def ensure_model_runs(
    request: ProbeRequest, *, cache_dir: Path | None = None, timeout: float | None = None
) -> ProbeResult | None:
    """Check once per build/CPU/model/parameters that llama.cpp runs ``request`` in a child process.

    Args:
        request: what to load and how.
        cache_dir: the model cache directory; results go to ``<cache_dir>/model-checks/<key>.json``. Default
            :func:`gemrag.models.llama.weights.default_cache_dir`.
        timeout: seconds the child may take; default ``$GEMRAG_MODEL_PROBE_TIMEOUT`` or 300.

    Returns:
        The (fresh or cached) successful result, or None when ``GEMRAG_SKIP_MODEL_PROBE`` is set.

    Raises:
        ModelCrashError: the child crashed, failed or timed out; the message is :attr:`ProbeResult.message`.
    """
    from gemrag.errors import ModelCrashError
    from gemrag.models.llama.weights import default_cache_dir

    if skip_requested():
        return None
    path = (cache_dir if cache_dir is not None else default_cache_dir()) / "model-checks" / f"{probe_key(request)}.json"
    cached = _read_cached(path)
    if cached is not None:
        return cached
    log.info("checking that llama.cpp runs %s (once; the result is cached)", request.label or request.model_path)
    result = run_probe(request, timeout=default_timeout() if timeout is None else timeout)
    if not result.ok:
        raise ModelCrashError(result.message)
    _write_cached(path, result)
    return result


# -- the parent's side: run the child and read what it said ---------------------------------------------------


def run_probe(
    request: ProbeRequest,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    target: str = DEFAULT_TARGET,
    env: dict[str, str] | None = None,
) -> ProbeResult:
    """Run ``target`` on ``request`` in a child Python process and classify the outcome (never cached).

    Args:
        request: what to load and how.
        timeout: seconds before the child is killed (float, > 0).
        target: ``"llama"`` (the real check), or ``"module:function"`` / ``"/path/file.py:function"``: a
            function ``f(request: dict, emit) -> dict`` run in the child (``emit(event, **data)`` reports
            progress, e.g. ``emit("phase", phase="load")``); for tests.
        env: the child's environment (default: this process's).

    Returns:
        A :class:`ProbeResult`; it never raises for the child's failures.
    """
    cmd = [sys.executable, "-X", "faulthandler", "-c", _BOOT, str(Path(probe_child.__file__).resolve()), target]
    cmd.append(json.dumps(dataclasses.asdict(request)))
    label = request.label or Path(request.model_path).name
    t0 = time.perf_counter()
    timed_out = False
    rc: int | None = None
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, env=env, check=False)
        out, err, rc = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        out, err, timed_out = _as_bytes(e.stdout), _as_bytes(e.stderr), True
    except OSError as e:
        return ProbeResult("failed", label, time.perf_counter() - t0, error=f"cannot start {sys.executable}: {e}")
    seconds = timeout if timed_out else time.perf_counter() - t0
    result = _interpret(out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), rc, timed_out, label, seconds)
    return dataclasses.replace(result, timeout=timeout)


def _as_bytes(data: bytes | str | None) -> bytes:
    if data is None:
        return b""
    return data.encode("utf-8", "replace") if isinstance(data, str) else data


def _crash_detail(stderr: str) -> str:
    """A native assertion (``GGML_ASSERT(...) failed``), else the innermost Python frame faulthandler printed."""
    for line in stderr.splitlines():
        if "GGML_ASSERT" in line or "terminate called" in line:
            return line.strip()[:300]
    frame = re.search(r'File "([^"]+)", line (\d+) in (\S+)', stderr.partition("most recent call first")[2])
    if frame:
        path = "/".join(Path(frame.group(1)).parts[-2:])
        return f"in {path}:{frame.group(3)}"
    return ""


def _interpret(out: str, err: str, rc: int | None, timed_out: bool, label: str, seconds: float) -> ProbeResult:
    phase, version, done, error = "start", None, None, None
    features: tuple[str, ...] = ()
    for line in out.splitlines():
        if not line.startswith(MARKER):
            continue
        try:
            ev = json.loads(line[len(MARKER) :])
        except ValueError:
            continue
        kind = ev.get("event")
        if kind == "phase":
            phase = str(ev.get("phase", phase))
        elif kind == "build":
            version = ev.get("version")
            features = ordered_features(str(ev.get("system_info", "")))
        elif kind == "done":
            done, phase = ev, "done"
        elif kind == "error":
            error = f"{ev.get('type', 'Error')}: {ev.get('message', '')}".replace("\n", " ")[:500]
    version = version or llama_cpp_version()
    common: dict[str, Any] = {
        "seconds": seconds,
        "phase": phase,
        "returncode": rc,
        "version": version,
        "features": features,
    }
    if timed_out:
        return ProbeResult("timeout", label, **common)
    if rc is not None and rc < 0:
        missing = missing_on_cpu(features, cpu_flags())
        detail = _crash_detail(err)
        return ProbeResult("crashed", label, signal=signal_name(-rc), error=detail, cpu_missing=missing, **common)
    if rc is not None and (rc & 0xFFFFFFFF) in WINDOWS_CRASHES:
        return ProbeResult("crashed", label, signal=WINDOWS_CRASHES[rc & 0xFFFFFFFF], **common)
    if rc == 0 and done is not None:
        return ProbeResult("ok", label, chat=str(done.get("chat", "")), json=str(done.get("json", "")), **common)
    return ProbeResult("failed", label, error=error or last_line(err) or f"the check exited with code {rc}", **common)
