"""``gemrag demo``: GEM-RAG end to end on the shipped QuALITY story with the embedded models.

Indexes ``examples/quality/lost_in_translation.txt`` under the identity :data:`STORY_ID` (cached and resumable,
so later runs reuse the memory, wherever the package is installed), answers its 16 multiple-choice questions,
prints each answer with the passages it rests on (the context passages the model cited beside its choice, when
``[answer] cite`` is on, the default: chunk number and character span in the story), the accuracy, and the index
time, tokens by phase and retrieval latency. It always shows GEM-RAG (:data:`DEMO_STRATEGY`), whatever strategy the
configuration makes the default. :func:`demo_command` is the command (registered in :mod:`gemrag.cli.main`),
:func:`run_demo` its work.
"""

from __future__ import annotations

import json
import statistics
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from gemrag.answers.choices import LETTERS
from gemrag.answers.provenance import cited_sources
from gemrag.cli.options import (
    NO_MODEL_FLAGS,
    ConfigFile,
    ModelOptions,
    Quiet,
    SetOpt,
    build_config,
    memory_target,
    model_options,
)
from gemrag.config import Config
from gemrag.console import cli_errors, err
from gemrag.errors import GemragError
from gemrag.memory import Memory
from gemrag.models.factory import check_model_settings
from gemrag.models.llama.weights import default_cache_dir
from gemrag.progress import rich_progress
from gemrag.strategies import check_config
from gemrag.strategies.base import ProgressFactory

out = Console()

STORY = "lost_in_translation"
STORY_ID = f"quality:{STORY}"
"""The story's identity in the demo memory (``--id``): stable wherever the package is installed, so a reinstall at
another path (README command 2 after command 1) finds the story already indexed and spends no model call."""

DEMO_STRATEGY = "gem"
"""The strategy the demo builds and asks: GEM-RAG, the seed method (Rappazzo et al., GEM-RAG, section III.B), whatever a
``gemrag.toml``, ``GEMRAG_STRATEGY`` or the configuration's default names."""


def example_dir() -> Path:
    """The directory holding the shipped story (package data, or ``examples/quality`` in a checkout).

    Raises:
        GemragError: the example files are not installed.
    """
    packaged = resources.files("gemrag").joinpath("examples/quality")
    candidates = [Path(str(packaged)), Path(__file__).resolve().parents[3] / "examples" / "quality"]
    for c in candidates:
        if (c / f"{STORY}.txt").is_file():
            return c
    raise GemragError("the example story is not installed (examples/quality is missing)")


def load_example() -> tuple[Path, list[dict[str, Any]]]:
    """The story's path and its questions (``question``, ``options`` [4], ``gold_label`` 1-based)."""
    d = example_dir()
    questions = json.loads((d / f"{STORY}.questions.json").read_text(encoding="utf-8"))["questions"]
    return d / f"{STORY}.txt", questions


def run_demo(
    config: Config,
    memory_dir: str | Path | None,
    limit: int | None,
    console: Console,
    progress: ProgressFactory | None,
) -> int:
    """Index the example story with GEM-RAG (:data:`DEMO_STRATEGY`) and answer its questions; returns the process
    exit code (0).

    Args:
        config: configuration (the embedded 1.5B LLM and MiniLM by default); its ``strategy`` is replaced by
            :data:`DEMO_STRATEGY`, its ``[gem]`` settings are kept.
        memory_dir: where the demo memory lives: a directory or a PostgreSQL URL (default
            ``<cache>/demo-memory-<llm model>``).
        limit: answer only the first ``limit`` questions.
        console: where results are printed.
        progress: progress-bar factory, or None.
    """
    config = config.model_copy(update={"strategy": DEMO_STRATEGY})
    story, questions = load_example()
    questions = questions[:limit] if limit else questions
    if memory_dir is None:
        safe = Path(config.llm.model).name.replace("/", "_")
        memory_dir = (config.cache_dir or default_cache_dir().parent) / f"demo-memory-{safe}"
    console.print(f"[bold]gemrag demo[/]: {story.name} ({len(questions)} questions), memory {memory_dir}")
    with Memory.open(memory_dir, config, progress=progress) as mem:
        mem.add([story], id=STORY_ID)
        report = mem.index()
        console.print(
            f"index: {report.chunks} chunks, {report.summary_nodes} summary nodes, {report.seconds:.1f} s this run "
            f"({report.usage.calls} model calls, {report.usage.cached} cache hits)"
        )
        correct = 0
        latencies = []
        for i, q in enumerate(questions, 1):
            ans = mem.ask(q["question"], q["options"])
            gold = int(q["gold_label"]) - 1
            ok = ans.choice == gold
            correct += ok
            latencies.append(ans.retrieval_seconds)
            picked = LETTERS[ans.choice] if ans.choice is not None else "-"
            mark = "[green]✓[/]" if ok else "[red]✗[/]"
            console.print(
                f"{mark} Q{i}: {q['question']}\n    answer {picked}, gold {LETTERS[gold]}: {q['options'][gold][:90]}"
            )
            sources = cited_sources(ans)
            if sources:
                console.print("    rests on: " + escape("; ".join(sources)))
        stats = mem.stats()
    n = len(questions)
    console.print(f"[bold]accuracy: {correct}/{n} = {correct / n:.1%}[/]")
    console.print(f"index time (all runs, s): {stats['index_seconds']:.1f}")
    for phase, u in stats["usage_by_phase"].items():
        console.print(
            f"tokens spent, {phase}: {int(u['prompt_tokens'])} prompt + {int(u['completion_tokens'])} completion, "
            f"{int(u['embedding_tokens'])} embedding; {u['seconds']:.1f} model-seconds, {int(u['calls'])} calls"
        )
    lat = sorted(latencies)
    console.print(
        f"retrieval latency per query (without answer generation): median {statistics.median(lat) * 1000:.1f} ms, "
        f"max {lat[-1] * 1000:.1f} ms"
    )
    return 0


@model_options("llm_model")
def demo_command(
    memory: Annotated[
        str | None,
        typer.Option("--memory", "-m", help="Where to keep the demo memory: a directory or a postgresql:// URL."),
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Answer only the first N questions.")] = None,
    config: ConfigFile = None,
    models: ModelOptions = NO_MODEL_FLAGS,
    set_: SetOpt = None,
    quiet: Quiet = False,
) -> None:
    """The main job on the shipped QuALITY story: index it (cached after the first run), answer all of its
    multiple-choice questions with the embedded models, print each answer and the accuracy."""
    with cli_errors("run `gemrag demo` again to resume"):
        cfg = build_config(config, sets=set_, models=models)
        check_config(cfg)  # everything checked before the demo memory is created
        check_model_settings(cfg.llm, cfg.embedder)
        if memory is not None:
            memory = memory_target(memory, cfg, existing=False)
        code = run_demo(cfg, memory, limit, out, None if quiet else rich_progress(err))
    raise typer.Exit(code)
