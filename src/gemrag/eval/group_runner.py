"""The evaluation loop of ``gemrag eval`` (:func:`gemrag.eval.runner.run_eval` plans it, this runs it).

Group by group (questions sharing their documents): one memory per group and memory suffix (ablation settings that
change the memory), the group's documents added once, each run's strategy built in it (its cost measured once, in
``out_dir/index.jsonl``), then each question retrieved (timed, after an untimed warm-up), answered, scored and
appended to ``out_dir/records.jsonl`` as it finishes, so an interrupted evaluation resumes where it stopped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from gemrag.answers.answering import answer_question
from gemrag.answers.reading import Reading
from gemrag.eval.adversarial import read_option
from gemrag.eval.attempts import BuildAttempts, add_earlier, shared_build
from gemrag.eval.categories import running_note, score_free_form
from gemrag.eval.citations import citation_record, plain_answer, question_judge
from gemrag.eval.costs import CostTap, planned_cost, token_counter
from gemrag.eval.datasets import Dataset, Question, QuestionGroup
from gemrag.eval.evidence import ChunkSpans, question_evidence
from gemrag.eval.judging.judged import GroupJudge, Judgements
from gemrag.eval.memories import EvalMemories, group_id
from gemrag.eval.metrics import ANSWER_RECALL_KINDS, PASSAGE_KIND, RECALL_KS, RECALL_RULE, recall_at_ks
from gemrag.eval.plan import RunSpec
from gemrag.eval.protocol import AnswerProtocol
from gemrag.eval.repeats import Sampling
from gemrag.eval.run_files import JsonlAppender, read_jsonl
from gemrag.memory import Memory
from gemrag.memory.asking import read_as
from gemrag.memory.choice_queries import retrieve_for_choices
from gemrag.memory.retrieval import warm_published
from gemrag.models.base import LLM, Embedder
from gemrag.strategies.base import WARM_UP, ProgressFactory, note_advance
from gemrag.types import Hit

__all__ = ["RETRIEVAL_LLM_KEYS", "WARM_UP", "GroupRunner"]

#: The LLM cost of a question's timed retrieval alone, recorded per question as ``retrieval_llm``.
RETRIEVAL_LLM_KEYS = ("llm_calls", "llm_cached", "prompt_tokens", "completion_tokens")


class GroupRunner:
    """The evaluation loop of :func:`gemrag.eval.runner.run_eval`, group by group (see the module docstring).

    Holds what every group shares (the dataset, the planned runs, the models, the answer protocol, the reading and
    sampling, the memories' location, the judge) and the records read from ``out_dir`` so far; :meth:`run` appends
    each finished record to ``out_dir/records.jsonl`` and each build's first measurement to ``out_dir/index.jsonl``,
    and leaves them in :attr:`records` and :attr:`index`. The reading (``[answer]``, worked examples included) is
    the one :func:`~gemrag.eval.runner.run_eval` read once and recorded in ``run.json``: every answer of the run
    reads with it, even if a demonstrations file changes during the run.
    """

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
        reading: Reading | None,  # how every answer reads its context ([answer]), read once; None: no answers
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
        self.protocol, self.reading, self.sampling, self.memories = protocol, reading, sampling, memories
        self.judge = GroupJudge(*judging, self.questions)
        self.indexed = {(r["group"], r["strategy"]) for r in self.index}
        self.attempts = BuildAttempts(out_dir / "attempts.jsonl")

    def run(self) -> None:
        """Build and ask every run in every question group, skipping what ``out_dir`` already holds.

        Raises:
            GemragError: a build or a model call failed (what finished before stays in the files; a rerun resumes).
        """
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
                first = (gid, run.name) not in self.indexed
                estimate = planned_cost(mem, run.strategy) if first else {}  # before the build's first LLM call
                with tap.measure(all_threads=True) as cost:
                    report = mem.index(strategy=run.strategy)
                if first:
                    measured, seconds = add_earlier(cost, report.seconds, earlier)
                    entry = {"group": gid, "memory": name, "strategy": run.name, "seconds": seconds}
                    entry["estimate"] = estimate | {"resumed": bool(earlier.get("llm_calls"))}
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
            found = [(store_of[d], self.docs[d].metadata.get("turns")) for d in q.doc_ids if d in store_of]
            turns: list[tuple[int, Sequence[dict[str, Any]]]] = [(sid, t) for sid, t in found if t]
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
        # so the latency of every strategy is retrieval alone, whatever order the strategies run in; a strategy with
        # a ``warm`` method (iterative) spends no LLM call on it (a per-question corpus would pay one per question).
        mem.embedder.embed(list(dict.fromkeys(q.question for q, _ in questions if q.question.strip())))
        warm_published(mem, run.strategy, budget)
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
                context = retrieve_for_choices(  # the question as written, unless [answer] choice_retrieval
                    lambda query: mem.retrieve(query, budget, strategy=run.strategy),
                    q.question,
                    q.choices or None,
                    mem.config.answer.choice_retrieval,
                )
            except ValueError as exc:  # e.g. an empty question in the dataset
                context, rec["error"] = [], str(exc)
            rec["retrieval_seconds"] = time.perf_counter() - start
        cites = mem.config.answer.cites(short=self.protocol.short)  # [answer] cite, else uncited short answers
        with tap.measure() as cost:
            if self.answer and rec["error"] is None:
                asked, options = self.protocol.asked(self.dataset.kind, q)  # not what retrieval got
                shown = read_as(mem, asked, context)  # the [answer] reading settings (time-aware reading)
                with self.answer_lock or nullcontext():
                    ans = answer_question(
                        mem.llm,
                        mem.meter,
                        mem.store,
                        asked,
                        shown,
                        q.choices or None,
                        rec["retrieval_seconds"],
                        abstain=bool(self.protocol.abstain),
                        short=self.protocol.short,
                        cite=cites,
                        temperature=temperature,
                        seed=seed,
                        reading=self.reading,
                        embedder=mem.embedder,
                    )
                plain = plain_answer(ans)  # scored without its citation markers
                if any("date" in h.meta for h in shown):  # read as a dated, chronological context ([answer] dates)
                    rec["dated"] = True
                rec.update(answer=read_option(plain, options), choice=ans.choice, answer_seconds=ans.answer_seconds)
                rec.update({"options": list(options), "reply": plain} if options else {})  # LoCoMo category 5
                if ans.reading:  # a reading other than the plain one: its form, shaping, votes
                    rec["reading"] = ans.reading
                    rec["shown"] = [h.node_id for h in ans.hits]
                if ans.quotes:
                    rec["quotes"] = [[q.passage, q.text, q.verified] for q in ans.quotes]
                if cites:
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
