"""``gemrag eval``: every strategy side by side on a dataset, with the paper's tables and plots.

Registered in :mod:`gemrag.cli.main` with ``app.command("eval")(eval_command)``; the harness it drives is
:mod:`gemrag.eval`, the ``cmu_dog`` acceptance test's options and branch :mod:`gemrag.cli.acceptance`. Its own option
types are declared here, the shared ones (model flags, ``--config``, ``--set``, ``--quiet``) come from
:mod:`gemrag.cli.options`.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from gemrag.cli.acceptance import (
    ACCEPTANCE_KINDS,
    JudgeBaseUrlOpt,
    JudgeModelOpt,
    RunsOpt,
    SeedOpt,
    SheetOpt,
    VerdictsOpt,
    acceptance_command,
)
from gemrag.cli.options import NO_MODEL_FLAGS, ConfigFile, ModelOptions, Quiet, SetOpt, build_config, model_options
from gemrag.console import cli_errors, err
from gemrag.errors import ConfigError, InputError
from gemrag.progress import rich_progress

__all__ = ["DEFAULT_STRATEGIES", "KIND_STRATEGIES", "eval_command", "parse_ablation", "parse_documents"]

DEFAULT_STRATEGIES = "gem,dense,bm25,raptor,full"
#: Default strategies of the kinds a paper evaluates: COVID-QA is UnWeaver's (Table 1: UnWeaver, VectorRAG, RAPTOR,
#: GraphRAG; the paper names AV, PAV or CC as the election rule without choosing, so ``unweaver`` is its default,
#: unweighted PAV, and ``unweaver[rule=av]`` / ``unweaver[rule=cc]`` are one option away; GraphRAG is not here).
KIND_STRATEGIES = {"covid_qa": "unweaver,dense,raptor"}

Opt = typer.Option


def parse_ablation(specs: Sequence[str]) -> dict[str, list[str]]:
    """Parse ``["questions=0,1,3,5", "remem.damping=0.3,0.7"]`` into ``{param: [values]}``: a key ``strategy.param``
    names a strategy's setting, a bare ``param`` one of the configured strategy's or the memory's
    (:func:`gemrag.eval.plan.plan_runs`).

    Raises:
        ConfigError: a spec is not ``[strategy.]param=v1,v2,...`` or repeats a parameter.
    """
    out: dict[str, list[str]] = {}
    for spec in specs:
        match = re.fullmatch(r"\s*((?:[A-Za-z0-9_-]+\.)?[a-z_][a-z0-9_]*)\s*=\s*([^=]+)", spec)
        values = [v.strip() for v in match.group(2).split(",") if v.strip()] if match else []
        if not match or not values:
            raise ConfigError(
                f"bad --ablation {spec!r}: use [strategy.]param=v1,v2,... (e.g. questions=0,1,3,5 or bm25.k1=0.9,1.5)"
            )
        if match.group(1) in out:
            raise ConfigError(f"--ablation names {match.group(1)!r} twice")
        out[match.group(1)] = values
    return out


def parse_documents(value: str | None) -> list[str] | None:
    """``--documents``: comma-separated ids, or ``@FILE``, a UTF-8 text file with one id per line (for ids that
    contain commas, such as MuSiQue's paragraph titles); blank lines and surrounding spaces are ignored.

    Returns:
        The ids in order, or None when ``value`` is None or empty.

    Raises:
        InputError: ``@FILE`` cannot be read as UTF-8 text, or holds no id.
    """
    if not value:
        return None
    if not value.startswith("@"):
        return [d.strip() for d in value.split(",") if d.strip()] or None
    path = Path(value[1:])
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--documents {value}: cannot read {path} as UTF-8 text ({exc})") from exc
    ids = [line.strip() for line in lines if line.strip()]
    if not ids:
        raise InputError(f"--documents {value}: {path} holds no document id")
    return ids


def _joined(values: Sequence[str] | None) -> str | None:
    """Repeated ``--documents`` values of a benchmark kind as one comma-separated list (one value: as given)."""
    return ",".join(values) if values else None


def _categories(value: str) -> list[str]:
    """``--categories 1,3`` as ``["1", "3"]``.

    Raises:
        ConfigError: no category is named.
    """
    names = [c.strip() for c in value.split(",") if c.strip()]
    if not names:
        raise ConfigError(f"--categories {value!r}: name at least one category (e.g. 3)")
    return names


def _dataset_options(
    own: bool, documents: Sequence[str] | None, memory: str | None, per_question_corpus: bool
) -> dict[str, Any] | None:
    """The loader options: for ``qa`` the documents' paths and memory (:mod:`gemrag.eval.loaders.qa_file`), for the
    multi-hop kinds ``per_question_corpus``.

    Raises:
        ConfigError: ``--per-question-corpus`` with ``qa``, whose questions are all asked over every document.
    """
    if own:
        if per_question_corpus:
            raise ConfigError("--per-question-corpus: qa asks every question over all the documents")
        return {"documents": list(documents or []), "memory": memory}
    return {"per_question_corpus": True} if per_question_corpus else None


@model_options()
def eval_command(
    kind: Annotated[
        str,
        typer.Argument(
            help="Dataset kind: quality, qasper, musique, hotpotqa, 2wiki, covid_qa, locomo, cmu_dog, or qa (your own "
            "questions and answers, JSONL or CSV, over --documents or --memory)."
        ),
    ],
    path: Annotated[Path, typer.Argument(help="The dataset file.")],
    strategies: Annotated[
        str | None,
        Opt(
            help=f"Comma-separated strategies (default {DEFAULT_STRATEGIES}; covid_qa: unweaver,dense,raptor, the "
            "UnWeaver paper's rows; none when --ablation is given); "
            "name[key=value;...] runs a variant with settings of its section changed, e.g. "
            "remem[recognition_filter=false]. cmu_dog default: hlgraph, hlgraph[ranked=false], "
            "hlgraph[directional=false], dense, full, gem."
        ),
    ] = None,
    limit: Annotated[int | None, Opt(min=1, help="Evaluate only the first N questions.")] = None,
    documents: Annotated[
        list[str] | None,
        Opt(
            "--documents",
            help="Comma-separated document ids, or @FILE with one id per line: only the questions over them "
            "(e.g. conv-26). qa: the .txt/.md files or directories the questions are about (repeatable).",
        ),
    ] = None,
    categories: Annotated[
        str | None,
        Opt(
            "--categories",
            help="Comma-separated question categories: only their questions (e.g. LoCoMo's 3, open domain); "
            "question ids stay those of the whole file.",
        ),
    ] = None,
    per_category: Annotated[
        int | None,
        Opt("--per-category", min=1, help="The first N questions of each question category (e.g. LoCoMo's 1-5)."),
    ] = None,
    budget: Annotated[int, Opt(min=1, help="B: context nodes retrieved and given to the LLM.")] = 4,
    out: Annotated[Path, Opt("--out", "-o", help="Output directory (memories, records, results, plots).")] = Path(
        "eval-out"
    ),
    memory: Annotated[
        str | None,
        Opt(
            "--memory",
            "-m",
            help="A directory, or postgresql://user@host:port/db?schema=PREFIX: keep each evaluation memory there "
            "(DIR/NAME, or the schema PREFIX_NAME of that database; NAME: the memory's name) instead of under "
            "--out/memories "
            "(records and results stay under --out). Not read from GEMRAG_MEMORY, which names one memory. qa: an "
            "existing memory (directory or URL) whose documents the questions are about (read, never changed).",
        ),
    ] = None,
    workers: Annotated[
        int,
        Opt(
            min=1,
            help="Questions retrieved and answered in parallel (threads); results and their order are those of "
            "--workers 1. With the embedded llama_cpp LLM the answers are serialized (one model), so it mainly "
            "helps an HTTP (openai) backend.",
        ),
    ] = 1,
    ablation: Annotated[
        list[str] | None,
        Opt(
            help="Sweep a setting: STRATEGY.KEY=v1,v2,... runs the variant STRATEGY[KEY=v] per value (e.g. "
            "remem.damping=0.3,0.7; GEM-RAG's: gem.questions=0,1,3,5, gem.eigen=0,2,4,6, "
            "gem.search=best_first,rank); a bare KEY is the configured strategy's (with strategy gem: "
            "questions=0,1,3,5) or the memory's (chunk_tokens, budget). Repeatable."
        ),
    ] = None,
    no_answer: Annotated[bool, Opt("--no-answer", help="Retrieval only (Recall@k, latency): no LLM answers.")] = False,
    answer_form: Annotated[
        str,
        Opt(
            "--answer-form",
            help="short: a short phrase, the form span-answer scorers (EM/F1) expect; default: the default answer "
            "prompt; auto: short for locomo, the multi-hop kinds, covid_qa, qasper and qa.",
        ),
    ] = "auto",
    adversarial: Annotated[
        str,
        Opt(
            "--adversarial",
            help="locomo category 5: options (default) asks it as LoCoMo's released evaluation does, a choice "
            "between 'Not mentioned in the conversation' and the distractor answer (order fixed per question); "
            "open asks the question as written.",
        ),
    ] = "options",
    date_hint: Annotated[
        bool,
        Opt(
            "--date-hint/--no-date-hint",
            help="locomo category 2: append LoCoMo's 'Use DATE of CONVERSATION to answer with an approximate date.' "
            "as its released evaluation does (default), or ask the question as written.",
        ),
    ] = True,
    abstain: Annotated[
        bool,
        Opt(
            "--abstain/--no-abstain",
            help="locomo: the answer prompt lets the model say the answer is not mentioned (default, as LoCoMo's "
            "RAG reader asks), or asks as LoCoMo's released evaluate_gpts.py does, without that line (category 5 "
            "keeps its 'Not mentioned' option).",
        ),
    ] = True,
    per_question_corpus: Annotated[
        bool, Opt("--per-question-corpus", help="Multi-hop kinds: search each question's own paragraphs only.")
    ] = False,
    no_plots: Annotated[bool, Opt("--no-plots", help="Do not write PNG plots.")] = False,
    reference: Annotated[
        str | None, Opt("--reference", help="Run the paired bootstrap compares with (default: the first run).")
    ] = None,
    merge: Annotated[
        list[Path] | None,
        Opt(
            "--merge",
            help="Another output directory of the same evaluation (same configuration; other --strategies or "
            "--documents run in another process): its records and builds are added to --out and not recomputed "
            "(repeatable).",
        ),
    ] = None,
    config: ConfigFile = None,
    set_: SetOpt = None,
    models: ModelOptions = NO_MODEL_FLAGS,
    quiet: Quiet = False,
    publish: Annotated[
        str | None,
        Opt(
            "--publish",
            help="After the run, write its record to RESULTS/NAME.json and its per-question records to "
            "RESULTS/NAME.records.jsonl.gz (figures with 95% intervals and paired tests, the command, code version, "
            "machine and load, the dataset's hash, settings that differ from the defaults); the docs' marked figures "
            "are generated from them (python -m gemrag.eval.publish_docs).",
        ),
    ] = None,
    results_dir: Annotated[
        Path, Opt("--results-dir", help="Where --publish writes (the repository's results/ directory).")
    ] = Path("results"),
    runs: RunsOpt = None,
    seed: SeedOpt = 0,
    judge_model: JudgeModelOpt = None,
    judge_base_url: JudgeBaseUrlOpt = None,
    sheet: SheetOpt = None,
    verdicts: VerdictsOpt = None,
) -> None:
    """Evaluate retrieval strategies side by side on a dataset (same chunks, embeddings, LLM and budget):
    accuracy / F1 / EM / Recall@k with bootstrap intervals, tokens, build time and latency, paired
    bootstrap against gem, and optional gem ablations. Resumable: run the same command again after Ctrl-C.
    Writes OUT/results.md, OUT/results.json and PNG plots, and prints the markdown table. cmu_dog: the
    HLGraphRAG acceptance test (choke / inaccurate / correct per run, Mann-Whitney U; see docs/evaluation.md).
    Free-form kinds (covid_qa included) are judged only with --judge-model: then the LLM-judged factual
    correctness is reported beside token F1 (UnWeaver section 3); without it nothing is judged, as the embedded
    judge agreed with hand labels at Cohen's kappa 0.025 (benchmarks/factual_agreement.py). --runs N answers every
    question N times (sampled, one seed per run) and reports mean ± std. qa: your own JSONL or CSV of question,
    answer (several: a JSON list, or '|' in CSV) and optional sources and evidence, over --documents PATH or an
    existing --memory; a malformed row is a one-line error naming its line."""
    from gemrag.eval.adversarial import ADVERSARIAL_MODES
    from gemrag.eval.judging.judged import JudgeChoice
    from gemrag.eval.loading import check_kind
    from gemrag.eval.memories import check_memory_root
    from gemrag.eval.protocol import ANSWER_FORMS
    from gemrag.eval.publish import publish_run
    from gemrag.eval.publish_origin import check_publish_name, published_command
    from gemrag.eval.report import markdown_report
    from gemrag.eval.runner import run_eval
    from gemrag.eval.variants import split_strategies
    from gemrag.models.factory import check_model_settings

    with cli_errors():
        key = check_kind(kind, tuple(ACCEPTANCE_KINDS))  # everything is checked before anything is written
        if not path.is_file():
            raise InputError(f"{path}: no such dataset file" if not path.exists() else f"{path}: not a file")
        if out.exists() and not out.is_dir():
            raise InputError(f"--out {out} is a file; give the output directory")
        own = key == "qa"  # the user's own questions: --documents and --memory name the documents
        if memory is not None and not own:
            check_memory_root(memory)
        if answer_form not in ANSWER_FORMS:
            raise ConfigError(f"--answer-form {answer_form!r}: use one of {', '.join(ANSWER_FORMS)}")
        if adversarial not in ADVERSARIAL_MODES:
            raise ConfigError(f"--adversarial {adversarial!r}: use one of {', '.join(ADVERSARIAL_MODES)}")
        missing = [str(m) for m in merge or [] if not m.is_dir()]
        if missing:
            raise InputError(f"--merge {', '.join(missing)}: no such output directory")
        sweeps = parse_ablation(ablation or [])
        default = KIND_STRATEGIES.get(key, DEFAULT_STRATEGIES)
        names = strategies if strategies is not None else ("" if sweeps else default)
        cfg = build_config(config, sets=set_, models=models)
        check_model_settings(cfg.llm, cfg.embedder)
        if kind.strip().lower() in ACCEPTANCE_KINDS:
            opts: dict[str, Any] = {"budget": budget, "runs": runs, "seed": seed, "limit": limit}
            opts["documents"] = parse_documents(_joined(documents))
            skip = {"--ablation": bool(ablation), "--no-answer": no_answer, "--per-category": per_category is not None}
            skip |= {"--categories": categories is not None, "--no-abstain": not abstain}
            skip |= {"--per-question-corpus": per_question_corpus, "--reference": reference is not None}
            skip |= {"--workers": workers != 1, "--merge": bool(merge), "--answer-form": answer_form != "auto"}
            skip |= {"--adversarial": adversarial != "options", "--no-date-hint": not date_hint}
            opts |= {"judge_model": judge_model, "judge_base_url": judge_base_url, "sheet": sheet, "verdicts": verdicts}
            opts["memory_root"] = memory
            return acceptance_command(path, strategies, opts, skip, config=cfg, out=out, quiet=quiet)
        dog_only = [f"{f} {v!s}" for f, v in (("--sheet", sheet), ("--verdicts", verdicts)) if v is not None]
        if judge_model is not None and not judge_model.strip():
            raise ConfigError("--judge-model is empty: name a model, or none for no judge")
        if dog_only:
            raise ConfigError(
                f"{', '.join(dog_only)}: these only apply to the cmu_dog acceptance test, not to {kind!r}"
            )
        if publish is not None:
            check_publish_name(publish)
        started_load = os.getloadavg()[0]
        results = run_eval(
            kind,
            path,
            split_strategies(names),
            config=cfg,
            budget=budget,
            limit=limit,
            select={
                "documents": None if own else parse_documents(_joined(documents)),
                "categories": None if categories is None else _categories(categories),
                "per_category": per_category,
            },
            workers=workers,
            out_dir=out,
            ablation=dict(sweeps),
            answer=not no_answer,
            progress=None if quiet else rich_progress(err),
            dataset_options=_dataset_options(own, documents, memory, per_question_corpus),
            plots=not no_plots,
            reference=reference,
            merge=merge or (),
            answer_form=answer_form,  # type: ignore[arg-type]
            runs=runs or 1,
            seed=seed,
            judge=JudgeChoice(judge_model, judge_base_url),
            memory_root=None if own else memory,
            adversarial=adversarial,
            date_hint=date_hint,
            abstain=abstain,
        )
        if publish is not None:
            selection = {"limit": limit, "documents": parse_documents(_joined(documents)), "per_category": per_category}
            selection["categories"] = None if categories is None else _categories(categories)
            options = {"answer_form": answer_form, "adversarial": adversarial, "date_hint": date_hint}
            options |= {"abstain": abstain, "runs": runs or 1}
            record = publish_run(
                out,
                publish,
                results_dir,
                command=published_command(sys.argv, path),
                dataset_options=_dataset_options(own, documents, memory, per_question_corpus),
                selection=selection,
                options=options,
                load=(started_load, os.getloadavg()[0]),
            )
    typer.echo(markdown_report(results))
    err.print(f"results: {out / 'results.md'}, {out / 'results.json'}, records: {out / 'records.jsonl'}")
    if publish is not None:
        err.print(f"published: {results_dir / (record.name + '.json')}, {results_dir / record.records_file}")
