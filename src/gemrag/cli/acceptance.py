"""``gemrag eval cmu_dog PATH``: the acceptance test's options and its branch of the ``gemrag eval`` command.

:func:`gemrag.cli.eval.eval_command` declares the options below (their types live here) and hands a ``cmu_dog``
evaluation to :func:`acceptance_command`; the other ``gemrag eval`` options that make no sense for it are refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gemrag.console import err
from gemrag.errors import ConfigError

__all__ = [
    "ACCEPTANCE_KINDS",
    "JudgeBaseUrlOpt",
    "JudgeModelOpt",
    "RunsOpt",
    "SeedOpt",
    "SheetOpt",
    "VerdictsOpt",
    "acceptance_command",
]

ACCEPTANCE_KINDS = frozenset({"cmu_dog", "cmudog"})

RunsOpt = Annotated[
    int | None,
    typer.Option(
        "--runs",
        min=1,
        help="Repetitions, seeds SEED..SEED+N-1. cmu_dog: of the acceptance test (default 3; the paper ran 15). "
        "Free-form QA kinds (default 1, greedy): every answer sampled N times at temperature 0.7, one seed per run; "
        "the report gives mean ± std (min–max) over the runs (UnWeaver's paper ran 5). Costs N times the answers "
        "and their judgements, nothing of the build.",
    ),
]
SeedOpt = Annotated[
    int, typer.Option("--seed", min=0, help="Seed of the first run's sampled replies (cmu_dog) or answers (--runs).")
]
JudgeModelOpt = Annotated[
    str | None,
    typer.Option(
        "--judge-model",
        help="The judge (cmu_dog: choke/inaccurate/correct; free-form QA kinds: RAGAS-style factual correctness "
        "against the reference, the 'Judged %' column); with --judge-base-url a served model name, else an "
        "embedded model (qwen2.5-coder-0.5b, a .gguf path). Default: no judge on the QA kinds, covid_qa included "
        "(the embedded 0.5B judge agreed with hand labels at Cohen's kappa 0.025, benchmarks/factual_agreement.py); "
        "the evaluation's LLM on cmu_dog; none: no judge.",
    ),
]
JudgeBaseUrlOpt = Annotated[
    str | None,
    typer.Option("--judge-base-url", help="OpenAI-compatible endpoint of the judge (key: $OPENAI_API_KEY)."),
]

SheetOpt = Annotated[
    Path | None,
    typer.Option(
        "--sheet",
        help="cmu_dog: also write a blind judging sheet (JSONL, random order, no strategy or run) of the replies, "
        "to be judged outside gemrag.",
    ),
]
VerdictsOpt = Annotated[
    Path | None,
    typer.Option(
        "--verdicts",
        help="cmu_dog: report with the verdicts of this filled judging sheet (OUT/results-STEM.md, STEM: the "
        "sheet's file name without its suffix); results.md keeps the LLM judge's.",
    ),
]


def acceptance_command(
    path: Path,
    strategies: str | None,
    options: dict[str, Any],
    unsupported: dict[str, bool],
    *,
    config: Any,
    out: Path,
    quiet: bool,
) -> None:
    """Run :func:`gemrag.eval.acceptance.run_acceptance` from the ``gemrag eval`` options and print ``results.md``.

    Args:
        path: the CMU DoG conversation file.
        strategies: comma-separated strategies (None: :data:`gemrag.eval.acceptance.DEFAULT_STRATEGIES`).
        options: ``budget``, ``runs``, ``seed``, ``limit``, ``documents`` (conversation ids, a list or None),
            ``judge_model``, ``judge_base_url``, ``sheet``, ``verdicts`` (paths or None),
            ``memory_root`` (a PostgreSQL URL or None).
        unsupported: ``{flag: given}`` for the ``gemrag eval`` options that do not apply.

    Raises:
        ConfigError: an unsupported option was given, or bad settings (see ``run_acceptance``).
        InputError: a bad dataset or verdicts file (see ``run_acceptance``).
    """
    from gemrag.eval.acceptance.report import markdown_acceptance
    from gemrag.eval.acceptance.runner import DEFAULT_STRATEGIES, AcceptanceSettings, run_acceptance
    from gemrag.eval.variants import split_strategies
    from gemrag.progress import rich_progress

    given = [flag for flag, on in unsupported.items() if on]
    if given:
        raise ConfigError(f"{', '.join(given)} do(es) not apply to the cmu_dog acceptance test")
    ids = options.get("documents") or None
    results = run_acceptance(
        path,
        split_strategies(strategies if strategies is not None else DEFAULT_STRATEGIES),
        config=config,
        out_dir=out,
        settings=AcceptanceSettings(budget=options["budget"], runs=options["runs"] or 3, seed=options["seed"]),
        conversations=ids,
        limit=options.get("limit"),
        judge_model=options.get("judge_model"),
        judge_base_url=options.get("judge_base_url"),
        progress=None if quiet else rich_progress(err),
        sheet=options.get("sheet"),
        verdicts=options.get("verdicts"),
        memory_root=options.get("memory_root"),
    )
    typer.echo(markdown_acceptance(results))
    stem = "results" if options.get("verdicts") is None else f"results-{options['verdicts'].stem}"
    err.print(f"results: {out / (stem + '.md')}, {out / (stem + '.json')}, records: {out / 'records.jsonl'}")
    if options.get("sheet") is not None:
        err.print(f"judging sheet: {options['sheet']} (key: {out / 'judging-sheet-key.json'})")
