"""The HLGraphRAG acceptance test on CMU DoG (``gemrag eval cmu_dog PATH``; Zeng, "HLGraphRAG", section 4).

For every movie of the selected conversations one memory directory ``out_dir/memories/cmu_dog-movie-<n>`` (or schema,
see :mod:`gemrag.eval.memories`) holds the
movie's article (:mod:`gemrag.eval.loaders.cmu_dog`), and every strategy (or variant) is built in it, as in
:mod:`gemrag.eval.runner` (same chunks, embeddings, LLM and budget). Then, per run ``r`` (``runs`` times, seed
``seed + r``), every conversation of the movie is replayed (section 4, "Autonomous Testing Driver"):

1. at each turn ``i >= 1`` of a speaker who read the document (CMU DoG ``whoSawDoc``; both speakers when both
   did; the opening turn has nothing to reply to and is skipped) the memory is searched with the other speaker's
   last message (step 3);
2. the model writes that speaker's reply in character from the retrieved context and the last ``history`` real
   turns (step 4; :func:`gemrag.eval.acceptance.prompts.reply_prompt`), sampled at ``temperature`` with the run's
   seed, so runs differ as the paper's repeated Gemini runs did;
3. the judge classifies it against the real reply as choke / inaccurate / correct (step 5;
   :mod:`gemrag.eval.judging.judge`), given the document section the real speaker was reading (the turn's ``docIdx``);
4. error correction (step 6): the next turn sees the real reply, never the generated one; the transcript handed to
   the model is built from the dataset's turns only.

Each judged turn is appended at once to ``out_dir/records.jsonl``; a rerun skips what is there (and the memories'
LLM caches make finished calls free), so an interrupted evaluation resumes. Counts per run, their Mann-Whitney U
tests and the reports are :mod:`gemrag.eval.acceptance.report`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemrag.config import Config
from gemrag.errors import ConfigError, GemragError, is_fatal
from gemrag.eval.acceptance.prompts import clean_reply, reply_prompt
from gemrag.eval.costs import LazyLLM
from gemrag.eval.datasets import Document
from gemrag.eval.judging.judge import Judge, judge_settings
from gemrag.eval.judging.sheet import apply_verdicts, read_verdicts, write_sheet
from gemrag.eval.loaders.cmu_dog import DogConversation, DogCorpus, load_cmu_dog
from gemrag.eval.memories import EvalMemories
from gemrag.eval.plan import RunSpec, plan_runs
from gemrag.eval.run_files import JsonlAppender, check_fingerprint, read_jsonl
from gemrag.memory import Memory
from gemrag.models.base import LLM, Embedder
from gemrag.models.cache import CachedLLM
from gemrag.models.factory import build_embedder, build_llm
from gemrag.strategies.base import ProgressFactory, no_progress

__all__ = ["DEFAULT_STRATEGIES", "AcceptanceSettings", "reply_turns", "replay", "run_acceptance", "section_read"]

#: ``--judge-model none``: generate the replies only, for a judge outside gemrag (:mod:`gemrag.eval.judging.sheet`).
NO_JUDGE = "none"
#: ``judge_error`` of a reply generated with no judge.
NOT_JUDGED = "not judged (--judge-model none)"
DEFAULT_STRATEGIES = "hlgraph[directional=false;ranked=false],hlgraph[ranked=false],hlgraph[directional=false],hlgraph"
"""The default rows: the paper's three (HLGraphRAG Figure 5.1), the base HLGraphRAG [SRQ, ECR] (directional labels and
ranked retrieval off), + DW and + DW + RR, and one of ours, + RR alone (no paper row); worst-expected first, so each
test asks the paper's question (does the first choke more?). Baselines (``dense``, ``full``, ``gem``) are added with
``--strategies``."""
PAPER_PAIRS = ((0, 1), (1, 3), (0, 2), (2, 3))
"""The one-sided Mann-Whitney comparisons of :data:`DEFAULT_STRATEGIES` (indices): base vs + DW and + DW vs both (the
paper's two tests, Figure 5.5), and two of ours, base vs + RR and + RR vs both (the same question for ranked
retrieval)."""
#: Sampling temperature of the in-character replies (runs differ by their seed only through it).
REPLY_TEMPERATURE = 0.7
#: Completion limit of one reply (tokens); CMU DoG messages are about 10-20 words.
REPLY_MAX_TOKENS = 96


@dataclass(frozen=True)
class AcceptanceSettings:
    """What a replay depends on (the fingerprint of an output directory).

    Attributes:
        budget: context nodes retrieved per turn. runs: repetitions (seeds ``seed .. seed + runs - 1``).
        history: real turns of the transcript the model sees. temperature: reply sampling temperature.
    """

    budget: int = 4
    runs: int = 3
    seed: int = 0
    history: int = 8
    temperature: float = REPLY_TEMPERATURE


def reply_turns(conv: DogConversation) -> list[int]:
    """Indices of the turns whose reply is generated: every turn ``i >= 1`` of a speaker in ``conv.saw_doc``."""
    return [i for i, t in enumerate(conv.turns) if i >= 1 and t.speaker in conv.saw_doc]


def _last_other(conv: DogConversation, i: int) -> str:
    """The other speaker's last message before turn ``i`` ("" when there is none)."""
    speaker = conv.turns[i].speaker
    return next((t.text for t in reversed(conv.turns[:i]) if t.speaker != speaker), "")


def section_read(doc: Document, conv: DogConversation, i: int) -> str:
    """The document section the speaker of turn ``i`` was reading (its ``doc_idx``; the whole text if unknown)."""
    sections = doc.metadata.get("sections") or [doc.text]
    idx = conv.turns[i].doc_idx
    return sections[idx] if idx < len(sections) and sections[idx] else doc.text


def replay(
    mem: Memory,
    run: RunSpec,
    judge: Judge | None,
    conv: DogConversation,
    doc: Document,
    *,
    run_index: int,
    settings: AcceptanceSettings,
    skip: Callable[[int], bool] = lambda i: False,
) -> Iterator[dict[str, Any]]:
    """Replay ``conv`` against the memory with strategy ``run``: one record per generated turn (steps 3-6 above).

    Args:
        mem: the memory holding ``doc``, with ``run.strategy`` built.
        judge: the judge (its LLM may be ``mem.llm()``); None leaves every reply unjudged, for a judge outside
            gemrag (:mod:`gemrag.eval.judging.sheet`).
        run_index: the run number ``r``; the replies are sampled with seed ``settings.seed + r``.
        skip: ``skip(i)`` true -> turn ``i`` is already recorded (a resumed run): not generated again.

    Yields:
        Records: ``conversation_id``, ``doc_id``, ``turn`` (index in the conversation), ``speaker``, ``strategy``,
        ``base_strategy``, ``setting``, ``run``, ``seed``, ``query`` (the other speaker's message searched with),
        ``context`` (node ids), ``generated``, ``real``, ``verdict`` (``choke`` / ``inaccurate`` / ``correct`` or
        None when unjudged), ``judge_error``, ``error`` (retrieval or generation failed: no verdict),
        ``retrieval_seconds``, ``reply_seconds``.

    Raises:
        GemragError: a fatal backend error (:func:`gemrag.errors.is_fatal`).
    """
    seed = settings.seed + run_index
    for i in reply_turns(conv):
        if skip(i):
            continue
        turn = conv.turns[i]
        dialogue1 = _last_other(conv, i)
        query = dialogue1 or conv.turns[i - 1].text
        # error correction: the transcript is the dataset's real turns, whatever was generated before
        transcript = [(t.speaker == turn.speaker, t.text) for t in conv.turns[max(0, i - settings.history) : i]]
        rec: dict[str, Any] = {
            "conversation_id": conv.id,
            "doc_id": doc.id,
            "turn": i,
            "speaker": turn.speaker,
            "strategy": run.name,
            "base_strategy": run.strategy,
            "setting": run.setting,
            "run": run_index,
            "seed": seed,
            "query": query,
            "real": turn.text,
        }
        rec.update(dict.fromkeys(("context", "generated", "verdict", "judge_error", "error", "reply_seconds")))
        start = time.perf_counter()
        try:
            hits = mem.retrieve(query, settings.budget, strategy=run.strategy)
            rec["retrieval_seconds"] = time.perf_counter() - start
            rec["context"] = [h.node_id for h in hits]
            start = time.perf_counter()
            messages = reply_prompt(doc.title, [h.text for h in hits], transcript)
            completion = mem.llm().complete(
                messages, max_tokens=REPLY_MAX_TOKENS, temperature=settings.temperature, seed=seed
            )
            rec["reply_seconds"] = time.perf_counter() - start
            rec["generated"] = clean_reply(completion.text)
        except (GemragError, ValueError) as exc:
            if isinstance(exc, GemragError) and is_fatal(exc):
                raise
            rec["error"] = f"{type(exc).__name__}: {exc}"[:300]
            rec.setdefault("retrieval_seconds", time.perf_counter() - start)
            yield rec
            continue
        if judge is None:
            rec["judge_error"] = NOT_JUDGED
            yield rec
            continue
        verdict = judge.classify(section_read(doc, conv, i), dialogue1, rec["generated"], turn.text)
        rec["verdict"], rec["judge_error"] = verdict.verdict, verdict.error
        yield rec


def _record_key(rec: dict[str, Any]) -> tuple[str, int, str, int]:
    return rec["conversation_id"], int(rec["turn"]), rec["strategy"], int(rec["run"])


class _Acceptance:
    def __init__(
        self,
        corpus: DogCorpus,
        runs: list[RunSpec],
        out_dir: Path,
        settings: AcceptanceSettings,
        llm: LLM,
        embedder: Embedder,
        judge_llm: LLM | None,
        progress: ProgressFactory,
        no_judge: bool = False,
    ) -> None:
        self.no_judge = no_judge
        self.corpus, self.runs, self.out_dir, self.settings = corpus, runs, out_dir, settings
        self.llm, self.embedder, self.judge_llm, self.progress = llm, embedder, judge_llm, progress
        self.records = read_jsonl(out_dir / "records.jsonl")
        self.done = {_record_key(r) for r in self.records}
        self.memories = EvalMemories(out_dir)  # where the memories are (run_acceptance's memory_root)

    def _done(self, conversation: str, strategy: str, run: int, turn: int) -> bool:
        """True when the record of ``turn`` of that conversation, strategy and run was written by an earlier run."""
        return (conversation, turn, strategy, run) in self.done

    def run(self) -> None:
        out = JsonlAppender(self.out_dir / "records.jsonl")
        try:
            for doc in self.corpus.documents:
                convs = [c for c in self.corpus.conversations if c.doc_id == doc.id]
                units: dict[str, list[RunSpec]] = {}
                for run in self.runs:  # variants with another configuration open the memory with it
                    units.setdefault(run.config.model_dump_json(), []).append(run)
                for unit in units.values():
                    self._unit(doc, convs, unit, out)
        finally:
            out.close()

    def _pending(self, convs: Sequence[DogConversation], run: RunSpec) -> int:
        return sum(
            (c.id, i, run.name, r) not in self.done
            for r in range(self.settings.runs)
            for c in convs
            for i in reply_turns(c)
        )

    def _unit(self, doc: Document, convs: list[DogConversation], runs: list[RunSpec], out: JsonlAppender) -> None:
        todo = {run.name: self._pending(convs, run) for run in runs}
        if not any(todo.values()):
            return
        location = self.memories.location(f"cmu_dog-{doc.id}")
        with Memory.open(location, runs[0].config, llm=self.llm, embedder=self.embedder, progress=self.progress) as mem:
            if doc.text.strip():
                mem.add_text(doc.text, doc.title, source=doc.id)
            judge_llm = CachedLLM(self.judge_llm, mem.store, mem.meter) if self.judge_llm is not None else mem.llm()
            judge = None if self.no_judge else Judge(judge_llm)
            for run in runs:
                if not todo[run.name]:
                    continue
                mem.index(strategy=run.strategy)
                label = f"{doc.title} · {run.name}".replace("[", "(").replace("]", ")")  # no rich markup
                with self.progress(label, todo[run.name]) as advance:
                    for r in range(self.settings.runs):
                        for conv in convs:
                            for rec in replay(
                                mem,
                                run,
                                judge,
                                conv,
                                doc,
                                run_index=r,
                                settings=self.settings,
                                skip=functools.partial(self._done, conv.id, run.name, r),
                            ):
                                out.write(rec)
                                self.records.append(rec)
                                self.done.add(_record_key(rec))
                                advance(1)


def run_acceptance(
    path: str | Path,
    strategies: Sequence[str],
    *,
    config: Config,
    out_dir: str | Path,
    settings: AcceptanceSettings = AcceptanceSettings(),
    conversations: Sequence[str] | None = None,
    limit: int | None = None,
    judge_model: str | None = None,
    judge_base_url: str | None = None,
    llm: LLM | None = None,
    embedder: Embedder | None = None,
    judge_llm: LLM | None = None,
    progress: ProgressFactory | None = None,
    write_report: bool = True,
    sheet: Path | None = None,
    verdicts: Path | None = None,
    memory_root: str | None = None,
) -> dict[str, Any]:
    """Run the acceptance test of ``strategies`` on a CMU DoG conversation file; resumable.

    Args:
        path: the conversation file (``valid.jsonl``; ``wikidata.json`` beside it).
        strategies: strategy names or variants (``hlgraph[ranked=false]``), compared side by side.
        config: models and strategy settings of every memory.
        out_dir: where ``memories/``, ``records.jsonl``, ``run.json`` and ``results.{json,md}`` go.
        settings: budget, runs, seed, history and temperature (:class:`AcceptanceSettings`).
        conversations: conversation ids to replay (sorted by name, as the paper; default all), then the first
            ``limit`` of them.
        judge_model, judge_base_url: the judge (:func:`gemrag.eval.judging.judge.judge_settings`; default the LLM);
            ``judge_model="none"`` judges nothing (every reply unjudged; judge them with ``sheet`` / ``verdicts``).
        llm, embedder, judge_llm: backends to use instead of the configured ones (tests inject doubles).
        progress: progress-bar factory (``progress(description, total)``).
        write_report: write ``results.json`` / ``results.md`` at the end.
        sheet: also write the blind judging sheet of the records to this file
            (:func:`gemrag.eval.judging.sheet.write_sheet`).
        verdicts: report with the verdicts of this filled sheet instead of the LLM judge's
            (:mod:`gemrag.eval.judging.sheet`), into ``results-<file stem>.{json,md}``; ``results.md`` is kept.
        memory_root: None = the memories are directories under ``out_dir/memories``; a directory = under it; a
            ``postgresql://...?schema=PREFIX`` URL = schemas ``PREFIX_<name>`` (:mod:`gemrag.eval.memories`).

    Returns:
        The results dict of :func:`gemrag.eval.acceptance.report.summarize_acceptance` (counts per strategy and
        run, their means, Mann-Whitney U tests between neighbouring strategies, the records).

    Raises:
        ConfigError: an unknown strategy, bad settings, or an out dir of another configuration.
        InputError: the dataset files are missing or malformed, an unknown conversation id, or a bad verdicts file
            (:func:`gemrag.eval.judging.sheet.read_verdicts`, :func:`~gemrag.eval.judging.sheet.apply_verdicts`).
        GemragError: a model cannot be loaded (fatal backend errors stop the run; it resumes).
    """
    from gemrag.eval.acceptance.report import summarize_acceptance, write_acceptance

    if settings.budget < 1 or settings.runs < 1 or settings.history < 1 or settings.temperature < 0:
        raise ConfigError("budget, runs and history must be >= 1 and the temperature >= 0")
    runs = plan_runs(strategies, None, config)
    corpus = load_cmu_dog(Path(path)).select(list(conversations) if conversations else None, limit)
    out = Path(out_dir)
    memories = EvalMemories(out, memory_root)
    memories.check_server()  # before anything is written
    out.mkdir(parents=True, exist_ok=True)
    emb = embedder or build_embedder(config.embedder)
    llm_label = llm.model_id if llm is not None else f"{config.llm.provider}:{config.llm.model}"
    no_judge = judge_base_url is None and (judge_model or "").strip().lower() == NO_JUDGE
    judging = None if no_judge else judge_settings(config, judge_model, judge_base_url)
    if no_judge:
        judge_label = "none (replies left unjudged)"
    elif judge_llm is not None:
        judge_label = judge_llm.model_id
    else:
        judge_label = f"{judging.provider}:{judging.model}" if judging else f"{llm_label} (the evaluation LLM)"
    check_fingerprint(
        out,
        {
            "dataset": f"cmu_dog:{corpus.name}",
            "budget": settings.budget,
            "seed": settings.seed,
            "history": settings.history,
            "temperature": settings.temperature,
            "embedder": emb.model_id,
            "llm": llm_label,
            "judge": judge_label,
            **({"sections": config.sections} if config.sections else {}),
        },
    )
    shared = LazyLLM(lambda: llm if llm is not None else build_llm(config.llm, config.cache_dir))
    judge_backend = judge_llm or (LazyLLM(lambda: build_llm(judging, config.cache_dir)) if judging else None)
    backends: tuple[Any, Any, Any] = (shared, emb, judge_backend)
    runner = _Acceptance(corpus, runs, out, settings, *backends, progress or no_progress, no_judge=no_judge)
    runner.memories = memories
    runner.run()
    names = [r.name for r in runs]
    keep = {(c.id, i) for c in corpus.conversations for i in reply_turns(c)}
    records = [
        r
        for r in runner.records
        if r["strategy"] in names and r["run"] < settings.runs and (r["conversation_id"], r["turn"]) in keep
    ]
    if sheet is not None:
        write_sheet(records, _turn_inputs(corpus), Path(sheet), out)
    if verdicts is not None:
        records = apply_verdicts(records, read_verdicts(Path(verdicts)), out)
        judge_label = f"external verdicts ({Path(verdicts).name})"
    meta = {
        "dataset": {"name": corpus.name, "path": str(path), "conversations": len(corpus.conversations),
                    "movies": len(corpus.documents), "turns_per_run": len(keep)},
        "models": {"embedder": emb.model_id, "llm": llm_label, "judge": judge_label},
        "settings": {**settings.__dict__},
        "strategies": names,
    }  # fmt: skip
    default = [r.name for r in plan_runs(DEFAULT_STRATEGIES.split(","), None, config)]
    pairs = [(names[a], names[b]) for a, b in PAPER_PAIRS] if names == default else None
    results = summarize_acceptance(records, names, settings.runs, meta, pairs=pairs)
    if write_report:
        write_acceptance(results, out, "results" if verdicts is None else f"results-{Path(verdicts).stem}")
    return results


def _turn_inputs(corpus: DogCorpus) -> Callable[[str, int], tuple[str, str, str]]:
    """The judge's inputs of a turn, ``(conversation_id, turn) -> (movie, content, dialogue1)``, for a sheet."""
    convs = {c.id: c for c in corpus.conversations}

    def inputs(conversation_id: str, i: int) -> tuple[str, str, str]:
        conv = convs[conversation_id]
        doc = corpus.document(conv.doc_id)
        return doc.title, section_read(doc, conv, i), _last_other(conv, i)

    return inputs
