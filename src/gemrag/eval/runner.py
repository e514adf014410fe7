"""Run retrieval strategies side by side on an evaluation dataset (``gemrag eval``).

For every question group of the dataset (questions sharing the same documents, see
:meth:`~gemrag.eval.datasets.Dataset.groups`) one memory directory
``out_dir/memories/<dataset>-<group>[-<param>-<value>]`` is filled with the group's documents once, and
every strategy is built in it with ``Memory.index(strategy=...)`` (with ``memory_root``, a PostgreSQL URL, the
memory is a schema of that database instead: :mod:`gemrag.eval.memories`): all strategies see the same chunks,
embeddings, LLM and budget. Then each question is retrieved (timed) and answered by each strategy.

Every finished (question, strategy) result is appended at once to ``out_dir/records.jsonl``; a rerun skips
what is there (and the memories' LLM caches make re-indexing free), so an interrupted evaluation resumes.
``out_dir/index.jsonl`` keeps the first measurement of each build (seconds, tokens); a run rebuilding another
run's build in the same memory carries that build's cost, ``shared_with`` and its own ``rebuild`` measurement.
A build interrupted in one invocation and completed in a later one counts the model calls of both
(``out_dir/attempts.jsonl``, :mod:`gemrag.eval.attempts`).

Latency is the retrieval alone: before the timed questions, each strategy retrieves a warm-up question
(loading its structures) and the questions' vectors are embedded once and cached, so no strategy profits
from running after another.

Token counts are *costs*, independent of caching and of the order strategies run in: LLM cache hits count
the tokens of the original call, and embedding tokens count every distinct text a strategy asked to embed
(cache hits included) with the embedder's tokenizer (``count_tokens``, else the MiniLM WordPiece tokenizer).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from gemrag.config import Config
from gemrag.errors import ConfigError
from gemrag.eval.aggregates import summarize
from gemrag.eval.costs import LazyLLM
from gemrag.eval.group_runner import GroupRunner
from gemrag.eval.judging.judged import JudgeChoice
from gemrag.eval.loading import load_dataset
from gemrag.eval.memories import EvalMemories, group_id
from gemrag.eval.merge import merge_outputs
from gemrag.eval.plan import RunSpec, plan_runs
from gemrag.eval.protocol import AnswerProtocol, answer_settings_fingerprint, check_answer_settings
from gemrag.eval.repeats import Sampling
from gemrag.eval.report import write_results
from gemrag.eval.results import EvalResults
from gemrag.eval.run_files import check_fingerprint, redact_config
from gemrag.eval.titles import check_titles, pin_titles, title_free_fingerprint
from gemrag.memory.asking import reading_of
from gemrag.models.base import LLM, Embedder
from gemrag.models.factory import build_embedder, build_llm
from gemrag.strategies.base import ProgressFactory, no_progress

__all__ = ["EvalResults", "JudgeChoice", "RunSpec", "plan_runs", "run_eval"]


def run_eval(
    kind: str,
    path: str | Path,
    strategies: Sequence[str],
    *,
    config: Config,
    budget: int = 4,
    limit: int | None = None,
    select: dict[str, Any] | None = None,
    workers: int = 1,
    out_dir: str | Path,
    ablation: dict[str, list[Any]] | None = None,
    answer: bool = True,
    progress: ProgressFactory | None = None,
    llm: LLM | None = None,
    embedder: Embedder | None = None,
    dataset_options: dict[str, Any] | None = None,
    write_report: bool = True,
    plots: bool = True,
    reference: str | None = None,
    merge: Sequence[str | Path] = (),
    answer_form: Literal["auto", "short", "default"] = "auto",
    runs: int = 1,
    seed: int = 0,
    judge: JudgeChoice | None = None,
    memory_root: str | None = None,
    adversarial: str = "options",
    date_hint: bool = True,
    abstain: bool = True,
) -> EvalResults:
    """Evaluate ``strategies`` (and a gem ablation) on a dataset file; resumable.

    Args:
        kind, path: the dataset (see :func:`gemrag.eval.datasets.load_dataset`); ``dataset_options`` are
            passed on (e.g. ``{"per_question_corpus": True}`` for the multi-hop kinds).
        strategies: registered strategy names (may be empty when ``ablation`` is given).
        config: models and gem parameters for every memory.
        budget: B, context nodes retrieved (timed) and given to the LLM; for questions with gold passages (or
            COVID-QA's answer spans) a second, untimed retrieval of ``max(B, 5)`` nodes is the strategy's ranking
            (the context itself when B >= 5), and Recall@k reads the documents (answer spans) of its first k
            passages, derived nodes skipped (:func:`gemrag.eval.metrics.first_passages`): the same rule for every
            strategy, UnWeaver's committees included (records marked ``recall_rule``).
        limit: evaluate only the first ``limit`` questions (after ``select``).
        select: ``{"documents": [ids], "categories": [names], "per_category": n}``, passed to
            :meth:`Dataset.select` (a stated subset, e.g. one LoCoMo conversation and n questions of each category).
        workers: questions answered in parallel (threads), kept in question order; with llama_cpp the answers
            are serialized (the llama.cpp backend runs one call at a time), so mostly retrieval overlaps.
        out_dir: where ``memories/``, ``records.jsonl``, ``index.jsonl``, ``results.{json,md}`` and plots go.
        ablation: ``{gem parameter: [values]}``; each value is run as ``gem[param=value]`` in its own memory
            (``search`` / ``budget`` only change retrieval and reuse the base memory).
        answer: False = retrieval only (Recall@k, latency), no LLM answers.
        progress: progress-bar factory (``progress(description, total)``), also used by index builds.
        llm, embedder: backends to use instead of the configured ones (tests inject doubles).
        reference: the run the paired bootstrap compares the others with (default: the first run, in the order
            of ``strategies``).
        write_report, plots: write ``results.json`` / ``results.md`` and the PNG plots at the end.
        merge: output directories of the same evaluation run elsewhere (other strategies or documents, same
            configuration): their records and build measurements are added to ``out_dir`` first and not
            recomputed (:func:`gemrag.eval.merge.merge_outputs`).
        answer_form: ``"short"`` answers free-form questions in the form span-answer benchmarks score (a short
            phrase: :func:`gemrag.answers.prompts.short_answer_prompt`, agents' answers shortened), ``"default"`` with
            the default answer prompt, ``"auto"`` (default) short for the kinds of
            :data:`gemrag.eval.categories.SHORT_ANSWER_KINDS` (LoCoMo, the multi-hop kinds, COVID-QA, Qasper, qa).
        runs, seed: repetitions of every answer (free-form kinds; :mod:`gemrag.eval.repeats`): with ``runs > 1`` run
            ``r`` samples its answers with seed ``seed + r`` (records carry ``run`` and ``seed``), and the report
            gives each score's mean, standard deviation and min–max over the runs.
        judge: the factual-correctness judge (:mod:`gemrag.eval.judging.judged`, :mod:`gemrag.eval.judging.factual`):
            None (the default) judges nothing, as a :class:`JudgeChoice` naming no judge; one naming a model, an
            endpoint or a backend judges the free-form answers. Records then carry ``judged`` (claim F1 in [0, 1]).
        memory_root: None = the memories are directories under ``out_dir/memories``; a directory = under it; a
            ``postgresql://...?schema=PREFIX`` URL = each memory is the schema ``PREFIX_<name>`` of that database
            (:mod:`gemrag.eval.memories`); records and results stay under ``out_dir``.
        adversarial: how LoCoMo's category-5 questions are answered (:mod:`gemrag.eval.adversarial`): ``"options"``
            (default) as LoCoMo's released evaluation asks them, a choice between "Not mentioned in the
            conversation" and the distractor in an order fixed per question (an option letter alone reads as its
            text; records carry ``options`` and the raw ``reply``; ``run.json`` records ``"adversarial":
            "options"``), ``"open"`` the question as written. Other kinds: no effect.
        date_hint: LoCoMo's category-2 questions are answered with LoCoMo's date hint appended
            (:data:`gemrag.eval.adversarial.DATE_HINT`, as its released evaluation does; ``run.json`` records
            ``"date_hint": true``); False asks them as written. Other kinds: no effect.
        abstain: the answer prompt lets the model say the answer is not mentioned (LoCoMo, the default, as LoCoMo's
            RAG reader asks); False asks as LoCoMo's released ``evaluate_gpts.py`` does, without that line
            (category 5 still gets its "Not mentioned" option; ``run.json`` records ``"abstain": false``;
            :class:`~gemrag.eval.protocol.AnswerProtocol`). Other kinds: no effect.

    Returns:
        :class:`EvalResults`; each record holds ``question_id``, ``strategy``, ``setting``, ``context`` (node
        ids given to the LLM), ``retrieved`` (node id, kind, score), ``passages`` (document ids in rank
        order), ``choice`` / ``answer``, ``correct`` (multiple choice), ``em`` / ``f1`` (free form),
        ``recall@2`` / ``recall@5`` (gold passages), ``evidence_recall`` / ``evidence_covered`` (gold turn ids
        of LoCoMo, see :mod:`gemrag.eval.evidence`; None / ``[]`` otherwise), ``tokens``, ``llm_calls`` and
        ``llm_cached`` (query-phase cost: the timed retrieval and the answer), ``retrieval_llm`` (the timed
        retrieval's own LLM cost, :data:`~gemrag.eval.group_runner.RETRIEVAL_LLM_KEYS`: calls, cached calls,
        prompt and completion tokens; cache hits count their original tokens), ``trace`` (only when the
        context's hits carry ``meta["trace"]``, e.g. ``iterative``'s steps, queries and failures),
        ``retrieval_seconds``, ``answer_seconds``,
        ``summary_hits`` / ``context_hits``; citing (``[answer] cite``) also ``cited_answer`` and the fields of
        :func:`gemrag.eval.citations.citation_record` (``answer`` is scored without markers). Records are in
        question order whatever ``workers``. LoCoMo: category-5 answers score F1 = EM = 1 iff they decline
        (:mod:`gemrag.eval.categories`), and the answer prompt allows "not mentioned" unless ``abstain`` is False.

    Raises:
        ConfigError: unknown dataset kind, strategy or ablation parameter; an out dir or a ``merge`` dir of
            another configuration.
        InputError: the dataset file is missing or malformed.
        GemragError: a model cannot be loaded, a memory cannot be used, or the ``memory_root`` server cannot be reached.
    """
    started = time.perf_counter()
    if budget < 1 or workers < 1 or (limit is not None and limit < 0) or runs < 1 or seed < 0:
        raise ConfigError("budget, workers and runs must be >= 1, limit and seed >= 0")
    plan = pin_titles(plan_runs(strategies, ablation, config))  # every strategy's read_titles explicit
    if reference is not None and reference not in [r.name for r in plan]:
        raise ConfigError(f"--reference {reference!r} is not one of the runs: {', '.join(r.name for r in plan)}")
    dataset = load_dataset(kind, path, **(dataset_options or {}))
    if select:
        try:
            dataset = dataset.select(**select)
        except ValueError as exc:
            raise ConfigError(f"{path}: {exc}") from exc
    if limit is not None:
        dataset = dataset.limit(limit)
    free_form = answer and any(q.answers and not q.choices for q in dataset.questions)
    if runs > 1 and not free_form:
        raise ConfigError(f"--runs {runs}: repeated runs sample free-form answers; {dataset.kind} has none to sample")
    (judge or JudgeChoice()).check(dataset.kind, free_form)  # before anything is built or written
    out = Path(out_dir)
    memories = EvalMemories(out, memory_root)
    memories.check_server()  # before anything is written
    out.mkdir(parents=True, exist_ok=True)
    emb = embedder or build_embedder(config.embedder)
    llm_label = llm.model_id if llm is not None else f"{config.llm.provider}:{config.llm.model}"
    protocol = AnswerProtocol.resolve(dataset.kind, answer, answer_form, adversarial, date_hint, abstain)
    sampling = Sampling(runs=runs, seed=seed)
    reading = reading_of(config.answer) if answer else None  # read once: a demonstrations file too, not per question
    shown = reading.demonstrations if reading is not None else ()
    judgements, judge_backend = (judge or JudgeChoice()).setup(out, dataset.kind, free_form, config, llm_label)
    fingerprint = {
        "dataset": f"{dataset.kind}:{dataset.name}",
        "budget": budget,
        "answer": answer,
        **protocol.fingerprint(),  # its keys are absent at their old defaults, as before each option existed
        **({"cite": True} if answer and config.answer.cites(short=protocol.short) else {}),  # absent: uncited prompts
        **({"answer_settings": read} if answer and (read := answer_settings_fingerprint(config.answer, shown)) else {}),
        "embedder": emb.model_id,
        "llm": llm_label,
        **title_free_fingerprint(config),  # gem's and the other strategies' settings; read_titles: titles.json
        **sampling.fingerprint(),
    }
    check_answer_settings(out, fingerprint)  # a run.json from before the [answer] settings were recorded
    check_fingerprint(out, fingerprint)
    merged = [Path(m) for m in merge or ()]
    check_titles(out, plan, merged)  # what each run read, run by run
    if merged:
        merge_outputs(out, merged, fingerprint)
    shared = LazyLLM(lambda: llm if llm is not None else build_llm(config.llm, config.cache_dir))
    serialize = llm is None and config.llm.provider == "llama_cpp"
    backends = (progress or no_progress, shared, emb, serialize)
    judging = (judgements, judge_backend)
    readings = (protocol, reading, sampling)
    runner = GroupRunner(dataset, plan, out, budget, answer, workers, *backends, *readings, memories, judging)
    runner.run()
    if judgements is not None:
        judgements.attach(runner.records)
    names = [r.name for r in plan]
    ids = {q.id for q in dataset.questions}
    groups = {group_id(g) for g in dataset.groups()}
    results = EvalResults(
        out_dir=out,
        dataset={
            "name": dataset.name,
            "kind": dataset.kind,
            "path": str(path),
            "questions": len(dataset.questions),
            "groups": len(groups),
            "documents": len(dataset.documents),
        },
        config=redact_config(config),
        models={"embedder": emb.model_id, "llm": llm_label, **({"judge": judgements.label} if judgements else {})},
        budget=budget,
        answer=answer,
        runs=names,
        ablation={p: [next(iter(r.setting.values())) for r in plan if r.sweep == p] for p in (ablation or {})},
        records=[
            r for r in runner.records if r["strategy"] in names and r["question_id"] in ids and r.get("run", 0) < runs
        ],
        index=[r for r in runner.index if r["strategy"] in names and r["group"] in groups],
        reference=reference,
        repeats=runs,
    )
    results.summary = summarize(results)
    results.seconds = time.perf_counter() - started
    if write_report:
        write_results(results)
        if plots:
            from gemrag.eval.plots import write_plots

            write_plots(results)
    return results
