"""``gemrag eval --runs N`` on QA kinds (UnWeaver section 3: 5 runs): the mean and spread over runs, each run's
sampling seed, resuming with more runs, and the refusal for multiple choice."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from test_eval_factual import covid_file

from fakes import HashEmbedder, ScriptedLLM
from gemrag.config import Config
from gemrag.errors import ConfigError
from gemrag.eval.judging.judged import JudgeChoice
from gemrag.eval.repeats import ANSWER_TEMPERATURE, Sampling, repeats_markdown, run_spread
from gemrag.eval.report import markdown_report
from gemrag.eval.runner import run_eval
from gemrag.models.base import Completion, Message


def test_run_spread_is_the_mean_and_sample_std_of_the_per_run_means() -> None:
    f1 = {0: [0.4, 0.6], 1: [0.7, 0.7], 2: [0.3, 0.3]}  # per-run means 0.5, 0.7, 0.3
    records = [{"run": r, "f1": v, "judged": None} for r, values in f1.items() for v in values]
    spread = run_spread(records, 3)
    assert spread["f1"]["per_run"] == pytest.approx([0.5, 0.7, 0.3])
    assert spread["f1"]["mean"] == pytest.approx(0.5)
    assert spread["f1"]["std"] == pytest.approx(statistics.stdev([0.5, 0.7, 0.3])) == pytest.approx(0.2)
    assert (spread["f1"]["min"], spread["f1"]["max"], spread["f1"]["n"]) == (pytest.approx(0.3), 0.7, 2)
    assert "judged" not in spread  # no run has a judged score
    assert "em" not in run_spread([{"run": 0, "em": 1.0}], 2)  # run 1 has none: no spread over 2 runs
    table = repeats_markdown({"dense": spread}, 3)
    assert "| dense | 50.0 ± 20.0 (30.0–70.0) |" in table


def test_sampling_seeds_each_run_and_one_run_stays_greedy() -> None:
    assert Sampling().of(0) == (0.0, None)
    assert Sampling(runs=3, seed=10).of(2) == (ANSWER_TEMPERATURE, 12)
    assert Sampling().fingerprint() == {}
    with pytest.raises(ValueError):
        Sampling(runs=0)


class SeedRecorder(ScriptedLLM):
    """Records the sampling of every free-form answer call."""

    def __init__(self) -> None:
        super().__init__()
        self.sampled: list[tuple[float, int | None]] = []

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        if str(messages[-1]["content"]).endswith("Short answer:"):  # the span-answer prompt, not the judge
            self.sampled.append((kwargs.get("temperature", 0.0), kwargs.get("seed")))
        return super().complete(messages, **kwargs)


def test_runs_sample_every_answer_once_per_seed_and_report_the_spread(tmp_path: Path, config: Config) -> None:
    path, out = covid_file(tmp_path), tmp_path / "out"
    kwargs: dict[str, Any] = {"config": config, "budget": 2, "out_dir": out, "embedder": HashEmbedder(), "plots": False}
    llm = SeedRecorder()
    res = run_eval("covid_qa", path, ["dense"], llm=llm, runs=2, seed=5, judge=JudgeChoice("none"), **kwargs)
    assert sorted((r["question_id"], r["run"], r["seed"]) for r in res.records) == [
        (q, r, 5 + r) for q in ("1", "2", "3") for r in (0, 1)
    ]
    assert sorted(llm.sampled) == [(ANSWER_TEMPERATURE, 5)] * 3 + [(ANSWER_TEMPERATURE, 6)] * 3
    spread = res.summary.repeats["dense"]["f1"]
    per_run = [sum(r["f1"] for r in res.records if r["run"] == k) / 3 for k in (0, 1)]
    assert spread["per_run"] == pytest.approx(per_run) and spread["n"] == 3
    assert res.summary.aggregates["dense"]["f1"]["n"] == 3  # questions, each scored by its mean over the runs
    assert "## Over 2 runs" in markdown_report(res)
    more = SeedRecorder()
    again = run_eval("covid_qa", path, ["dense"], llm=more, runs=3, seed=5, judge=JudgeChoice("none"), **kwargs)
    assert sorted(more.sampled) == [(ANSWER_TEMPERATURE, 7)] * 3  # only run 2 is new
    assert len(again.records) == 9 and len(again.summary.repeats["dense"]["f1"]["per_run"]) == 3
    with pytest.raises(ConfigError, match="another configuration"):  # a greedy run cannot join sampled ones
        run_eval("covid_qa", path, ["dense"], llm=ScriptedLLM(), judge=JudgeChoice("none"), **kwargs)


def test_runs_of_multiple_choice_are_refused(tmp_path: Path, config: Config) -> None:
    from test_eval_runner import quality_file

    with pytest.raises(ConfigError, match="--runs 2"):
        run_eval(
            "quality",
            quality_file(tmp_path),
            ["dense"],
            config=config,
            out_dir=tmp_path / "out",
            embedder=HashEmbedder(),
            llm=ScriptedLLM(),
            runs=2,
        )
