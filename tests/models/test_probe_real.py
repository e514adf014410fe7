"""The child-process model check and ``gemrag doctor`` with the real llama.cpp and Qwen2.5-Coder-0.5B.

Under ``CI=true`` a missing llama-cpp-python or model part fails these tests (:func:`realparts.require_real`).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gemrag import cli
from gemrag.errors import ModelNotAvailableError
from gemrag.models.llama import probe
from gemrag.models.llama.backend import LlamaCppLLM
from realparts import require_real

pytestmark = pytest.mark.integration

MODEL = "qwen2.5-coder-0.5b"


@pytest.fixture(scope="module")
def small() -> LlamaCppLLM:
    if importlib.util.find_spec("llama_cpp") is None:
        require_real("llama-cpp-python is not installed (pip install -r requirements.txt '.[local]')")
    try:
        return LlamaCppLLM(MODEL, n_ctx=2048)  # resolves (joins) the weights; does not load them
    except ModelNotAvailableError as e:
        require_real(str(e))
        raise


@pytest.fixture(scope="module")
def checked(small: LlamaCppLLM) -> probe.ProbeResult:
    """One real run of the child-process check of ``small`` (the model loaded and asked in a child process), shared
    by the tests that read it, so the child runs once."""
    return probe.run_probe(small.probe_request(), timeout=300)


def test_real_probe_runs_the_model(checked: probe.ProbeResult) -> None:
    result = checked
    assert result.ok, result.message
    assert result.phase == "done" and result.returncode == 0 and result.seconds > 0
    assert result.version and result.features, result
    assert result.chat.strip()
    assert isinstance(json.loads(result.json)["answer"], bool)
    assert result.model == MODEL and "\n" not in result.message


def test_build_cpu_features_reads_the_installed_build(small: LlamaCppLLM) -> None:
    features = probe.build_cpu_features()
    assert features and all(isinstance(f, str) for f in features)
    assert features == probe.parse_cpu_features(probe.build_system_info())


def test_success_is_cached_and_load_uses_it(
    small: LlamaCppLLM, checked: probe.ProbeResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(probe.SKIP_ENV, raising=False)
    runs: list[probe.ProbeRequest] = []

    def the_real_run(request: probe.ProbeRequest, **kwargs: Any) -> probe.ProbeResult:
        """The check's run: the module's real run of this very request (:func:`checked`), once at most."""
        assert request == small.probe_request() and not runs, "the cached check ran again"
        runs.append(request)
        return checked

    monkeypatch.setattr(probe, "run_probe", the_real_run)
    first = probe.ensure_model_runs(small.probe_request(), cache_dir=tmp_path)
    assert first is not None and first.ok and len(runs) == 1  # no cached result yet: the check ran
    assert len(list((tmp_path / "model-checks").glob("*.json"))) == 1
    again = probe.ensure_model_runs(small.probe_request(), cache_dir=tmp_path)
    assert again is not None and again.ok and len(runs) == 1  # the cached success: not run again


def test_doctor_end_to_end(small: LlamaCppLLM, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no ./gemrag.toml
    result = CliRunner().invoke(cli.app, ["doctor", "--llm-model", MODEL])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(ln.startswith("llama.cpp") and "built with" in ln for ln in lines), result.output
    assert any(ln.startswith("embedder") and "(1, 384) float32" in ln for ln in lines), result.output
    assert any(ln.startswith("LLM") and MODEL in ln for ln in lines), result.output
    assert any(ln.startswith("model check") and "ok in" in ln for ln in lines), result.output
    assert "error:" not in result.output
