"""``gemrag index``'s cost plan: ``--plan`` prints it and writes nothing, ``index`` prints it first and, on a terminal,
asks before a plan over 10 minutes (``--yes`` skips the question; a script is never asked)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory, cli
from gemrag.cli.plan import confirm_plan, minutes_text
from gemrag.memory.index_plan import IndexPlan, RatesOut
from gemrag.models.rates import Rates
from test_memory import DOC_A

runner = CliRunner()


@pytest.fixture
def note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in list(__import__("os").environ):
        if var.startswith("GEMRAG_"):
            monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("gemrag.memory.facade.build_embedder", lambda settings: HashEmbedder(model_id="onnx:test"))
    monkeypatch.setattr("gemrag.memory.facade.build_llm", lambda settings, cache_dir=None: ScriptedLLM())
    path = tmp_path / "note.txt"
    path.write_text(DOC_A, encoding="utf-8")
    return path


def _slow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rates that make any LLM build take hours."""
    monkeypatch.setattr(
        "gemrag.memory.index_plan._rates", lambda *a, **k: Rates("calibration", 1.0, 0.01, detail="slow")
    )


def test_plan_prints_and_writes_nothing(note: Path, tmp_path: Path) -> None:
    result = runner.invoke(cli.app, ["index", str(note), "--memory", "m", "--strategy", "hlgraph", "--plan"])
    assert result.exit_code == 0, result.output
    assert "plan hlgraph in m: 1 document(s)" in result.stdout and "HLGraph" in result.stdout
    assert not (tmp_path / "m").exists()  # a new memory is planned in a temporary directory
    assert runner.invoke(cli.app, ["index", str(note), "--memory", "m", "-s", "hlgraph", "-q"]).exit_code == 0
    with Memory.open(tmp_path / "m", embedder=HashEmbedder(model_id="onnx:test"), llm=ScriptedLLM()) as mem:
        chunks = len(mem.store.nodes("chunk"))
    result = runner.invoke(cli.app, ["index", "--memory", "m", "-s", "hlgraph", "--plan"])
    assert result.exit_code == 0 and f"{chunks} chunks, 0 to process" in result.stdout


def test_a_long_build_asks_on_a_terminal(note: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _slow(monkeypatch)
    monkeypatch.setattr("gemrag.cli.index._interactive", lambda: True)
    args = ["index", str(note), "--memory", "m", "-s", "remem", "-q"]
    result = runner.invoke(cli.app, args, input="n\n")
    assert result.exit_code == 1 and "Proceed?" in result.output and "not indexed" in result.stderr
    with Memory.open(tmp_path / "m", embedder=HashEmbedder(model_id="onnx:test"), llm=ScriptedLLM()) as mem:
        assert mem.store.documents() == []  # declined before anything was put
    result = runner.invoke(cli.app, [*args, "--yes"])
    assert result.exit_code == 0 and "Proceed?" not in result.output and "indexed 1 document(s)" in result.stdout


def test_a_script_is_never_asked(note: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _slow(monkeypatch)
    monkeypatch.setattr("gemrag.cli.index._interactive", lambda: False)
    result = runner.invoke(cli.app, ["index", str(note), "--memory", "m", "-s", "hlgraph", "-q"])
    assert result.exit_code == 0 and "Proceed?" not in result.output
    assert "plan hlgraph" in result.stderr and "indexed 1 document(s)" in result.stdout


def _plan(minutes: float | None) -> IndexPlan:
    return IndexPlan(
        memory="m", documents=1, chunks=1, strategies=[], rates=RatesOut(source="calibration"), calls=1,
        prompt_tokens=1, completion_tokens=1, minutes=minutes, exact=True,
    )  # fmt: skip


def test_confirmation_rules() -> None:
    def never(question: str) -> bool:
        raise AssertionError(f"asked {question!r}")

    assert confirm_plan(_plan(30.0), yes=True, interactive=True, ask=never)
    assert confirm_plan(_plan(30.0), yes=False, interactive=False, ask=never)
    assert confirm_plan(_plan(9.5), yes=False, interactive=True, ask=never)
    assert confirm_plan(_plan(None), yes=False, interactive=True, ask=never)  # unknown minutes: not asked
    asked: list[str] = []
    assert not confirm_plan(_plan(30.0), yes=False, interactive=True, ask=lambda q: asked.append(q) or False)
    assert asked == ["This build is planned to take about 30 minutes. Proceed?"]
    assert [minutes_text(m) for m in (None, 0.25, 12.4, 1234.5)] == ["?", "0.2", "12", "1,234"]
