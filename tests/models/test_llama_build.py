"""The installed llama.cpp build is the portable one requirements.txt asks for (issue 7, point 1).

A ``-march=native`` build compiled on an AVX-512/AMX Xeon segfaulted; requirements.txt builds for AVX2 with
no AVX-512 and no AMX. pip's wheel cache ignores build flags, so a natively built wheel could come back from
the cache: this test reads the compiled CPU features of the installed build (``llama_print_system_info``, in
a child process) and fails on any AVX-512 or AMX feature. (On a CPU without AVX-512 a native build reports
the same features as the portable one; there ``.ci/run``'s cache purge per dependency change is what
guarantees a fresh portable build.)
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from realparts import require_real

pytestmark = pytest.mark.integration

PORTABLE_X86 = {"SSE3", "SSSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2"}


def _features() -> dict[str, str]:
    code = "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    features: dict[str, str] = {}
    for part in out.stdout.replace("\n", "|").split("|"):
        if "=" in part:
            key, _, value = part.rpartition("=")
            features[key.split(":")[-1].strip()] = value.strip()
    return features


def test_build_has_no_avx512_or_amx() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        require_real("llama-cpp-python is not installed (pip install -r requirements.txt '.[local]')")
    features = _features()
    enabled = {k for k, v in features.items() if v == "1"}
    assert "AVX2" in enabled or not PORTABLE_X86 & set(features), features  # x86: the AVX2 baseline is there
    forbidden = sorted(k for k in enabled if k.startswith(("AVX512", "AMX", "AVX_VNNI")))
    assert not forbidden, f"llama.cpp was built with {forbidden}: reinstall with pip install -r requirements.txt"
