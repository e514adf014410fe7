"""The judged factual-correctness score (RAGAS FactualCorrectness as UnWeaver section 3 uses it): the claim-level
math on hand-made verdicts, the judge on hand-made claims with the scripted LLM, malformed judge output, and the
score in a covid_qa evaluation (judged once, cached, reported with a paired comparison)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from fakes import HashEmbedder, ScriptedLLM
from gemrag.config import Config
from gemrag.errors import ConfigError
from gemrag.eval.judging.factual import FactualJudge, claim_scores
from gemrag.eval.judging.judged import JudgeChoice, judge_named
from gemrag.eval.metrics import answer_recall
from gemrag.eval.report import markdown_report
from gemrag.eval.runner import run_eval
from gemrag.models.base import Completion, Message

PAPER = (
    "The novel coronavirus spreads through respiratory droplets. Its incubation period is five days on average. "
    "Most patients develop fever and cough. Masks reduce the transmission in hospitals."
)


def covid_file(tmp_path: Path) -> Path:
    """One COVID-QA paper (SQuAD format) with three questions."""
    qas = [
        {"question": "How does the coronavirus spread?", "id": 1, "answers": [{"text": "respiratory droplets"}]},
        {"question": "What is the incubation period?", "id": 2, "answers": [{"text": "five days on average"}]},
        {"question": "What reduces transmission?", "id": 3, "answers": [{"text": "Masks reduce the transmission"}]},
    ]
    data = {"data": [{"paragraphs": [{"context": PAPER, "document_id": 9, "qas": qas}]}]}
    path = tmp_path / "covid.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_claim_scores_follow_ragas_precision_recall_f1() -> None:
    # answer: 2 claims, 1 supported by the reference; reference: 3 claims, 1 supported by the answer
    s = claim_scores([True, False], [True, False, False])
    assert (s.tp, s.fp, s.fn) == (1, 1, 2)
    assert s.precision == pytest.approx(0.5) and s.recall == pytest.approx(1 / 3)
    assert s.f1 == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))
    assert claim_scores([True], [True]).f1 == 1.0
    nothing = claim_scores([False, False], [False])
    assert (nothing.precision, nothing.recall, nothing.f1) == (0.0, 0.0, 0.0)
    assert claim_scores([], [True]).f1 == 0.0  # no answer claim: precision 0, recall 0 (tp + fn = 0 + 0)


def test_judge_decomposes_both_sides_and_checks_each_claim() -> None:
    llm = ScriptedLLM()
    judge = FactualJudge(llm)
    j = judge.score(
        "What is the incubation period?",
        "The incubation period is five days and patients recover quickly.",
        "The incubation period is five days.",
    )
    assert j.answer_claims == ("The incubation period is five days", "patients recover quickly")
    assert j.reference_claims == ("The incubation period is five days",)
    assert (j.tp, j.fp, j.fn) == (1, 1, 0)  # the invented claim is a false positive; the reference's is covered
    assert j.precision == pytest.approx(0.5) and j.recall == pytest.approx(1.0)
    assert j.f1 == pytest.approx(2 / 3)
    assert llm.calls == 4
    missing = judge.score("Q?", "The incubation period is five days.", "The incubation period is five days; fever.")
    assert (missing.tp, missing.fp, missing.fn) == (1, 0, 1)  # fever is in the reference, not in the answer


def test_empty_answer_scores_zero_without_a_call_and_no_reference_is_unjudged() -> None:
    llm = ScriptedLLM()
    judge = FactualJudge(llm)
    assert judge.score("Q?", "   ", "five days").f1 == 0.0
    unjudged = judge.score("Q?", "five days", "")
    assert unjudged.f1 is None and unjudged.error == "no reference answer"
    assert llm.calls == 0


def test_malformed_judge_json_gives_an_unjudged_answer_after_the_retries() -> None:
    llm = ScriptedLLM(fail=lambda i, prompt: "List the claims" in prompt)
    j = FactualJudge(llm, attempts=2).score("Q?", "five days", "five days")
    assert j.f1 is None and j.error is not None and "StructuredOutputError" in j.error
    assert llm.calls == 2  # one greedy attempt and one repair, then given up


class DroppedVerdict(ScriptedLLM):
    """Answers the claim checks with one verdict too few (valid JSON, wrong shape)."""

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        out = super().complete(messages, **kwargs)
        if messages[0]["content"].startswith("You check claims"):
            text = json.dumps({"verdicts": json.loads(out.text)["verdicts"][:-1]})
            return Completion(text, json.loads(text), out.usage)
        return out


def test_a_verdict_list_of_the_wrong_length_is_malformed() -> None:
    j = FactualJudge(DroppedVerdict()).score("Q?", "Five days and fever.", "Five days.")
    assert j.f1 is None and j.error is not None and j.error.startswith("malformed verdicts: 1 verdicts for 2")


def test_answer_recall_finds_a_normalized_span_in_a_chunk() -> None:
    chunks = ["Its incubation period is five days, on average.", "Masks reduce transmission."]
    assert answer_recall(chunks, ["five  days"]) == 1.0  # whitespace, case and punctuation normalized
    assert answer_recall(chunks, ["six days", "the masks"]) == 1.0  # any gold answer; articles dropped
    assert answer_recall(chunks, ["five days on average in hospitals"]) == 0.0
    assert answer_recall(chunks, ["fi"]) == 0.0  # whole words only
    assert answer_recall([], ["five days"]) == 0.0


def test_a_judge_runs_only_when_named() -> None:
    assert not judge_named(None, None)  # the default: no judge, covid_qa included
    assert not judge_named("none", None) and not judge_named(" None ", None)
    assert judge_named("qwen2.5-coder-0.5b", None)
    assert judge_named("gpt-4o-mini", "http://127.0.0.1:9/v1") and judge_named(None, "http://127.0.0.1:9/v1")


def test_naming_the_evaluations_own_model_judges_with_the_memorys_llm(tmp_path: Path, config: Config) -> None:
    label = f"{config.llm.provider}:{config.llm.model}"
    assert JudgeChoice().setup(tmp_path, "covid_qa", True, config, label) == (None, None)  # the default
    own, backend = JudgeChoice(config.llm.model).setup(tmp_path, "covid_qa", True, config, label)
    assert own is not None and own.label == label and backend is None  # no second copy of the model
    other, backend = JudgeChoice("qwen2.5-coder-0.5b").setup(tmp_path, "musique", True, config, label)
    assert other is not None and other.label == "llama_cpp:qwen2.5-coder-0.5b" and backend is not None
    assert JudgeChoice("none").setup(tmp_path, "covid_qa", True, config, label) == (None, None)


def is_judge_prompt(prompt: str) -> bool:
    """Whether a prompt is one of the factual-correctness judge's (claims or verdicts)."""
    return "List the claims of the answer" in prompt or "is it supported by the text?" in prompt


def test_covid_qa_eval_reports_the_judged_score_and_rerunning_costs_nothing(tmp_path: Path, config: Config) -> None:
    path, out = covid_file(tmp_path), tmp_path / "out"
    kwargs: dict[str, Any] = {"config": config, "budget": 2, "out_dir": out, "embedder": HashEmbedder(), "plots": False}
    llm = ScriptedLLM()
    judge = JudgeChoice(llm=llm)  # the evaluation's own backend, named as the judge
    res = run_eval("covid_qa", path, ["dense", "bm25"], llm=llm, reference="dense", judge=judge, **kwargs)
    lines = [json.loads(x) for x in (out / "judgements.jsonl").read_text().splitlines()]
    assert len(lines) == 6 and {line["judge"] for line in lines} == {"fake:scripted-llm"}
    for rec in res.records:  # the record's score is its judgement's claim F1
        line = next(x for x in lines if (x["question_id"], x["strategy"]) == (rec["question_id"], rec["strategy"]))
        assert rec["judged"] == line["f1"] and line["answer"] == rec["answer"]
        assert line["f1"] == claim_scores([True] * line["tp"] + [False] * line["fp"], [False] * line["fn"]).f1
    for rec in res.records:  # Recall@k of the answer span in the first k chunks of the ranking
        assert rec["recall_from"] == "answer span in chunk" and rec["recall@2"] <= rec["recall@5"]
    assert any(r["recall@5"] == 1.0 for r in res.records)
    agg = res.summary.aggregates["dense"]["judged"]
    assert agg["n"] == 3 and agg["mean"] == pytest.approx(sum(r["judged"] for r in res.records[:3]) / 3)
    assert [c["metric"] for c in res.summary.comparisons] == ["f1", "judged"]
    report = markdown_report(res)
    assert "Judged % (95% CI)" in report and "Paired bootstrap vs dense (Judged)" in report
    again = ScriptedLLM()
    rerun = run_eval(
        "covid_qa", path, ["dense", "bm25"], llm=again, reference="dense", judge=JudgeChoice(llm=again), **kwargs
    )
    assert again.calls == 0  # answers and judgements are on file
    assert [r["judged"] for r in rerun.records] == [r["judged"] for r in res.records]


def test_an_unjudged_evaluation_is_judged_on_the_next_run(tmp_path: Path, config: Config) -> None:
    path, out = covid_file(tmp_path), tmp_path / "out"
    kwargs: dict[str, Any] = {"config": config, "budget": 2, "out_dir": out, "embedder": HashEmbedder(), "plots": False}
    first = run_eval("covid_qa", path, ["dense"], llm=ScriptedLLM(), judge=JudgeChoice("none"), **kwargs)
    assert all("judged" not in r for r in first.records) and not (out / "judgements.jsonl").exists()
    judge = ScriptedLLM()
    second = run_eval("covid_qa", path, ["dense"], llm=ScriptedLLM(), judge=JudgeChoice(llm=judge), **kwargs)
    assert judge.calls > 0 and all(isinstance(r["judged"], float) for r in second.records)
    assert not any("Question:" in p and "Options" in p for p in judge.prompts)  # the judge only judged


def test_a_judge_for_multiple_choice_is_refused(tmp_path: Path, config: Config) -> None:
    from test_eval_runner import quality_file

    with pytest.raises(ConfigError, match="no free-form answers to judge"):
        run_eval(
            "quality",
            quality_file(tmp_path),
            ["dense"],
            config=config,
            out_dir=tmp_path / "out",
            embedder=HashEmbedder(),
            llm=ScriptedLLM(),
            judge=JudgeChoice("qwen2.5-coder-0.5b"),
        )


def test_gemrag_eval_covid_qa_judges_only_with_judge_model(
    tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`gemrag eval covid_qa FILE` with no options: unweaver (its default: unweighted PAV), dense, raptor; answer
    recall per k and token F1, no judge call and a report that says why; with --judge-model the named judge judges
    every answer."""
    import typer
    from typer.testing import CliRunner

    from gemrag.cli.eval import eval_command
    from gemrag.eval import runner as runner_module
    from gemrag.eval.judging import judged as judged_module

    evaluation, judges = ScriptedLLM(), []

    def judge_backend(settings: Any, cache_dir: Any = None) -> ScriptedLLM:
        judges.append(ScriptedLLM())
        judges[-1].model_id = f"fake:{settings.model}"
        return judges[-1]

    monkeypatch.setattr(runner_module, "build_embedder", lambda settings: HashEmbedder())
    monkeypatch.setattr(runner_module, "build_llm", lambda settings, cache_dir=None: evaluation)
    monkeypatch.setattr(judged_module, "build_llm", judge_backend)
    app = typer.Typer()
    app.command("eval")(eval_command)
    app.command("other")(lambda: None)  # two commands: "eval" stays a subcommand
    data, out = covid_file(tmp_path), tmp_path / "out"
    result = CliRunner().invoke(app, ["eval", "covid_qa", str(data), "--out", str(out), "--no-plots"])
    assert result.exit_code == 0, result.output
    records = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    assert sorted({r["strategy"] for r in records}) == ["dense", "raptor", "unweaver"]
    assert all(r["recall@2"] is not None and r["f1"] is not None for r in records)
    # Short (span) answers are uncited by default ([answer] cite unset): no markers, no citation fields.
    assert not any(r.get("cited") or "citation_recall" in r for r in records)
    assert "cite" not in json.loads((out / "run.json").read_text())
    assert evaluation.calls > 0 and sum(is_judge_prompt(p) for p in evaluation.prompts) == 0  # no judge call
    assert not judges and not (out / "judgements.jsonl").exists()
    assert "Judged %" not in result.output and "Factual correctness: not judged" in result.output
    assert "kappa 0.025" in result.output and "benchmarks/factual_agreement.py" in result.output
    assert "judge" not in json.loads((out / "results.json").read_text())["models"]

    answered = evaluation.calls  # the same directory, now judged: answers on file, only judge calls
    named = ["--judge-model", "qwen2.5-coder-0.5b"]
    result = CliRunner().invoke(app, ["eval", "covid_qa", str(data), "--out", str(out), "--no-plots", *named])
    assert result.exit_code == 0, result.output
    assert evaluation.calls == answered and len(judges) == 1  # the named judge, built once
    judge_calls = sum(is_judge_prompt(p) for p in judges[0].prompts)
    assert judge_calls >= 9 and judge_calls == judges[0].calls  # every one of the 9 answers judged
    judged = [json.loads(x) for x in (out / "judgements.jsonl").read_text().splitlines()]
    assert len(judged) == 9 and {j["judge"] for j in judged} == {"llama_cpp:qwen2.5-coder-0.5b"}
    assert "Judged % (95% CI)" in result.output and "not judged" not in result.output
