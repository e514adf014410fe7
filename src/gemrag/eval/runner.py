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

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Literal

from gemrag.answering import answer_question
from gemrag.config import Config
from gemrag.errors import ConfigError
from gemrag.eval.adversarial import read_option
from gemrag.eval.attempts import BuildAttempts, add_earlier, shared_build
from gemrag.eval.categories import ABSTAIN_KINDS, running_note, score_free_form
from gemrag.eval.citations import citation_record, plain_answer, question_judge
from gemrag.eval.costs import CostTap, LazyLLM, token_counter
from gemrag.eval.datasets import Dataset, Question, QuestionGroup
from gemrag.eval.evidence import ChunkSpans, question_evidence
from gemrag.eval.judged import GroupJudge, JudgeChoice, Judgements
from gemrag.eval.loading import load_dataset
from gemrag.eval.memories import EvalMemories, group_id
from gemrag.eval.merge import merge_outputs
from gemrag.eval.metrics import ANSWER_RECALL_KINDS, PASSAGE_KIND, RECALL_KS, RECALL_RULE, recall_at_ks
from gemrag.eval.plan import RunSpec, plan_runs
from gemrag.eval.protocol import AnswerProtocol
from gemrag.eval.repeats import Sampling
from gemrag.eval.report import JsonlAppender, check_fingerprint, read_jsonl, redact_config, summarize, write_results
from gemrag.eval.results import EvalResults
from gemrag.eval.titles import check_titles, pin_titles, title_free_fingerprint
from gemrag.memory import Memory
from gemrag.models.base import LLM, Embedder
from gemrag.models.factory import build_embedder, build_llm
from gemrag.strategies.base import ProgressFactory, no_progress, note_advance
from gemrag.types import Hit

__all__ = ["EvalResults", "JudgeChoice", "RunSpec", "plan_runs", "run_eval"]

#: The LLM cost of a question's timed retrieval alone, recorded per question as ``retrieval_llm``.
RETRIEVAL_LLM_KEYS = ("llm_calls", "llm_cached", "prompt_tokens", "completion_tokens")
#: An untimed question retrieved once per strategy and memory before the timed ones (loads its structures).
WARM_UP = "What is this text about?"


class _Runner:
    def __init__(
        self,
        dataset: Dataset,
        runs: list[RunSpec],
        out_dir: Path,
        budget: int,
        answer: bool,
        workers: int,
        progress: ProgressFactory,
        llm: LLM,
        embedder: Embedder,
        serialize: bool,
        protocol: AnswerProtocol,  # the answer form, LoCoMo's options and date hint
        sampling: Sampling,  # --runs: how many answers per question, and how they are sampled
        memories: EvalMemories,  # where the memories are (run_eval's memory_root)
        judging: tuple[Judgements | None, LLM | None],  # the factual-correctness judge's file and backend
    ) -> None:
        self.dataset, self.runs, self.out_dir = dataset, runs, out_dir
        self.budget, self.answer, self.workers, self.progress = budget, answer, workers, progress
        self.llm, self.embedder = llm, embedder
        self.count_tokens = token_counter(embedder)
        self.doc_ids = {d.id for d in dataset.documents}
        self.docs = {d.id: d for d in dataset.documents}
        self.answer_lock = threading.Lock() if serialize else None
        self.records = read_jsonl(out_dir / "records.jsonl")
        self.index = read_jsonl(out_dir / "index.jsonl")
        self.done = {(r["question_id"], r["strategy"], int(r.get("run", 0))) for r in self.records}
        self.questions = {q.id: q for q in dataset.questions}
        self.protocol, self.sampling, self.memories = protocol, sampling, memories
        self.judge = GroupJudge(*judging, self.questions)
        self.indexed = {(r["group"], r["strategy"]) for r in self.index}
        self.attempts = BuildAttempts(out_dir / "attempts.jsonl")

    def run(self) -> None:
        records, index = JsonlAppender(self.out_dir / "records.jsonl"), JsonlAppender(self.out_dir / "index.jsonl")
        try:
            for group in self.dataset.groups():
                units: dict[tuple[str, str], list[RunSpec]] = {}
                for run in self.runs:  # runs sharing a directory and a configuration share one opened Memory
                    units.setdefault((run.memory_suffix, run.config.model_dump_json()), []).append(run)
                for unit in units.values():
                    self._unit(group, unit, records, index)
        finally:
            records.close()
            index.close()
            self.attempts.close()

    def _unit(self, group: QuestionGroup, runs: list[RunSpec], records: JsonlAppender, index: JsonlAppender) -> None:
        gid = group_id(group)
        todo = [(q, i) for i in range(self.sampling.runs) for q in group.questions]  # (question, run)
        pending = {r.name: [(q, i) for q, i in todo if (q.id, r.name, i) not in self.done] for r in runs}
        if not any(pending.values()) and not any(self.judge.pending(self._of(gid, r.name)) for r in runs):
            return
        name = f"{self.dataset.name}-{gid}{runs[0].memory_suffix}"
        location = self.memories.location(name)
        with Memory.open(location, runs[0].config, llm=self.llm, embedder=self.embedder, progress=self.progress) as mem:
            # the caches of the group's other memories (the base memory, earlier ablation memories)
            self.memories.seed_caches(mem, name, (f"{self.dataset.name}-{gid}{r.memory_suffix}" for r in self.runs))
            passages: dict[int, list[str]] = {}
            for doc in (d for d in group.documents if d.text.strip()):
                store_id, _ = mem.add_text(doc.text, doc.title or doc.id, source=doc.id)
                passages.setdefault(store_id, []).append(doc.id)  # identical texts share one stored document
            tap = CostTap(mem, self.count_tokens)
            for run in runs:
                if not pending[run.name]:
                    self.judge.run(mem, self._of(gid, run.name), self.progress)
                    continue
                earlier = self.attempts.start(name, run.name, mem.store)  # an interrupted build's part
                with tap.measure(all_threads=True) as cost:
                    report = mem.index(strategy=run.strategy)
                if (gid, run.name) not in self.indexed:
                    measured, seconds = add_earlier(cost, report.seconds, earlier)
                    entry = {"group": gid, "memory": name, "strategy": run.name, "seconds": seconds}
                    entry |= measured | {"chunks": report.chunks, "summary_nodes": report.summary_nodes}
                    entry |= shared_build(self.index, name, run.strategy, measured)
                    entry["base_strategy"] = run.strategy
                    index.write(entry)
                    self.index.append(entry)
                    self.indexed.add((gid, run.name))
                self._questions(mem, tap, run, gid, pending[run.name], passages, records)
                self.judge.run(mem, self._of(gid, run.name), self.progress)  # answers lacking a judgement

    def _of(self, gid: str, name: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r["group"] == gid and r["strategy"] == name]

    def _questions(
        self,
        mem: Memory,
        tap: CostTap,
        run: RunSpec,
        gid: str,
        questions: list[tuple[Question, int]],
        passages: dict[int, list[str]],
        out: JsonlAppender,
    ) -> None:
        node_docs: dict[int, list[str]] = {}
        store_of = {doc_id: store_id for store_id, ids in passages.items() for doc_id in ids}
        spans = ChunkSpans(mem.store, {sid: self.docs[ids[0]].text for sid, ids in passages.items()})

        def evidence(q: Question, hits: Sequence[Hit]) -> tuple[float | None, list[str]]:
            turns = [(store_of[d], self.docs[d].metadata.get("turns")) for d in q.doc_ids if d in store_of]
            turns = [(sid, t) for sid, t in turns if t]
            if not turns or not q.gold_passages:
                return None, []
            return question_evidence(q.gold_passages, turns, hits, spans, mem.store)

        def documents(hit: Hit) -> list[str]:  # the dataset documents a chunk hit comes from
            if hit.node_id not in node_docs:
                doc_id = mem.store.node(hit.node_id).doc_id
                node_docs[hit.node_id] = passages.get(doc_id, []) if doc_id is not None else []
            return node_docs[hit.node_id]

        def gold_of(q: Question) -> Callable[[Hit], bool] | None:
            spans = self.dataset.kind in ANSWER_RECALL_KINDS and not q.choices  # judged as their Recall@k
            return question_judge(q, self.doc_ids, passages, lambda hits: evidence(q, hits), spans)

        def one(item: tuple[Question, int]) -> dict[str, Any]:
            return self._ask(mem, tap, run, gid, item, documents, evidence, gold_of)

        budget = int(run.setting.get("budget", self.budget))
        # Untimed warm-up: embed the questions once (cached in the memory) and load the strategy's structures,
        # so the latency of every strategy is retrieval alone, whatever order the strategies run in.
        mem.embedder.embed(list(dict.fromkeys(q.question for q, _ in questions if q.question.strip())))
        mem.retrieve(WARM_UP, budget, strategy=run.strategy)
        label = f"{gid} · {run.name} (B={budget})".replace("[", "(").replace("]", ")")  # no rich markup
        kept: list[dict[str, Any]] = []  # this run's records so far, for the running averages
        with self.progress(label, len(questions)) as raw_advance:
            advance = note_advance(raw_advance)

            def keep(record: dict[str, Any]) -> None:
                self._keep(record, out)
                kept.append(record)
                advance(1, running_note(kept))

            if self.workers <= 1:
                for q in questions:
                    keep(one(q))
                return
            # Questions run concurrently but are kept in question order, so records.jsonl and the results are
            # those of workers=1 (the LLM answers are serialized for llama_cpp, see run_eval).
            pool = ThreadPoolExecutor(max_workers=self.workers)
            try:
                futures: list[Future[dict[str, Any]]] = [pool.submit(one, q) for q in questions]
                for future in futures:
                    keep(future.result())
            finally:
                pool.shutdown(wait=True, cancel_futures=True)

    def _keep(self, record: dict[str, Any], out: JsonlAppender) -> None:
        out.write(record)
        self.records.append(record)
        self.done.add((record["question_id"], record["strategy"], int(record.get("run", 0))))

    def _ask(
        self,
        mem: Memory,
        tap: CostTap,
        run: RunSpec,
        gid: str,
        item: tuple[Question, int],
        documents: Callable[[Hit], list[str]],
        evidence: Callable[[Question, Sequence[Hit]], tuple[float | None, list[str]]],
        gold_of: Callable[[Question], Callable[[Hit], bool] | None],
    ) -> dict[str, Any]:
        q, run_index = item
        budget = int(run.setting.get("budget", self.budget))
        # Recall@k is over documents; gold ids that are not documents (LoCoMo dialog turns) are not scored.
        gold = q.gold_passages if set(q.gold_passages) <= self.doc_ids else []
        given = [] if gold else q.metadata.get("evidence_passages", [])  # see ANSWER_RECALL_KINDS
        spans = q.answers if self.dataset.kind in ANSWER_RECALL_KINDS and not gold and not q.choices else []
        depth = max(budget, *RECALL_KS) if gold or spans or given else budget
        rec: dict[str, Any] = dict.fromkeys(("choice", "answer", "correct", "em", "f1", "answer_seconds", "error"))
        rec.update(question_id=q.id, strategy=run.name, base_strategy=run.strategy, setting=run.setting, group=gid)
        rec.update(category=q.category, difficult=q.difficult, budget=budget, gold_index=q.gold_index)
        rec["gold_passages"] = q.gold_passages
        temperature, seed = self.sampling.of(run_index)
        rec["run"] = run_index
        if seed is not None:
            rec["seed"] = seed
        with tap.measure() as retrieval_cost:  # the retrieval's own LLM calls (remem's filter, iterative's steps)
            start = time.perf_counter()
            try:
                context = mem.retrieve(q.question, budget, strategy=run.strategy)
            except ValueError as exc:  # e.g. an empty question in the dataset
                context, rec["error"] = [], str(exc)
            rec["retrieval_seconds"] = time.perf_counter() - start
        with tap.measure() as cost:
            if self.answer and rec["error"] is None:
                asked, options = self.protocol.asked(self.dataset.kind, q)  # not what retrieval got
                with self.answer_lock or nullcontext():
                    ans = answer_question(
                        mem.llm,
                        mem.meter,
                        mem.store,
                        asked,
                        context,
                        q.choices or None,
                        rec["retrieval_seconds"],
                        abstain=self.dataset.kind in ABSTAIN_KINDS,
                        short=self.protocol.short,
                        cite=mem.config.answer.cite,
                        temperature=temperature,
                        seed=seed,
                    )
                plain = plain_answer(ans)  # scored without its citation markers
                rec.update(answer=read_option(plain, options), choice=ans.choice, answer_seconds=ans.answer_seconds)
                rec.update({"options": list(options), "reply": plain} if options else {})  # LoCoMo category 5
                if mem.config.answer.cite:
                    rec["cited_answer"] = ans.text
                    rec.update(citation_record(ans, gold_of(q)))
        ranked = context
        if depth > budget and rec["error"] is None:  # one deeper ranking for Recall@5: not timed, not in the tokens
            ranked = mem.retrieve(q.question, depth, strategy=run.strategy)
        # Recall@k, one rule for every strategy (committees included): the first k passages (chunk hits; derived
        # nodes take no rank) of this one ranking, read by metrics.first_passages.
        rec.update({"recall_rule": RECALL_RULE} if gold or spans or given else {})
        if (gold or spans or given) and rec["error"] is None:
            rec.update(recall_at_ks(ranked, RECALL_KS, documents, gold, given, spans))
            found = "evidence passage and chunk overlap" if given else "answer span in chunk"
            rec.update({"recall_from": found} if spans or given else {})
        rec["context"] = [h.node_id for h in context]
        rec["retrieved"] = [{"id": h.node_id, "kind": h.kind, "score": round(h.score, 6)} for h in ranked]
        rec["passages"] = list(dict.fromkeys(d for h in ranked if h.kind == PASSAGE_KIND for d in documents(h)))
        rec["summary_hits"] = sum(1 for h in context if h.kind == "summary")
        rec["context_hits"] = len(context)
        cost = {k: retrieval_cost[k] + cost[k] for k in cost}  # the question's whole query-time cost
        rec["tokens"] = {k: cost[k] for k in ("prompt_tokens", "completion_tokens", "embedding_tokens")}
        rec["llm_calls"], rec["llm_cached"] = cost["llm_calls"], cost["llm_cached"]
        rec["retrieval_llm"] = {k: retrieval_cost[k] for k in RETRIEVAL_LLM_KEYS}
        trace = next((h.meta["trace"] for h in context if "trace" in h.meta), None)
        if trace is not None:  # a multi-step retrieval's account (iterative: its steps, queries, failures)
            rec["trace"] = trace
        for k in RECALL_KS:  # a failed retrieval found no gold document
            rec.setdefault(f"recall@{k}", 0.0 if gold else None)
        # gold ids that are not documents (LoCoMo turns): evidence recall of the context (B nodes)
        recall, covered = evidence(q, context) if not gold and rec["error"] is None else (None, [])
        rec["evidence_recall"], rec["evidence_covered"] = recall, covered
        if self.answer:
            if q.choices and q.gold_index is not None:
                rec["correct"] = rec["choice"] == q.gold_index
            elif not q.choices and q.answers:
                rec["em"], rec["f1"] = score_free_form(self.dataset.kind, q, rec["answer"] or "")
        return rec


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
        select: ``{"documents": [ids], "per_category": n}``, passed to :meth:`Dataset.select` (a stated subset,
            e.g. one LoCoMo conversation and n questions of each category).
        workers: questions answered in parallel (threads), kept in question order; with llama_cpp the answers
            are serialized (the llama.cpp backend runs one call at a time), so mostly retrieval overlaps.
        out_dir: where ``memories/``, ``records.jsonl``, ``index.jsonl``, ``results.{json,md}`` and plots go.
        ablation: ``{gem parameter: [values]}``; each value is run as ``gem[param=value]`` in its own memory
            (``search`` / ``budget`` only change retrieval and reuse the base memory).
        answer: False = retrieval only (Recall@k, latency), no LLM answers.
        progress: progress-bar factory (``progress(description, total)``), also used by index builds.
        llm, embedder: backends to use instead of the configured ones (tests inject doubles).
        reference: the run the paired bootstrap compares the others with (default gem if evaluated, else the
            first run).
        write_report, plots: write ``results.json`` / ``results.md`` and the PNG plots at the end.
        merge: output directories of the same evaluation run elsewhere (other strategies or documents, same
            configuration): their records and build measurements are added to ``out_dir`` first and not
            recomputed (:func:`gemrag.eval.merge.merge_outputs`).
        answer_form: ``"short"`` answers free-form questions in the form span-answer benchmarks score (a short
            phrase: :func:`gemrag.answering.short_answer_prompt`, agents' answers shortened), ``"default"`` with the
            default answer prompt, ``"auto"`` (default) short for the kinds of
            :data:`gemrag.eval.categories.SHORT_ANSWER_KINDS` (LoCoMo, the multi-hop kinds, COVID-QA, Qasper, qa).
        runs, seed: repetitions of every answer (free-form kinds; :mod:`gemrag.eval.repeats`): with ``runs > 1`` run
            ``r`` samples its answers with seed ``seed + r`` (records carry ``run`` and ``seed``), and the report
            gives each score's mean, standard deviation and min–max over the runs.
        judge: the factual-correctness judge (:mod:`gemrag.eval.judged`, :mod:`gemrag.eval.factual`): None (the
            default) judges nothing, as a :class:`JudgeChoice` naming no judge; one naming a model, an endpoint or a
            backend judges the free-form answers. Records then carry ``judged`` (claim F1 in [0, 1]).
        memory_root: None = the memories are directories under ``out_dir/memories``; a
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

    Returns:
        :class:`EvalResults`; each record holds ``question_id``, ``strategy``, ``setting``, ``context`` (node
        ids given to the LLM), ``retrieved`` (node id, kind, score), ``passages`` (document ids in rank
        order), ``choice`` / ``answer``, ``correct`` (multiple choice), ``em`` / ``f1`` (free form),
        ``recall@2`` / ``recall@5`` (gold passages), ``evidence_recall`` / ``evidence_covered`` (gold turn ids
        of LoCoMo, see :mod:`gemrag.eval.evidence`; None / ``[]`` otherwise), ``tokens``, ``llm_calls`` and
        ``llm_cached`` (query-phase cost: the timed retrieval and the answer), ``retrieval_llm`` (the timed
        retrieval's own LLM cost, :data:`RETRIEVAL_LLM_KEYS`: calls, cached calls, prompt and completion tokens;
        cache hits count their original tokens), ``trace`` (only when the context's hits carry ``meta["trace"]``,
        e.g. ``iterative``'s steps, queries and failures), ``retrieval_seconds``, ``answer_seconds``,
        ``summary_hits`` / ``context_hits``; citing (``[answer] cite``) also ``cited_answer`` and the fields of
        :func:`gemrag.eval.citations.citation_record` (``answer`` is scored without markers). Records are in
        question order whatever ``workers``. LoCoMo: category-5 answers score F1 = EM = 1 iff they decline
        (:mod:`gemrag.eval.categories`), and the answer prompt allows "not mentioned".

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
    protocol = AnswerProtocol.resolve(dataset.kind, answer, answer_form, adversarial, date_hint)
    sampling = Sampling(runs=runs, seed=seed)
    judgements, judge_backend = (judge or JudgeChoice()).setup(out, dataset.kind, free_form, config, llm_label)
    fingerprint = {
        "dataset": f"{dataset.kind}:{dataset.name}",
        "budget": budget,
        "answer": answer,
        **protocol.fingerprint(),  # its keys are absent at their old defaults, as before each option existed
        **({"cite": True} if answer and config.answer.cite else {}),  # cited answers (absent: the old prompts)
        "embedder": emb.model_id,
        "llm": llm_label,
        **title_free_fingerprint(config),  # gem's and the other strategies' settings; read_titles: titles.json
        **sampling.fingerprint(),
    }
    check_fingerprint(out, fingerprint)
    check_titles(out, plan, merge or ())  # what each run read, run by run
    if merge:
        merge_outputs(out, merge, fingerprint)
    shared = LazyLLM(lambda: llm if llm is not None else build_llm(config.llm, config.cache_dir))
    serialize = llm is None and config.llm.provider == "llama_cpp"
    backends = (progress or no_progress, shared, emb, serialize)
    judging = (judgements, judge_backend)
    runner = _Runner(dataset, plan, out, budget, answer, workers, *backends, protocol, sampling, memories, judging)
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
        ablation={p: [r.setting[p] for r in plan if p in r.setting] for p in (ablation or {})},
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
