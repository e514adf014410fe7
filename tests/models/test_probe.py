"""The child-process model check (issue 7, point 2): a native crash of llama.cpp becomes a one-line error.

No llama.cpp is needed: the child runs stand-in targets written to a temporary file, which kill themselves
with a signal, raise, hang or succeed.
"""

from __future__ import annotations

import functools
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fakes import HashEmbedder
from gemrag import cli
from gemrag.errors import ModelCrashError
from gemrag.models.llama import backend as llama_mod
from gemrag.models.llama import loading as llama_loading
from gemrag.models.llama import probe
from gemrag.models.llama.probe import ProbeRequest, ProbeResult

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

NATIVE_INFO = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | AVX512 = 1 | "
    "AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "
)
PORTABLE_INFO = b"CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | LLAMAFILE = 1 | "

TARGETS = """
import os, signal, sys, time

NATIVE_INFO = {native!r}


def crash(request, emit):
    emit("build", version="0.3.36", system_info=NATIVE_INFO)
    emit("phase", phase="load")
    emit("phase", phase="chat")
    os.kill(os.getpid(), getattr(signal, request["label"].split("/")[-1]))


def raises(request, emit):
    emit("phase", phase="load")
    raise ValueError("failed to load model from file: bad magic")


def hangs(request, emit):
    emit("phase", phase="load")
    time.sleep(60)


def exits(request, emit):
    sys.stdout.flush()
    os._exit(3)


def works(request, emit):
    emit("build", version="0.3.36", system_info="CPU : AVX2 = 1 | ")
    emit("phase", phase="chat")
    return {{"chat": "OK", "json": '{{"answer": true}}', "n_ctx": request["n_ctx"]}}
"""


@pytest.fixture
def targets(tmp_path: Path) -> str:
    """Path of a module of stand-in child targets (``<path>:<function>`` selects one)."""
    path = tmp_path / "probe_targets.py"
    path.write_text(textwrap.dedent(TARGETS.format(native=NATIVE_INFO)), encoding="utf-8")
    return str(path)


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    """A file that passes gemrag's GGUF magic check (never loaded by llama.cpp in these tests)."""
    path = tmp_path / "tiny-model.gguf"
    path.write_bytes(b"GGUF" + bytes(4096))
    return path


def request(label: str = "SIGSEGV", path: str = "/nowhere/tiny.gguf") -> ProbeRequest:
    return ProbeRequest(model_path=path, label=label, n_ctx=512, n_threads=1)


# -- pure functions ----------------------------------------------------------------------------------------------


def test_parse_cpu_features_current_format() -> None:
    portable = {"SSE3", "SSSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2", "LLAMAFILE"}
    assert probe.parse_cpu_features(PORTABLE_INFO) == portable
    native = probe.parse_cpu_features(NATIVE_INFO)
    assert {"AVX512", "AVX512_BF16", "AMX_INT8"} <= native
    assert probe.ordered_features(NATIVE_INFO)[:3] == ("SSE3", "SSSE3", "AVX")


def test_parse_cpu_features_old_format_keeps_only_enabled() -> None:
    old = (
        "AVX = 1 | AVX_VNNI = 0 | AVX2 = 1 | AVX512 = 0 | AVX512_BF16 = 0 | FMA = 1 | NEON = 0 | F16C = 1 | SSE3 = 1 |"
    )
    assert probe.parse_cpu_features(old) == {"AVX", "AVX2", "FMA", "F16C", "SSE3"}


def test_parse_cpu_features_other_backends_are_prefixed() -> None:
    info = "CUDA : ARCHS = 890 | USE_GRAPHS = 1 | PEER_MAX_BATCH_SIZE = 128 | CPU : SSE3 = 1 | AVX2 = 1 | \n"
    assert probe.parse_cpu_features(info) == {"CUDA.USE_GRAPHS", "SSE3", "AVX2"}
    assert probe.parse_cpu_features("") == set()
    assert probe.parse_cpu_features("garbage without entries") == set()


def test_missing_on_cpu() -> None:
    flags = {"sse2", "pni", "ssse3", "avx", "avx2", "fma", "f16c", "bmi2"}
    assert probe.missing_on_cpu(("AVX2", "AVX512", "AMX_INT8", "LLAMAFILE"), flags) == ("AVX512", "AMX_INT8")
    assert probe.missing_on_cpu(("AVX512",), set()) == ()  # no /proc/cpuinfo: nothing claimed


# -- the child: crashed / failed / timed out / ok ------------------------------------------------------------------


@posix_only
@pytest.mark.parametrize("name", ["SIGSEGV", "SIGILL", "SIGBUS", "SIGABRT"])
def test_native_crash_is_named_with_its_fix(targets: str, name: str) -> None:
    result = probe.run_probe(request(name), timeout=60, target=f"{targets}:crash")
    assert result.status == "crashed" and not result.ok
    assert result.signal == name and result.returncode == -getattr(signal, name)
    assert result.phase == "chat" and "AMX_INT8" in result.features
    msg = result.message
    assert "\n" not in msg
    assert msg.startswith(f"llama.cpp crashed with {name} during the first completion of {name}")
    assert "llama-cpp-python 0.3.36, built with SSE3" in msg and "AVX512_BF16 AMX_INT8" in msg
    assert "LLAMAFILE" not in msg  # not an instruction set
    assert probe.REBUILD_FIX in msg and "-DGGML_NATIVE=OFF" in msg and "llama-cpp-python==0.3.36" in msg
    assert "/probe_targets.py:crash" in msg  # faulthandler's innermost frame


@posix_only
def test_sigkill_suggests_memory(targets: str) -> None:
    result = probe.run_probe(request("SIGKILL"), timeout=60, target=f"{targets}:crash")
    assert result.signal == "SIGKILL" and "out-of-memory" in result.message


def test_python_exception_is_failed_with_its_text(targets: str) -> None:
    result = probe.run_probe(request(), timeout=60, target=f"{targets}:raises")
    assert result.status == "failed" and result.phase == "load"
    assert result.error == "ValueError: failed to load model from file: bad magic"
    assert result.message.startswith("llama.cpp could not run SIGSEGV (") and result.message.endswith("bad magic")


def test_unexplained_exit_code_is_failed(targets: str) -> None:
    result = probe.run_probe(request(), timeout=60, target=f"{targets}:exits")
    assert result.status == "failed" and result.returncode == 3 and "exited with code 3" in result.message


def test_hanging_child_times_out(targets: str) -> None:
    result = probe.run_probe(request("slow.gguf"), timeout=1.5, target=f"{targets}:hangs")
    assert result.status == "timeout" and result.phase == "load" and result.timeout == 1.5
    assert "within 1.5 s" in result.message and probe.TIMEOUT_ENV in result.message
    assert "it was still loading the model" in result.message and "\n" not in result.message


def test_success(targets: str) -> None:
    result = probe.run_probe(request(), timeout=60, target=f"{targets}:works")
    assert result.ok and result.chat == "OK" and result.json == '{"answer": true}' and result.features == ("AVX2",)
    assert result.seconds > 0 and result.message.startswith("SIGSEGV runs (llama-cpp-python 0.3.36")


def test_unknown_target_is_failed() -> None:
    result = probe.run_probe(request(), timeout=60, target="no_such_module_xyz:fn")
    assert result.status == "failed" and "ModuleNotFoundError" in result.error


# -- ensure_model_runs: cached success, uncached failure, opt-out --------------------------------------------------


def _counting(monkeypatch: pytest.MonkeyPatch, result: ProbeResult) -> list[ProbeRequest]:
    calls: list[ProbeRequest] = []

    def fake(req: ProbeRequest, **kwargs: Any) -> ProbeResult:
        calls.append(req)
        return result

    monkeypatch.setattr(probe, "run_probe", fake)
    return calls


def test_success_is_cached_per_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, gguf: Path) -> None:
    monkeypatch.delenv(probe.SKIP_ENV, raising=False)
    calls = _counting(monkeypatch, ProbeResult("ok", "tiny", 1.0, phase="done", features=("AVX2",)))
    req = ProbeRequest(str(gguf), "tiny", n_ctx=512, fingerprint="head-sha256:abc:4100")
    first = probe.ensure_model_runs(req, cache_dir=tmp_path)
    again = probe.ensure_model_runs(req, cache_dir=tmp_path)
    assert first is not None and again is not None and again.ok and again.features == ("AVX2",)
    assert len(calls) == 1 and len(list((tmp_path / "model-checks").glob("*.json"))) == 1
    other_ctx = ProbeRequest(str(gguf), "tiny", n_ctx=1024, fingerprint=req.fingerprint)
    probe.ensure_model_runs(other_ctx, cache_dir=tmp_path)
    assert len(calls) == 2  # another n_ctx is another check
    monkeypatch.setattr(probe, "_library_files", lambda: [["/x/libllama.so", 1, 2]])  # a rebuilt llama.cpp
    probe.ensure_model_runs(req, cache_dir=tmp_path)
    assert len(calls) == 3


def test_probe_key_changes_with_model_and_build(monkeypatch: pytest.MonkeyPatch, gguf: Path) -> None:
    base = ProbeRequest(str(gguf), "tiny", fingerprint="sha256:a")
    key = probe.probe_key(base)
    assert probe.probe_key(ProbeRequest(str(gguf), "other label", fingerprint="sha256:a")) == key
    assert probe.probe_key(ProbeRequest(str(gguf), "tiny", fingerprint="sha256:b")) != key
    assert probe.probe_key(ProbeRequest(str(gguf), "tiny", fingerprint="sha256:a", chat_format="chatml")) != key
    monkeypatch.setattr(probe, "llama_cpp_version", lambda: "9.9.9")
    assert probe.probe_key(base) != key


def test_failure_is_not_cached_and_raises(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, gguf: Path) -> None:
    monkeypatch.delenv(probe.SKIP_ENV, raising=False)
    crashed = ProbeResult("crashed", "tiny", 1.0, phase="chat", signal="SIGSEGV", returncode=-11, version="0.3.36")
    calls = _counting(monkeypatch, crashed)
    req = ProbeRequest(str(gguf), "tiny")
    for _ in range(2):
        with pytest.raises(ModelCrashError, match="crashed with SIGSEGV during the first completion of tiny"):
            probe.ensure_model_runs(req, cache_dir=tmp_path)
    assert len(calls) == 2 and not list(tmp_path.rglob("*.json"))


def test_skip_env_var(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, gguf: Path) -> None:
    calls = _counting(monkeypatch, ProbeResult("crashed", "tiny", signal="SIGSEGV"))
    monkeypatch.setenv(probe.SKIP_ENV, "1")
    assert probe.ensure_model_runs(ProbeRequest(str(gguf)), cache_dir=tmp_path) is None
    assert calls == []


def test_timeout_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(probe.TIMEOUT_ENV, "42")
    assert probe.default_timeout() == 42.0
    monkeypatch.setenv(probe.TIMEOUT_ENV, "soon")
    assert probe.default_timeout() == probe.DEFAULT_TIMEOUT


# -- LlamaCppLLM.load and the CLI ---------------------------------------------------------------------------------


@posix_only
def test_load_raises_model_crash_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, gguf: Path, targets: str
) -> None:
    monkeypatch.delenv(probe.SKIP_ENV, raising=False)
    monkeypatch.setattr(llama_loading, "_llama_installed", lambda: True)
    runs: list[int] = []
    real = functools.partial(probe.run_probe, target=f"{targets}:crash")

    def crashing(req: ProbeRequest, **kwargs: Any) -> ProbeResult:
        runs.append(1)
        return real(ProbeRequest(req.model_path, "SIGSEGV"), **kwargs)  # the target reads the signal from the label

    monkeypatch.setattr(probe, "run_probe", crashing)
    llm = llama_mod.LlamaCppLLM(gguf, n_ctx=512, cache_dir=tmp_path / "models")
    with pytest.raises(ModelCrashError, match=r"crashed with SIGSEGV .*pip install --force-reinstall"):
        llm.load()
    with pytest.raises(ModelCrashError, match="SIGSEGV"):  # remembered: no second child per call
        llm.complete([{"role": "user", "content": "hi"}])
    assert runs == [1] and llm._llm is None


def test_load_checks_before_importing_llama_cpp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, gguf: Path) -> None:
    monkeypatch.delenv(probe.SKIP_ENV, raising=False)
    monkeypatch.setattr(llama_loading, "_llama_installed", lambda: True)
    order: list[str] = []

    def fake_probe(req: ProbeRequest, **kwargs: Any) -> ProbeResult:
        order.append(f"probe {req.label} n_ctx={req.n_ctx} gpu={req.n_gpu_layers}")
        return ProbeResult("crashed", req.label, signal="SIGILL")

    def fake_import() -> Any:
        order.append("import")
        raise AssertionError("llama_cpp imported before the check")

    monkeypatch.setattr(probe, "run_probe", fake_probe)
    monkeypatch.setattr(llama_loading, "_import_llama", fake_import)
    llm = llama_mod.LlamaCppLLM(gguf, n_ctx=512, n_gpu_layers=-1, cache_dir=tmp_path)
    with pytest.raises(ModelCrashError, match="SIGILL"):
        llm.count_tokens("hello")
    assert order == ["probe tiny-model.gguf n_ctx=512 gpu=-1"]


runner = CliRunner()


@posix_only
def test_doctor_reports_a_crash_with_exit_code_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, gguf: Path, targets: str
) -> None:
    monkeypatch.setattr(llama_loading, "_llama_installed", lambda: True)
    monkeypatch.setattr(probe, "llama_cpp_version", lambda: "0.3.36")
    monkeypatch.setattr(probe, "build_system_info", lambda timeout=120.0: NATIVE_INFO)
    real = functools.partial(probe.run_probe, target=f"{targets}:crash")
    monkeypatch.setattr(probe, "run_probe", lambda req, **kw: real(ProbeRequest(req.model_path, "SIGSEGV"), **kw))
    from gemrag.models import factory

    monkeypatch.setattr(factory, "build_embedder", lambda settings: HashEmbedder())
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(cli.app, ["doctor", "--llm-model", str(gguf)], env={"COLUMNS": "300"})
    print(result.output)
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    crash = [ln for ln in lines if ln.startswith("error: llama.cpp crashed with SIGSEGV")]
    assert len(crash) == 1, result.output
    assert probe.REBUILD_FIX in crash[0] and "AMX_INT8" in crash[0]
    assert any(ln.startswith("llama.cpp") and "built with" in ln and "not portable" in ln for ln in lines)
    assert any(ln.startswith("embedder") and "(1, 256) float32" in ln for ln in lines)
    assert any(ln.startswith("LLM") and "head-sha256:" in ln for ln in lines)
    assert "Traceback" not in result.output


def test_doctor_missing_model_exits_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from gemrag.models import factory

    monkeypatch.setattr(factory, "build_embedder", lambda settings: HashEmbedder())
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(cli.app, ["doctor", "--llm-model", str(tmp_path / "absent.gguf")])
    assert result.exit_code == 2 and "error: unknown model" in result.output
