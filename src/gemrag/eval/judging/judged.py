"""The judged factual-correctness score of a QA evaluation's answers (``gemrag eval covid_qa``): which answers need
judging, the judgements file, and the score attached to each record.

The runner answers every question first (``records.jsonl``, unchanged); then, in the same opened memory, each answer
without a judgement of the current judge is scored by :class:`gemrag.eval.judging.factual.FactualJudge` and appended to
``out_dir/judgements.jsonl`` (one line per ``question_id``, ``strategy``, ``run`` and ``judge``). A rerun judges only
what is missing, and the judge's calls are cached in the memory (a changed judge re-judges into new lines; the old
ones stay). :meth:`Judgements.attach` copies the score into each record as ``judged`` (the claim F1, in [0, 1], None
= unjudged) with ``judged_error``; the report's "Judged %" column and paired comparison read it.

Which evaluations are judged: none by default. A free-form kind (COVID-QA, the UnWeaver paper's metric; any other) is
judged only when a judge is named (``--judge-model`` / ``--judge-base-url``): the embedded models cannot judge (the
0.5B judge agreed with hand labels at Cohen's kappa 0.025, ``benchmarks/factual_agreement.py``), and each judgement
costs about four LLM calls per answer. A named judge equal to the evaluation's LLM judges with the memory's own
backend (no second model is loaded). ``--judge-model none`` is accepted and judges nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemrag.config import Config
from gemrag.errors import ConfigError
from gemrag.eval.costs import LazyLLM
from gemrag.eval.datasets import Question
from gemrag.eval.judging.factual import FactualJudge
from gemrag.eval.judging.judge import judge_settings
from gemrag.eval.run_files import JsonlAppender, read_jsonl
from gemrag.memory import Memory
from gemrag.models.base import LLM
from gemrag.models.cache import CachedLLM
from gemrag.models.factory import build_llm
from gemrag.strategies.base import ProgressFactory

__all__ = ["NO_JUDGE", "GroupJudge", "JudgeChoice", "Judgements", "judge_named"]

#: ``--judge-model`` value that names no judge (as giving none).
NO_JUDGE = "none"

_Key = tuple[str, str, int, str]


def judge_named(judge_model: str | None, judge_base_url: str | None) -> bool:
    """Whether ``--judge-model`` / ``--judge-base-url`` name a judge: an endpoint, or a model other than ``none``
    (nothing is judged otherwise: the module docstring says why)."""
    if judge_base_url is not None:
        return True
    return judge_model is not None and judge_model.strip().lower() != NO_JUDGE


class Judgements:
    """The judgements of one output directory for one judge (``label``, e.g. ``llama_cpp:qwen2.5-coder-0.5b``).

    Args:
        out_dir: the evaluation's output directory (``judgements.jsonl`` is read now, appended to by :meth:`judge`).
        label: the judge's identity; judgements of other judges are kept in the file but not used.
    """

    def __init__(self, out_dir: Path, label: str) -> None:
        self.path = out_dir / "judgements.jsonl"
        self.label = label
        self.lines: dict[_Key, dict[str, Any]] = {}
        for line in read_jsonl(self.path):
            if line.get("judge") == label:
                self.lines[_key(line, label)] = line

    def needs(self, record: dict[str, Any], question: Question | None) -> bool:
        """Whether ``record`` (a runner record) has an answer to judge, against a reference, without a judgement."""
        if question is None or not question.answers or question.choices or record.get("error"):
            return False
        return record.get("answer") is not None and _key(record, self.label) not in self.lines

    def pending(self, records: Sequence[dict[str, Any]], questions: dict[str, Question]) -> list[dict[str, Any]]:
        """The records of ``records`` that :meth:`needs` a judgement (``questions``: the dataset's, by id)."""
        return [r for r in records if self.needs(r, questions.get(r["question_id"]))]

    def judge(
        self,
        judge: FactualJudge,
        records: Sequence[dict[str, Any]],
        questions: dict[str, Question],
        advance: Callable[[int], None] = lambda n: None,
    ) -> int:
        """Judge every record of ``records`` that :meth:`needs` it and append the judgements (flushed per line).

        Args:
            judge: the factual-correctness judge (its LLM cached in the memory the records come from).
            records: runner records (``question_id``, ``strategy``, ``run``, ``answer``).
            questions: the dataset's questions by id (the first gold answer is the reference).
            advance: progress callback, called with 1 per judged answer.

        Returns:
            The number of answers judged now.

        Raises:
            GemragError: a fatal backend error (the other failures give unjudged lines).
        """
        todo = self.pending(records, questions)
        if not todo:
            return 0
        out = JsonlAppender(self.path)
        try:
            for rec in todo:
                q = questions[rec["question_id"]]
                judgement = judge.score(q.question, rec["answer"] or "", q.answers[0])
                line = {"question_id": q.id, "strategy": rec["strategy"], "run": int(rec.get("run", 0))}
                line |= {"judge": self.label, "answer": rec["answer"], "reference": q.answers[0]}
                line |= judgement.as_record()
                out.write(line)
                self.lines[_key(line, self.label)] = line
                advance(1)
        finally:
            out.close()
        return len(todo)

    def attach(self, records: Sequence[dict[str, Any]]) -> None:
        """Set ``judged`` (claim F1 in [0, 1], or None) and ``judged_error`` on each record that was judged."""
        for rec in records:
            line = self.lines.get(_key(rec, self.label))
            if line is not None:
                rec["judged"], rec["judged_error"] = line.get("f1"), line.get("error")


def _key(rec: dict[str, Any], label: str) -> _Key:
    return (str(rec["question_id"]), str(rec["strategy"]), int(rec.get("run", 0)), label)


@dataclass(frozen=True)
class JudgeChoice:
    """The factual-correctness judge of :func:`gemrag.eval.runner.run_eval`: ``model`` / ``base_url`` as
    ``--judge-model`` / ``--judge-base-url`` (:func:`gemrag.eval.judging.judge.judge_settings`), or ``llm``, a backend
    to judge with (tests inject doubles). The default, and ``model="none"``, judges nothing (module docstring)."""

    model: str | None = None
    base_url: str | None = None
    llm: LLM | None = None

    def check(self, kind: str, free_form: bool) -> None:
        """Refuse a judge named for a kind without free-form answers.

        Raises:
            ConfigError: ``--judge-model`` (other than none) or ``--judge-base-url`` for multiple choice.
        """
        if judge_named(self.model, self.base_url) and not free_form:
            given = [
                f"{flag} {v}" for flag, v in (("--judge-model", self.model), ("--judge-base-url", self.base_url)) if v
            ]
            raise ConfigError(f"{', '.join(given)}: {kind} has no free-form answers to judge")

    def setup(
        self, out_dir: Path, kind: str, free_form: bool, config: Config, llm_label: str
    ) -> tuple[Judgements | None, LLM | None]:
        """The judgements file of this judge and its backend (None: the memory's own LLM judges, when the named
        judge is the evaluation's LLM), or ``(None, None)`` when the evaluation is not judged: no free-form answers,
        or no judge named (no ``model`` other than none, ``base_url`` or ``llm``).

        Raises:
            ConfigError: a judge named for a kind without free-form answers (multiple choice).
        """
        self.check(kind, free_form)
        if not free_form or not (self.llm is not None or judge_named(self.model, self.base_url)):
            return None, None
        if self.llm is not None:
            return Judgements(out_dir, self.llm.model_id), self.llm
        settings = judge_settings(config, self.model, self.base_url)
        if settings is None or settings == config.llm:  # the evaluation's own model: judged by the memory's LLM
            return Judgements(out_dir, llm_label), None
        backend: LLM = LazyLLM(lambda: build_llm(settings, config.cache_dir))
        return Judgements(out_dir, f"{settings.provider}:{settings.model}"), backend


@dataclass(frozen=True)
class GroupJudge:
    """What the runner judges with: the ``judgements`` file (None: not judged), the judge's ``backend`` (None: the
    memory's own LLM) and the dataset's ``questions`` by id."""

    judgements: Judgements | None
    backend: LLM | None
    questions: dict[str, Question]

    def pending(self, records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The records that need a judgement (``[]`` when the evaluation is not judged)."""
        return self.judgements.pending(records, self.questions) if self.judgements is not None else []

    def run(self, mem: Memory, records: Sequence[dict[str, Any]], progress: ProgressFactory) -> int:
        """Judge the :meth:`pending` ones of ``records`` (one strategy's, in one memory) with the judge's calls cached
        in ``mem``; the memory's LLM is not loaded when there is nothing to judge.

        Returns:
            The number judged.

        Raises:
            GemragError: a fatal backend error.
        """
        todo = self.pending(records)
        if not todo or self.judgements is None:
            return 0
        llm = CachedLLM(self.backend, mem.store, mem.meter) if self.backend is not None else mem.llm()
        label = f"{todo[0]['group']} · {todo[0]['strategy']} · judging".replace("[", "(").replace("]", ")")
        with progress(label, len(todo)) as advance:
            return self.judgements.judge(FactualJudge(llm), todo, self.questions, advance)
