"""Publish a ``gemrag eval`` output directory as a result in the repository (``gemrag eval ... --publish NAME``).

:func:`publish_run` reads the run directory (``results.json``: dataset, configuration, models and every
per-question record; ``index.jsonl``: which memory each strategy was built in; ``memories/``: the memories, opened
read-only) and writes ``results/NAME.json`` (a :class:`gemrag.eval.published.PublishedRun`) and
``results/NAME.records.jsonl.gz``. Each per-question record keeps what re-scoring needs without a model or a
memory: the ranking with the dataset documents of every hit, the dialog turns each context node covers (LoCoMo),
the question's gold ids, and the run's scores (:func:`gemrag.eval.published.rescore_record` recomputes them).

What differs from the defaults is found from the recorded configuration itself (:func:`non_default_settings`): every
setting of ``[llm]``, ``[embedder]``, ``[memory]``, ``[answer]`` and every strategy section whose value is not the
default of the code that publishes, leaving out the settings that change how fast a run goes but not what it
measures (:data:`MACHINE_KEYS`), and the evaluation's own options (budget, answer form, LoCoMo's protocol) that
differ from ``gemrag eval``'s defaults (:data:`EVAL_DEFAULTS`).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

from gemrag.errors import GemragError, InputError
from gemrag.eval.datasets import Dataset
from gemrag.eval.evidence import ChunkSpans, gold_turn_spans, member_chunks
from gemrag.eval.loading import load_dataset
from gemrag.eval.published import (
    SCORED_METRICS,
    DatasetInfo,
    Machine,
    PublishedRun,
    refresh_costs,
    score_records,
)
from gemrag.eval.report import read_jsonl
from gemrag.store import open_store
from gemrag.types import Hit, NodeKind
from gemrag.version import package_version

__all__ = [
    "EVAL_DEFAULTS",
    "MACHINE_KEYS",
    "check_publish_name",
    "code_version",
    "main",
    "machine_info",
    "non_default_settings",
    "publish_run",
    "published_command",
]

#: Settings that change how a run goes (threads, timeouts, retries, where files live) but not what it measures.
MACHINE_KEYS = frozenset(
    {"cache_dir", "progress", "memory.location", "llm.api_key", "embedder.api_key", "llm.n_threads", "llm.timeout"}
    | {"llm.concurrency", "llm.max_retries", "llm.requests_per_minute", "llm.tokens_per_minute", "llm.n_parallel"}
    | {"llm.ray", "llm.ray_actors", "llm.ray_actor_concurrency", "llm.ray_actor_cpus", "llm.n_gpu_layers"}
    | {"embedder.timeout", "embedder.concurrency", "embedder.max_retries"}
)
#: What a published per-question record keeps of an answer beside its text and scores: its cost (tokens, LLM calls,
#: seconds) and what the reading settings add (the reading used, its quotes, whether the context was dated).
ANSWER_KEYS = ("tokens", "llm_calls", "llm_cached", "answer_seconds", "reading", "quotes", "shown", "dated")
#: ``gemrag eval``'s own options at their defaults (a published run names those it changed).
EVAL_DEFAULTS: dict[str, Any] = {
    "budget": 4, "answer_form": "auto", "adversarial": "options", "date_hint": True, "abstain": True, "runs": 1
}  # fmt: skip


def check_publish_name(name: str) -> None:
    """Refuse a record name that is not a plain file name (letters, digits, ``-``, ``_``, ``.``; not starting with
    ``.``), before a run starts.

    Raises:
        InputError: a bad name.
    """
    if not name or name.startswith(".") or not all(c.isascii() and (c.isalnum() or c in "-_.") for c in name):
        raise InputError(f"--publish {name!r}: use letters, digits, '-', '_' and '.' only")


def published_command(argv: Sequence[str], dataset: Path) -> str:
    """The command line as a published record shows it: ``gemrag`` and the arguments, the directory holding the
    dataset's folder written ``$DATA`` (the evaluation data lives outside the repository)."""
    base = str(dataset.resolve().parent.parent)
    words = ["gemrag", *argv[1:]]
    text = shlex.join(words)
    for form in {base, str(dataset.parent.parent)} - {"", "."}:
        text = text.replace(form + "/", "$DATA/")
    return text


def _flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out |= _flat(value, f"{name}.")
        else:
            out[name] = value
    return out


def _defaults() -> dict[str, Any]:
    """The typed sections' defaults, as JSON (read from the models, not from the environment or a TOML file)."""
    from gemrag.config import Config

    out: dict[str, Any] = {}
    for name, field in Config.model_fields.items():
        value = field.get_default(call_default_factory=True)
        out[name] = value.model_dump(mode="json") if hasattr(value, "model_dump") else value
    return json.loads(json.dumps(out, default=str))


def non_default_settings(config: Mapping[str, Any], options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The settings of a recorded configuration that differ from today's defaults.

    Args:
        config: a run's configuration as ``results.json`` records it (``Config.model_dump(mode="json")``).
        options: ``gemrag eval``'s own options of the run (keys of :data:`EVAL_DEFAULTS`), when known.

    Returns:
        ``{dotted key: value}``, sorted, without :data:`MACHINE_KEYS`; a strategy section's key is compared with the
        default of that strategy's settings model (a section of an unknown strategy is listed whole).
    """
    from gemrag.strategies.base import config_model

    typed = _defaults()
    defaults = _flat(typed)
    out: dict[str, Any] = {}
    for key, value in _flat(config).items():
        section = key.split(".", 1)[0]
        if key in MACHINE_KEYS:
            continue
        if section in typed:
            if key not in defaults or defaults[key] != value:
                out[key] = value
            continue
        try:
            model = config_model(section)
        except KeyError:
            model = None
        base = _flat({section: model().model_dump(mode="json")}) if model is not None else {}
        if key not in base or base[key] != value:
            out[key] = value
    for key, value in (options or {}).items():
        if key in EVAL_DEFAULTS and EVAL_DEFAULTS[key] != value:
            out[key] = value
    return dict(sorted(out.items()))


def _non_default(
    config: Mapping[str, Any], options: Mapping[str, Any], settings: Mapping[str, Any] | None
) -> dict[str, Any]:
    """:func:`non_default_settings` of the recorded configuration, with the publisher's stated ``settings`` put into
    it (as a section of the configuration, so each is compared with its default the same way)."""
    merged = json.loads(json.dumps(dict(config)))
    for key, value in (settings or {}).items():
        section, _, rest = key.partition(".")
        if not rest:
            raise InputError(f"setting {key!r}: give section.key=value (e.g. answer.shape=true)")
        target = merged.setdefault(section, {})
        for part in rest.split(".")[:-1]:
            target = target.setdefault(part, {})
        target[rest.split(".")[-1]] = value
    return non_default_settings(merged, options)


def machine_info(load: Iterable[float] = ()) -> Machine:
    """This machine: CPUs, physical memory, platform, Python, and the given load averages (rounded to 0.01)."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    except (ValueError, OSError, AttributeError):
        memory = 0.0
    return Machine(
        cpus=os.cpu_count() or 0,
        memory_gb=round(memory, 1),
        platform=f"{platform.system()} {platform.machine()}",
        python=platform.python_version(),
        load=[round(x, 2) for x in load],
    )


def code_version() -> dict[str, str]:
    """The git commit of the gemrag source tree (``-dirty`` with uncommitted changes) and the package version."""
    root = Path(__file__).resolve().parents[3]
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", "src"],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "unknown", ""
    return {"commit": commit + ("-dirty" if dirty else ""), "version": package_version()}


def _sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


class _Annotator:
    """Adds to a run's records the dataset documents of each ranked hit and the turns each context node covers,
    reading each memory once (read-only)."""

    def __init__(self, run_dir: Path, dataset: Dataset, memory_root: Path | None = None) -> None:
        self.run_dir, self.dataset = run_dir, dataset
        self.memory_root = memory_root or run_dir / "memories"
        self.docs = {d.id: d for d in dataset.documents}
        same_text: dict[str, list[str]] = {}
        for d in dataset.documents:
            same_text.setdefault(d.text, []).append(d.id)
        self.same_text = same_text
        self.questions = {q.id: q for q in dataset.questions}
        self.memory_of = {(e["group"], e["strategy"]): e["memory"] for e in read_jsonl(run_dir / "index.jsonl")}
        self.views: dict[str, tuple[dict[int, list[str]], dict[int, list[str]], dict[int, str]]] = {}

    def _view(self, name: str) -> tuple[dict[int, list[str]], dict[int, list[str]], dict[int, str]]:
        """``(chunk -> documents, node -> turns it covers, chunk -> text)`` of one memory."""
        if name in self.views:
            return self.views[name]
        directory = self.memory_root / name
        if not directory.is_dir():
            raise InputError(f"{directory}: no such memory (give the run's --memory directory)")
        store = open_store(directory, readonly=True)
        try:
            sources = {int(d["id"]): str(d["source"]) for d in store.documents()}
            texts = {sid: self.docs[src].text for sid, src in sources.items() if src in self.docs}
            spans = ChunkSpans(store, texts)
            chunk_docs: dict[int, list[str]] = {}
            chunk_turns: dict[int, list[str]] = {}
            kinds: dict[int, str] = {}
            texts_of: dict[int, str] = {}
            for node in store.nodes():
                kinds[node.id] = node.kind
            for node in store.nodes("chunk"):
                texts_of[node.id] = node.text
                src = sources.get(node.doc_id) if node.doc_id is not None else None
                chunk_docs[node.id] = self.same_text.get(self.docs[src].text, [src]) if src in self.docs else []
                located = spans.span(node.id)
                turns = self.docs[src].metadata.get("turns") if src in self.docs else None
                if located and turns:
                    _, start, end = located
                    chunk_turns[node.id] = [
                        t["dia_id"] for t in turns if int(t["start"]) < end and start < int(t["end"])
                    ]
            members = {
                nid: member_chunks(Hit(nid, cast(NodeKind, kind), 0.0, ""), store)
                for nid, kind in kinds.items()
                if kind != "chunk"
            }
            for nid, chunks in members.items():
                chunk_turns[nid] = list(dict.fromkeys(t for c in chunks for t in chunk_turns.get(c, [])))
        finally:
            store.close()
        self.views[name] = (chunk_docs, chunk_turns, texts_of)
        return self.views[name]

    def slim(self, record: dict[str, Any]) -> dict[str, Any]:
        """The published form of one run record (see the module docstring)."""
        name = self.memory_of.get((record["group"], record["strategy"]))
        if name is None:
            raise InputError(f"{self.run_dir}/index.jsonl: no build of {record['strategy']} in group {record['group']}")
        chunk_docs, chunk_turns, chunk_text = self._view(name)
        out: dict[str, Any] = {k: record.get(k) for k in ("question_id", "strategy", "group", "category", "run")}
        out["setting"] = record.get("setting") or {}
        out["error"] = record.get("error")
        out["retrieval_seconds"] = round(float(record.get("retrieval_seconds") or 0.0), 6)
        by_doc = not record.get("recall_from") and record.get("recall@5") is not None
        if by_doc:
            out["gold_documents"] = list(record.get("gold_passages") or [])
        out["retrieved"] = [
            {"id": h["id"], "kind": h["kind"], "docs": chunk_docs.get(int(h["id"]), []) if h["kind"] == "chunk" else []}
            for h in record.get("retrieved") or []
        ]
        out["context"] = list(record.get("context") or [])
        question = self.questions.get(str(record["question_id"]))
        if record.get("recall_from") == "answer span in chunk" and question is not None:  # COVID-QA: spans in texts
            out["gold_answers"] = list(question.answers)
            for hit in out["retrieved"]:
                hit["text"] = chunk_text.get(int(hit["id"]), "") if hit["kind"] == "chunk" else ""
        if record.get("evidence_recall") is not None and question is not None:
            gold: list[str] = []
            for doc_id in question.doc_ids:
                turns = self.docs[doc_id].metadata.get("turns") if doc_id in self.docs else None
                gold += [g for g in gold_turn_spans(turns or [], question.gold_passages) if g not in gold]
            out["gold_turns"] = gold
            out["context_turns"] = [chunk_turns.get(int(i), []) for i in out["context"]]
        out["scores"] = {
            m: record.get("correct" if m == "accuracy" else m)
            for m in SCORED_METRICS
            if record.get("correct" if m == "accuracy" else m) is not None
        }
        if record.get("answer") is not None:
            out["answer"] = record["answer"]
            if question is not None and "gold_answers" not in out:
                out["gold_answers"] = list(question.answers)
            out |= {k: record[k] for k in ANSWER_KEYS if record.get(k) is not None}
        return out


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
    annotator = _Annotator(run_dir, dataset, memory_root)
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
        non_default=_non_default(results["config"], {"budget": results["budget"], **dict(options or {})}, settings),
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
