"""The command line's shared options: ``--memory``, ``--config``, ``--set`` and the one model-options group every
command that opens a memory takes, one help text each, and GEM's flags of earlier releases (``--questions``,
``--eigen``, ``--eigen-top``, ``--search``), now ``--set gem.*`` items with a warning."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from fakes import HashEmbedder, ScriptedLLM
from gemrag.cli import app
from gemrag.cli.options import MODEL_FLAGS, ModelOptions, build_config, deprecated_sets, model_options
from gemrag.config import load_config
from gemrag.memory import Memory
from gemrag.memory_settings import DeprecatedSettingWarning
from gemrag.strategies import strategy_config
from gemrag.strategies.gem.settings import GemConfig

ONNX_ID = "onnx:all-MiniLM-L6-v2-int8"


def test_model_options_show_the_flags_and_hand_over_one_group() -> None:
    @model_options()
    def command(question: str, models: ModelOptions, quiet: bool = False) -> ModelOptions:
        return models

    shown = list(inspect.signature(command).parameters)
    assert shown == ["question", *MODEL_FLAGS, "quiet"]  # the flags in the group's place, for typer
    got = command("q", llm_model="m", embedder_base_url="http://e", quiet=True)
    assert got == ModelOptions(llm_model="m", embedder_base_url="http://e")
    assert got.overrides()["embedder"]["base_url"] == "http://e" and got.overrides()["llm"]["provider"] is None

    @model_options("llm_model")
    def demo(models: ModelOptions) -> ModelOptions:
        return models

    assert list(inspect.signature(demo).parameters) == ["llm_model"] and demo(llm_model="x").llm_model == "x"
    with pytest.raises(TypeError, match="models"):
        model_options()(lambda quiet: None)
    with pytest.raises(TypeError, match="no model flag"):
        model_options("llm_colour")


OPENING = ["index", "ask", "info", "chat", "delete", "mcp", "serve", "view"]
"""The commands that open a memory (``demo`` keeps its own, cached one; ``eval`` its own per run)."""


def _params(command: str) -> dict[str, Any]:
    group = typer.main.get_command(app)
    return {p.name: p for p in group.commands[command].params}  # type: ignore[attr-defined]


def test_every_command_opening_a_memory_takes_the_shared_options_with_one_help_each() -> None:
    """``--memory``, ``--config``, ``--set`` and the model flags: one declaration each (cli/options.py), so every
    command that opens a memory (``serve``, ``chat``, ``mcp``, ``view`` and ``delete`` included) shows the same help
    for them, as ``gemrag COMMAND --help`` renders it."""
    shared = ["memory", "config", "set_", *MODEL_FLAGS]
    helps = {command: {name: _params(command)[name].help for name in shared} for command in OPENING}
    assert all(helps[command] == helps["index"] for command in OPENING), helps
    assert "GEMRAG_MEMORY" in helps["index"]["memory"] and "section.key=value" in helps["index"]["set_"]
    for command in OPENING:
        params = _params(command)
        assert params["memory"].opts == ["--memory", "-m"] and params["set_"].opts == ["--set"]
        assert params["set_"].multiple and params["memory"].required is False
        shown = " ".join(
            CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "400", "NO_COLOR": "1"}).output.split()
        )
        assert helps["index"]["memory"] in shown and "--llm-model" in shown and "--embedder-base-url" in shown


def test_every_model_flag_command_takes_the_same_group() -> None:
    from gemrag.cli import ask, chat, delete, demo, doctor, eval, index, info, mcp, serve, view

    opening = (info.info_command, chat.chat_command, delete.delete_command, mcp.mcp_command, serve.serve_command)
    opening += (view.view_command,)
    for command in (index.index_command, ask.ask_command, eval.eval_command, doctor.doctor_command, *opening):
        params = inspect.signature(command).parameters
        assert set(MODEL_FLAGS) <= set(params) and "models" not in params
        assert all(params[n].annotation is MODEL_FLAGS[n] for n in MODEL_FLAGS)
    assert [n for n in inspect.signature(demo.demo_command).parameters if n in MODEL_FLAGS] == ["llm_model"]


def test_deprecated_flags_become_set_items_the_user_set_wins() -> None:
    warned = pytest.warns(DeprecatedSettingWarning, match=r"--eigen-top is deprecated: use --set gem.eigen_top=3")
    with warned, deprecated_sets("gem", {"questions": None, "eigen_top": 3, "eigen": 4}) as items:
        assert items == ["gem.eigen_top=3", "gem.eigen=4"]
        cfg = build_config(None, sets=[*items, "gem.eigen=1"], models=ModelOptions(llm_model="m"), memory={"budget": 2})
    gem = strategy_config("gem", cfg)
    assert isinstance(gem, GemConfig)
    assert (gem.eigen_top, gem.eigen) == (3, 1)  # --set given by the user wins
    assert cfg.llm.model == "m" and cfg.memory.budget == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError), deprecated_sets("gem", {"search": "rank"}):
            raise ValueError("a failing command prints its error alone")
        with deprecated_sets("gem", {"search": None}) as none:
            assert none == []


def test_the_old_gem_flags_still_work_with_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gemrag.memory.facade.build_embedder", lambda settings: HashEmbedder(model_id=ONNX_ID))
    with Memory.open(tmp_path / "m", load_config(None), llm=ScriptedLLM()) as mem:
        mem.add_text("Amos lit the lamp of the lighthouse every night.", "lighthouse")
        mem.index("dense")
    runner = CliRunner()
    asked = ["ask", "Who lit the lamp?", "-m", str(tmp_path / "m"), "-s", "dense", "--retrieve-only"]
    result = runner.invoke(app, [*asked, "--search", "rank"])
    assert result.exit_code == 0, result.output
    assert "warning: --search is deprecated: use --set gem.search=rank" in result.stderr and "lamp" in result.stdout
    result = runner.invoke(app, [*asked, "--search", "walk"])  # GEM's section rejects it: the error line alone
    assert result.exit_code == 2 and result.stderr.splitlines() == [
        "error: invalid [gem] configuration: gem.search: Input should be 'best_first', 'rank' or 'fused' (got 'walk')"
    ]
    doc = tmp_path / "a.txt"
    doc.write_text("One sentence. Another one.\n")
    result = runner.invoke(app, ["index", str(doc), "-m", str(tmp_path / "new"), "--questions", "99", "--plan"])
    assert result.exit_code == 2 and "gem.questions" in result.stderr and "deprecated" not in result.stderr
    assert not (tmp_path / "new").exists()
