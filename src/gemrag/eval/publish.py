"""Publish a ``gemrag eval`` output directory as a result in the repository (``gemrag eval ... --publish NAME``,
or afterwards ``python -m gemrag.eval.publish RUN_DIR NAME``).

:func:`publish_run` reads the run directory (``results.json``: dataset, configuration, models and every
per-question record; ``index.jsonl``: which memory each strategy was built in; ``memories/``: the memories, opened
read-only) and writes ``results/NAME.json`` (a :class:`gemrag.eval.published.PublishedRun`) and
``results/NAME.records.jsonl.gz``. Each per-question record keeps what re-scoring needs without a model or a
memory: the ranking with the dataset documents of every hit, the dialog turns each context node covers (LoCoMo),
the question's gold ids, and the run's scores (:func:`gemrag.eval.published.rescore_record` recomputes them;
:mod:`gemrag.eval.publish_records` makes them).

What differs from the defaults is found from the recorded configuration itself
(:func:`gemrag.eval.publish_settings.non_default_settings`); where the record comes from (its name, command, machine
and code) is :mod:`gemrag.eval.publish_origin`. :func:`main` is the command line, which also refreshes the costs
block of published records (:func:`gemrag.eval.published.refresh_costs`).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gemrag.errors import GemragError, InputError
from gemrag.eval.loading import load_dataset
from gemrag.eval.publish_origin import check_publish_name, code_version, machine_info
from gemrag.eval.publish_records import RunAnnotator
from gemrag.eval.publish_settings import non_default_stated
from gemrag.eval.published import DatasetInfo, PublishedRun, refresh_costs, score_records
from gemrag.version import package_version

__all__ = ["main", "publish_run"]


def _sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def publish_run(
    run_dir: Path,
    name: str,
    root: Path,
    *,
    command: str,
    dataset_options: Mapping[str, Any] | None = None,
    selection: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    load: Iterable[float] = (),
    dataset_path: Path | None = None,
    memory_root: Path | None = None,
    settings: Mapping[str, Any] | None = None,
    code: Mapping[str, str] | None = None,
) -> PublishedRun:
    """Write ``root/NAME.json`` and ``root/NAME.records.jsonl.gz`` from a finished ``gemrag eval`` directory.

    Args:
        run_dir: the ``--out`` directory (``results.json``, ``index.jsonl``, ``memories/``).
        name: the record's name: letters, digits, ``-``, ``_`` and ``.``.
        root: the repository's ``results/`` directory (created when missing).
        command: the command that made the run. dataset_options: the loader options the run used
            (``per_question_corpus``). selection: ``limit``, ``documents``, ``categories``, ``per_category``.
        options: ``gemrag eval``'s own options (:data:`EVAL_DEFAULTS`' keys). load: the 1-minute load average
            sampled when the run started and ended. dataset_path: the dataset file, if moved since the run.
        memory_root: where the run's memories are (its ``--memory``; default ``run_dir/memories``), opened read-only.
        settings: dotted settings the run used, stated by the publisher (``{"answer.shape": True}``) for a run whose
            recorded configuration may lack them; each is checked against today's default and, when it differs,
            listed in ``non_default`` (over what the configuration says).
        code: the code version that made the run (``commit``, ``version``, a ``note``), when it was not this checkout.

    Returns:
        The record written.

    Raises:
        InputError: a bad name, no ``results.json`` in ``run_dir``, the dataset file or a memory is missing.
    """
    check_publish_name(name)
    try:
        results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{run_dir}: no readable results.json (run gemrag eval with --out {run_dir} first)") from exc
    meta = results["dataset"]
    path = dataset_path or Path(meta["path"])
    if not path.is_file():
        raise InputError(f"{path}: the run's dataset file is missing (give its new place)")
    dataset = load_dataset(meta["kind"], path, **dict(dataset_options or {}))
    annotator = RunAnnotator(run_dir, dataset, memory_root)
    records = [annotator.slim(r) for r in results["records"]]
    strategies, comparisons = score_records(records, results["runs"])
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records)
    root.mkdir(parents=True, exist_ok=True)
    records_file = f"{name}.records.jsonl.gz"
    with gzip.GzipFile(root / records_file, "wb", mtime=0) as f:  # mtime 0: the same records, the same bytes
        f.write(text.encode("utf-8"))
    run = PublishedRun(
        name=name,
        command=command,
        code=dict(code) if code else code_version(),
        date=datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        seconds=round(float(results.get("seconds", 0.0)), 1),
        machine=machine_info(load),
        models=dict(results["models"]),
        dataset=DatasetInfo(
            kind=meta["kind"],
            name=meta["name"],
            file=path.name,
            sha256=_sha256(path),
            questions=int(meta["questions"]),
            groups=int(meta["groups"]),
            documents=int(meta["documents"]),
            options={**dict(dataset_options or {}), **{k: v for k, v in (selection or {}).items() if v is not None}},
        ),
        budget=int(results["budget"]),
        answer=bool(results["answer"]),
        non_default=non_default_stated(
            results["config"], {"budget": results["budget"], **dict(options or {})}, settings
        ),
        reference=(results.get("summary") or {}).get("reference"),
        strategies=strategies,
        comparisons=comparisons,
        records_file=records_file,
        records_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )
    (root / f"{name}.json").write_text(run.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return run


def _value(text: str) -> Any:
    """A ``--setting`` value: JSON (``true``, ``3``, ``"x"``) when it parses, else the text itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m gemrag.eval.publish RUN_DIR NAME``: publish a finished ``gemrag eval --out RUN_DIR`` directory as
    ``results/NAME.json`` without running it again (:func:`publish_run`).

    The run's own options (LoCoMo's protocol) are read from ``RUN_DIR/run.json`` (its answer form is recorded there
    resolved, e.g. ``auto`` as ``short``, so it is not taken); what the directory does not record is given here: the
    command that made it, the selection (``--documents``, ``--categories``), the memories' place (``--memory``, the
    run's ``--memory``), settings the publisher states (``--setting answer.shape=true``, compared with today's
    defaults like the recorded configuration) and the code commit. A memory of an older schema is refused (open a
    copy once with write access to upgrade it; the run's own memories are only read).

    ``python -m gemrag.eval.publish --refresh-costs NAME [NAME...]`` instead recomputes the costs block of published
    records from their committed records files alone (:func:`gemrag.eval.published.refresh_costs`).

    Returns:
        0 when published (or refreshed), 2 on bad input (one ``error:`` line; nothing is written).
    """
    import argparse

    parser = argparse.ArgumentParser(description="Publish a finished gemrag eval --out directory as results/NAME.json.")
    parser.add_argument("run_dir", type=Path, nargs="?", help="the run's --out directory (results.json, index.jsonl)")
    parser.add_argument("name", nargs="?", help="the record's name (letters, digits, '-', '_', '.')")
    parser.add_argument(
        "--refresh-costs", nargs="+", metavar="NAME",
        help="instead: recompute the costs block of these published records from their records files alone",
    )  # fmt: skip
    parser.add_argument("--results-dir", type=Path, default=Path("results"), help="where to write (default: results)")
    parser.add_argument("--memory", type=Path, help="the run's --memory directory (default: RUN_DIR/memories)")
    parser.add_argument("--dataset", type=Path, help="the dataset file, if it moved since the run")
    parser.add_argument("--command", help="the command that made the run (default: unknown, and where it was)")
    parser.add_argument("--documents", help="the run's --documents (comma-separated), for the record")
    parser.add_argument("--categories", help="the run's --categories (comma-separated), for the record")
    parser.add_argument("--limit", type=int, help="the run's --limit, for the record")
    parser.add_argument("--per-question-corpus", action="store_true", help="the run used --per-question-corpus")
    parser.add_argument(
        "--setting", action="append", default=[], metavar="SECTION.KEY=VALUE",
        help="a setting the run used (value as JSON, else text), marked when it differs from today's default",
    )  # fmt: skip
    parser.add_argument("--code-commit", help="the git commit of the code that made the run (default: this checkout)")
    args = parser.parse_args(argv)
    if (args.run_dir is not None) if args.refresh_costs else (args.name is None):
        parser.error("give RUN_DIR NAME, or --refresh-costs NAME... alone")
    try:
        for name in args.refresh_costs or ():  # the costs block from the committed records alone
            refresh_costs(name, args.results_dir)
            print(f"costs refreshed: {args.results_dir / (name + '.json')}")
        if args.refresh_costs:
            return 0
        check_publish_name(args.name)
        settings = {}
        for spec in args.setting:
            key, sep, value = spec.partition("=")
            if not sep or not key.strip():
                raise InputError(f"--setting {spec!r}: use section.key=value (e.g. answer.shape=true)")
            settings[key.strip()] = _value(value.strip())
        try:
            run = json.loads((args.run_dir / "run.json").read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            run = {}
        options = {k: run[k] for k in ("adversarial", "date_hint", "abstain", "runs") if k in run}
        split = lambda text: [x.strip() for x in text.split(",") if x.strip()] if text else None  # noqa: E731
        selection = {"limit": args.limit, "documents": split(args.documents), "categories": split(args.categories)}
        code = {"commit": args.code_commit, "version": package_version()} if args.code_commit else None
        if code is not None:
            code["note"] = "the commit named when the run was published afterwards"
        record = publish_run(
            args.run_dir,
            args.name,
            args.results_dir,
            command=args.command or f"unknown (published afterwards from {args.run_dir.name})",
            dataset_options={"per_question_corpus": True} if args.per_question_corpus else None,
            selection=selection,
            options=options,
            dataset_path=args.dataset,
            memory_root=args.memory,
            settings=settings,
            code=code,
        )
    except GemragError as exc:  # bad input, a memory of an older schema (copy it and open it once to upgrade)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"published: {args.results_dir / (record.name + '.json')}, {args.results_dir / record.records_file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
