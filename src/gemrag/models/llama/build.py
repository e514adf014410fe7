"""The installed llama.cpp build and this CPU: which instruction sets each has.

llama-cpp-python's default build compiles llama.cpp with ``-march=native`` (``GGML_NATIVE=ON``), which on a CPU
with AVX-512/AMX produced a library that crashes in ``decode``; gemrag installs a portable build instead
(``requirements.txt``, flags :data:`PORTABLE_CMAKE_ARGS`). This module reads what a build was compiled with
(``llama_print_system_info``, in a child process so a broken library cannot kill the caller), what this CPU
offers (``/proc/cpuinfo``), and names what the first lacks from the second. :mod:`gemrag.models.llama.probe` uses it
to explain a crash; ``tests/models/test_llama_build.py`` uses it to check the installed build is portable.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform
import re
import signal
import subprocess
import sys
from pathlib import Path

__all__ = [
    "CPUINFO_FLAG",
    "LLAMA_CPP_PIN",
    "NON_PORTABLE_PREFIXES",
    "NOT_ISA",
    "PORTABLE_CMAKE_ARGS",
    "REBUILD_FIX",
    "REBUILD_FIX_OUTSIDE_REPO",
    "build_cpu_features",
    "build_system_info",
    "cpu_flags",
    "cpu_model",
    "last_line",
    "llama_cpp_version",
    "missing_on_cpu",
    "ordered_features",
    "parse_cpu_features",
    "signal_name",
]

#: The llama-cpp-python version requirements.txt pins.
LLAMA_CPP_PIN = "0.3.36"
PORTABLE_CMAKE_ARGS = "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
#: The fix for a llama.cpp build that does not run on this CPU, from the gemrag repository.
REBUILD_FIX = "pip cache remove llama_cpp_python && pip install --force-reinstall --no-deps -r requirements.txt"
#: The same fix for users outside the repository.
REBUILD_FIX_OUTSIDE_REPO = (
    f'CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}" pip install --force-reinstall --no-cache-dir --no-deps '
    f"llama-cpp-python=={LLAMA_CPP_PIN}"
)
#: Build features that are not in the portable x86-64 build.
NON_PORTABLE_PREFIXES = ("AVX512", "AMX", "AVX_VNNI")
#: Entries of ``llama_print_system_info`` that are not instruction sets (left out of messages).
NOT_ISA = frozenset({"LLAMAFILE", "OPENMP", "REPACK", "ACCELERATE", "KLEIDIAI"})
#: llama.cpp's CPU feature names -> the /proc/cpuinfo flag the CPU needs for them (x86).
CPUINFO_FLAG = {
    "SSE3": "pni",
    "SSSE3": "ssse3",
    "AVX": "avx",
    "AVX2": "avx2",
    "F16C": "f16c",
    "FMA": "fma",
    "BMI2": "bmi2",
    "AVX_VNNI": "avx_vnni",
    "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16",
    "AMX_INT8": "amx_int8",
    "AMX_BF16": "amx_bf16",
    "AMX_TILE": "amx_tile",
}


def signal_name(signum: int) -> str:
    """``"SIGSEGV"`` for 11; ``"signal N"`` for a number that names no signal here."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def last_line(text: str) -> str:
    """The last non-blank line of ``text``, stripped and cut to 300 characters ("" if none)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def parse_cpu_features(info: str | bytes) -> set[str]:
    """The features enabled in a ``llama_cpp.llama_print_system_info()`` string.

    ``b"CPU : SSE3 = 1 | AVX = 1 | AVX512 = 0 | LLAMAFILE = 1 | "`` gives ``{"SSE3", "AVX", "LLAMAFILE"}``:
    entries whose value is ``1``. Entries of the CPU section (or of no section, as older builds print) keep
    their bare name; those of other backends' sections are prefixed, e.g. ``"CUDA.USE_GRAPHS"``.

    Args:
        info: the string (or bytes, decoded as UTF-8 with replacement).

    Returns:
        The enabled feature names (a new set; empty for an empty string).
    """
    if isinstance(info, bytes):
        info = info.decode("utf-8", errors="replace")
    enabled: set[str] = set()
    section = ""
    for item in re.split(r"[|\n]", info):
        key, eq, value = item.partition("=")
        if not eq:
            continue
        if ":" in key:
            section, _, key = key.rpartition(":")
            section = section.strip().upper()
        key = key.strip()
        if key and value.strip() == "1":
            enabled.add(key if section in ("", "CPU") else f"{section}.{key}")
    return enabled


def ordered_features(info: str) -> tuple[str, ...]:
    """:func:`parse_cpu_features` of ``info`` in the order llama.cpp prints them (a tuple)."""
    found = parse_cpu_features(info)
    names = [part.partition("=")[0].rpartition(":")[2].strip() for part in re.split(r"[|\n]", info)]
    return tuple(dict.fromkeys(n for n in names if n in found))


def build_system_info(timeout: float = 120.0) -> str:
    """The installed llama.cpp's ``llama_print_system_info()`` string, read in a child process.

    Raises:
        ModelNotAvailableError: llama-cpp-python is not installed.
        ModelCrashError: importing it crashed or failed in the child (the message says how).
    """
    from gemrag.errors import ModelCrashError, ModelNotAvailableError

    if importlib.util.find_spec("llama_cpp") is None:
        raise ModelNotAvailableError("llama-cpp-python is not installed; pip install -r requirements.txt '.[local]'")
    code = "import sys, llama_cpp; sys.stdout.write(llama_cpp.llama_print_system_info().decode('utf-8', 'replace'))"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False
        )
    except subprocess.TimeoutExpired as e:
        raise ModelCrashError(f"importing llama_cpp did not finish within {timeout:g} s") from e
    if proc.returncode < 0:
        raise ModelCrashError(
            f"importing llama_cpp crashed with {signal_name(-proc.returncode)}; rebuild it portably: {REBUILD_FIX}"
        )
    if proc.returncode != 0:
        raise ModelCrashError(f"importing llama_cpp failed: {last_line(proc.stderr.decode('utf-8', 'replace'))}")
    return proc.stdout.decode("utf-8", errors="replace")


def build_cpu_features(timeout: float = 120.0) -> set[str]:
    """The CPU features the installed llama.cpp was compiled with (``{"SSE3", "AVX", "AVX2", ...}``).

    Read in a child process (:func:`build_system_info`) and parsed by :func:`parse_cpu_features`; a portable
    x86-64 build has no ``AVX512*`` or ``AMX*`` entry.

    Raises:
        ModelNotAvailableError: llama-cpp-python is not installed.
        ModelCrashError: importing it crashed or failed in the child.
    """
    return parse_cpu_features(build_system_info(timeout))


def _cpuinfo_field(*names: str) -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in names:
            return value.strip()
    return ""


def cpu_flags() -> set[str]:
    """This CPU's feature flags from ``/proc/cpuinfo`` (``flags`` on x86, ``Features`` on ARM); empty elsewhere."""
    return set(_cpuinfo_field("flags", "features").split())


def cpu_model() -> str:
    """This CPU's model name (``/proc/cpuinfo``, else :func:`platform.processor`), or ``"unknown CPU"``."""
    return _cpuinfo_field("model name", "cpu model") or platform.processor() or "unknown CPU"


def missing_on_cpu(features: tuple[str, ...] | set[str], flags: set[str]) -> tuple[str, ...]:
    """Build features (llama.cpp names) whose x86 flag ``flags`` lacks; empty when ``flags`` is empty/not x86."""
    if "avx" not in flags and "sse2" not in flags:
        return ()
    return tuple(f for f in features if f in CPUINFO_FLAG and CPUINFO_FLAG[f] not in flags)


def llama_cpp_version() -> str | None:
    """The installed llama-cpp-python version (package metadata, not imported), or None."""
    try:
        return importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        return None
