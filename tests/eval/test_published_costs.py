"""What answering cost, computed from published per-question records: the costs block of a published run (at publish
time and refreshed from the records alone), pooled pairings of runs over disjoint questions, and the documentation's
marks of both."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from statistics import median
from typing import Any

import pytest

from gemrag.errors import InputError
from gemrag.eval.paired import pair_published, write_paired
from gemrag.eval.publish import main as publish_main
from gemrag.eval.publish_docs import differences, render
from gemrag.eval.published import DatasetInfo, Machine, PublishedRun, load_published, refresh_costs, score_records
from gemrag.eval.published_costs import answer_costs
from gemrag.eval.stats import paired_bootstrap_diff


def _answer(q: str, *, seconds: float, cached: int = 0, prompt: int = 400, completion: int = 5, f1: float = 0.5,
            reading: dict[str, Any] | None = None, strategy: str = "fused") -> dict[str, Any]:  # fmt: skip
    record: dict[str, Any] = {
        "question_id": q, "strategy": strategy, "group": "g", "category": "2", "error": None,
        "retrieval_seconds": 0.01, "scores": {"f1": f1, "em": float(f1 == 1.0)}, "answer": "x", "gold_answers": ["x"],
        "tokens": {"prompt_tokens": prompt, "completion_tokens": completion}, "llm_calls": 1 + cached,
        "llm_cached": cached, "answer_seconds": seconds,
    }  # fmt: skip
    if reading is not None:
        record["reading"] = reading
    return record


def test_costs_are_means_per_answer_and_the_median_seconds_of_fresh_answers_only() -> None:
    records = [
        _answer("q1", seconds=10.0, prompt=400, completion=4, reading={"words_before": 200, "words_after": 150}),
        _answer(
            "q2",
            seconds=20.0,
            prompt=500,
            completion=6,
            reading=dict(words_before=300, words_after=100, duplicates=[3]),
        ),
        _answer("q3", seconds=30.0, prompt=600, completion=8),
        _answer("q4", seconds=0.01, cached=1, prompt=700, completion=10),  # a cached call: milliseconds
        _answer("q5", seconds=0.02, cached=2, prompt=800, completion=12),
        {"question_id": "q6", "strategy": "fused", "retrieval_seconds": 0.5, "error": None, "scores": {}},  # no answer
    ]
    costs = answer_costs(records)
    assert costs.answers == 5 and costs.cached_answers == 2
    assert costs.prompt_tokens == 600.0 and costs.completion_tokens == 8.0 and costs.llm_calls == 1.6
    # the median of the three fresh answers (20 s); with the cached ones it would be 10 s
    assert costs.answer_seconds == 20.0 and costs.answer_seconds_n == 3
    assert median(r["answer_seconds"] for r in records[:5]) == 10.0
    assert costs.words_before == 250.0 and costs.words_after == 125.0 and costs.duplicates == 0.5
    assert costs.words_n == 2
    assert costs.retrieval_n == 6 and costs.retrieval_seconds_p50 == 0.01 and costs.retrieval_seconds_p95 > 0.01
    retrieval_only = answer_costs([records[-1]])
    assert retrieval_only.answers == 0 and retrieval_only.prompt_tokens is None
    assert retrieval_only.answer_seconds is None


def _publish(root: Path, name: str, records: list[dict[str, Any]]) -> PublishedRun:
    """Write a published run of ``records`` (one strategy, ``fused``) into ``root``, as ``publish_run`` writes one."""
    text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
    root.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(root / f"{name}.records.jsonl.gz", "wb", mtime=0) as f:
        f.write(text.encode("utf-8"))
    strategies, comparisons = score_records(records, ["fused"])
    run = PublishedRun(
        name=name, command="x", code={"commit": "c", "version": "0"}, date="2026-12-02T00:00:00+00:00", seconds=1.0,
        machine=Machine(cpus=2, memory_gb=1.0, platform="p", python="3"), models={"llm": "m", "embedder": "e"},
        dataset=DatasetInfo(kind="locomo", name="d", file="f", sha256="", questions=len(records), groups=1,
                            documents=1),
        budget=4, answer=True, strategies=strategies, comparisons=comparisons, records_file=f"{name}.records.jsonl.gz",
        records_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )  # fmt: skip
    (root / f"{name}.json").write_text(run.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return run


def _parts(root: Path) -> dict[str, list[dict[str, Any]]]:
    """Two parts of one protocol (questions a1..a3 and b1..b4), each measured plain and dated."""
    parts = {
        "p1-plain": [_answer(f"a{i}", seconds=10.0 + i, f1=f, prompt=400) for i, f in enumerate((0.0, 0.5, 0.2))],
        "p1-dates": [_answer(f"a{i}", seconds=12.0 + i, f1=f, prompt=460) for i, f in enumerate((1.0, 0.5, 0.6))],
        "p2-plain": [_answer(f"b{i}", seconds=20.0 + i, f1=f, prompt=500) for i, f in enumerate((0.1, 0.0, 0.3, 1.0))],
        "p2-dates": [_answer(f"b{i}", seconds=30.0 + i, f1=f, prompt=560) for i, f in enumerate((0.4, 0.0, 0.9, 1.0))],
    }
    for name, records in parts.items():
        _publish(root, name, records)
    return parts


def test_a_pooled_pairing_pairs_every_question_of_its_parts(tmp_path: Path) -> None:
    parts = _parts(tmp_path)
    pooled = pair_published("pooled", "p1-plain+p2-plain", ["p1-dates", "p2-dates"], tmp_path, metrics=["f1"])
    f1 = pooled.metric("f1")
    before = [r["scores"]["f1"] for r in parts["p1-plain"] + parts["p2-plain"]]
    after = [r["scores"]["f1"] for r in parts["p1-dates"] + parts["p2-dates"]]
    assert f1.comparison.n == 3 + 4  # the parts' questions, summed
    assert f1.before == pytest.approx(sum(before) / 7) and f1.after == pytest.approx(sum(after) / 7)
    assert f1.comparison.diff == pytest.approx((sum(after) - sum(before)) / 7)  # the pooled mean difference
    by_id = {r["question_id"]: r["scores"]["f1"] for r in parts["p1-plain"] + parts["p2-plain"]}
    by_id_after = {r["question_id"]: r["scores"]["f1"] for r in parts["p1-dates"] + parts["p2-dates"]}
    ids = sorted(by_id)
    expected = paired_bootstrap_diff([by_id_after[q] for q in ids], [by_id[q] for q in ids], n_resamples=10000, seed=0)
    assert (f1.comparison.low, f1.comparison.high, f1.comparison.p) == pytest.approx(expected[1:])
    assert pooled.before == "p1-plain+p2-plain" and pooled.after == "p1-dates+p2-dates"
    # the costs of both sides, pooled: prompt tokens 3 x 400 + 4 x 500 against 3 x 460 + 4 x 560
    assert pooled.costs["before"].prompt_tokens == round((3 * 400 + 4 * 500) / 7, 3)
    assert pooled.costs["after"].prompt_tokens == round((3 * 460 + 4 * 560) / 7, 3)
    after_seconds = pooled.costs["after"]
    assert after_seconds.answer_seconds == 30.0 and after_seconds.answer_seconds_n == 7  # 12, 13, 14, 30 ... 33 s
    one = pair_published("one", "p1-plain", "p1-dates", tmp_path, metrics=["f1"])
    assert one.metric("f1").comparison.n == 3 and one.costs["before"].prompt_tokens == 400.0


def test_pooling_refuses_a_question_in_two_parts(tmp_path: Path) -> None:
    _parts(tmp_path)
    _publish(tmp_path, "p3-plain", [_answer("b1", seconds=1.0)])  # b1 is also in p2-plain
    with pytest.raises(InputError, match="'b1' is in p2-plain and p3-plain"):
        pair_published("x", "p2-plain+p3-plain", "p2-dates", tmp_path)
    with pytest.raises(InputError, match="each once"):  # one run twice would count its questions twice
        pair_published("x", "p1-plain+p1-plain", "p1-dates+p2-dates", tmp_path)
    with pytest.raises(InputError, match="no published result named 'gone'"):
        pair_published("x", "p1-plain+gone", "p1-dates", tmp_path)


def test_costs_are_refreshed_from_the_records_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = [_answer("q1", seconds=5.0, prompt=300), _answer("q2", seconds=7.0, prompt=500)]
    run = _publish(tmp_path, "old", records)
    assert run.strategies["fused"].costs is not None  # computed when published
    data = json.loads((tmp_path / "old.json").read_text())
    del data["strategies"]["fused"]["costs"]  # a record published before the block existed
    (tmp_path / "old.json").write_text(json.dumps(data, indent=1) + "\n")
    assert load_published("old", tmp_path).strategies["fused"].costs is None
    assert publish_main(["--refresh-costs", "old", "--results-dir", str(tmp_path)]) == 0
    costs = load_published("old", tmp_path).strategies["fused"].costs
    assert costs is not None and costs.prompt_tokens == 400.0 and costs.answer_seconds == 6.0
    assert load_published("old", tmp_path).records_sha256 == run.records_sha256
    # a records file that is not the one published is refused, and the record is left as it was
    with gzip.GzipFile(tmp_path / "old.records.jsonl.gz", "wb", mtime=0) as f:
        f.write(json.dumps(_answer("q1", seconds=1.0)).encode() + b"\n")
    before = (tmp_path / "old.json").read_text()
    with pytest.raises(InputError, match="SHA-256 differs"):
        refresh_costs("old", tmp_path)
    assert publish_main(["--refresh-costs", "old", "--results-dir", str(tmp_path)]) == 2
    assert "error:" in capsys.readouterr().err and (tmp_path / "old.json").read_text() == before


def test_cost_marks_show_the_records_figures_and_a_hand_edit_is_found(tmp_path: Path) -> None:
    _parts(tmp_path)
    write_paired(pair_published("pooled", "p1-plain+p2-plain", "p1-dates+p2-dates", tmp_path), tmp_path)
    text = (
        "<!-- result: p1-plain fused costs.prompt_tokens -->?<!-- /result --> tokens, "
        "<!-- result: p1-plain fused costs.answer_seconds -->?<!-- /result --> s "
        "(n <!-- result: p1-plain fused costs.answer_seconds n -->?<!-- /result -->), "
        "<!-- result: p1-plain fused costs.llm_calls .1f -->?<!-- /result --> calls; pooled "
        "<!-- result-pair: pooled costs.prompt_tokens after -->?<!-- /result --> against "
        "<!-- result-pair: pooled costs.prompt_tokens before -->?<!-- /result --> "
        "(<!-- result-pair: pooled costs.prompt_tokens change -->?<!-- /result -->), "
        "<!-- result-pair: pooled costs.answer_seconds after:.2f -->?<!-- /result --> s, "
        "F1 <!-- result-pair: pooled f1 n -->?<!-- /result --> q"
    )
    done = render(text, tmp_path)
    plain = "<!-- /result -->"
    shown = [part.rsplit("-->", 1)[-1] for part in done.split(plain)[:-1]]
    # pooled prompt tokens (3 x 460 + 4 x 560) / 7 = 517.1 against (3 x 400 + 4 x 500) / 7 = 457.1: +13 %
    assert shown == ["400", "11.0", "3", "1.0", "517", "457", "+13 %", "30.00", "7"]
    assert differences(done, tmp_path) == []
    edited = done.replace("-->517<", "-->520<")
    found = differences(edited, tmp_path, "doc.md")
    assert len(found) == 1 and "pooled costs.prompt_tokens after" in found[0] and "'520'" in found[0]
    for bad, message in (
        ("<!-- result: p1-plain fused costs.tokens -->?<!-- /result -->", "no cost 'costs.tokens'|no cost 'tokens'"),
        ("<!-- result: p1-plain fused costs.words_before -->?<!-- /result -->", "no record gives 'words_before'"),
        ("<!-- result: p1-plain fused costs.prompt_tokens category=2 -->?<!-- /result -->", "not per category"),
        ("<!-- result-pair: pooled costs.prompt_tokens wide -->?<!-- /result -->", "format 'wide'"),
    ):
        with pytest.raises(InputError, match=message):
            render(bad, tmp_path, "doc.md")
