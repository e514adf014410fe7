"""A-Mem's LoCoMo scoring (gemrag.eval.amem_scoring) against hand-worked answers, each where LoCoMo's official scorer
gives another number, and benchmarks/amem_compare.py on a tiny LoCoMo file and hand-written records."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gemrag.eval.amem_scoring import amem_f1, amem_reference
from gemrag.eval.loaders.locomo import NOT_MENTIONED
from gemrag.eval.loading import load_dataset
from gemrag.eval.locomo_scoring import locomo_f1
from paths import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "amem_compare.py"


@pytest.mark.parametrize(
    ("prediction", "reference", "category", "amem", "locomo"),
    [
        # set semantics, and only . , ! ? split: {paris} vs {paris}; LoCoMo counts "pari" twice (P 1/2, R 1)
        ("Paris. Paris!", "paris", "4", 1.0, 2 / 3),
        # quotes stay in the tokens ('"becoming', 'nicole"'); LoCoMo strips all punctuation
        ('"Becoming Nicole"', "Becoming Nicole", "4", 0.0, 1.0),
        ("Melanie's", "Melanie", "4", 0.0, 1.0),  # "melanie's" is its own token; LoCoMo stems "melani" both
        ("painting", "paints", "4", 0.0, 1.0),  # no stemming; LoCoMo: "paint" and "paint"
        ("the beach", "beach", "4", 2 / 3, 1.0),  # "the" kept (P 1/2, R 1); LoCoMo drops articles
        # no category rules: one set against {hiking, painting} (P 1, R 1/2); LoCoMo averages the comma parts 0, 1
        ("painting", "hiking, painting", "1", 2 / 3, 0.5),
        # ";" kept ("sweden;") and the gold not cut; LoCoMo scores category 3 against "Sweden"
        ("Sweden", "Sweden; likely no", "3", 0.0, 1.0),
        # category 5: A-Mem's reference is the trap answer, LoCoMo's rule wants the decline: opposite directions
        (NOT_MENTIONED, "self-care is important", "5", 0.0, 1.0),
        ("self-care is important", "self-care is important", "5", 1.0, 0.0),
    ],
)
def test_amem_f1_differs_from_locomo(
    prediction: str, reference: str, category: str, amem: float, locomo: float
) -> None:
    assert amem_f1(prediction, reference) == pytest.approx(amem)
    assert locomo_f1(prediction, reference, category) == pytest.approx(locomo)


def test_amem_f1_empty_sides_and_case() -> None:
    assert amem_f1("", "Paris") == 0.0
    assert amem_f1("Paris", "") == 0.0
    assert amem_f1(" ?! ", "Paris") == 0.0  # punctuation only: no token
    assert amem_f1("PARIS, France", "paris") == pytest.approx(2 / 3)  # lower-cased, "," split off "paris"


def locomo_tiny(tmp_path: Path) -> Path:
    """A one-conversation LoCoMo file in the released schema (category 5 with a trap answer, and one that also has
    an ``answer``, as two questions of conv-26 do)."""
    turns = [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "I moved to Paris last week."},
        {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice! I went hiking and painted all weekend."},
        {"speaker": "Ann", "dia_id": "D1:3", "text": "I had croissants for breakfast."},
    ]
    qa = [
        {"question": "What are Bob's hobbies?", "answer": "hiking, painting", "evidence": ["D1:2"], "category": 1},
        {"question": "When did Ann move?", "answer": "7 May 2023", "evidence": ["D1:1"], "category": 2},
        {"question": "Which country?", "answer": "France; she mentions Paris", "evidence": ["D1:1"], "category": 3},
        {"question": "Where did Ann move?", "answer": "Paris", "evidence": ["D1:1"], "category": 4},
        {"question": "What did Ann eat?", "answer": "croissants", "evidence": ["D1:3"], "category": 4},
        {
            "question": "What did Bob realize after the race?",
            "adversarial_answer": "self-care is important",
            "evidence": ["D1:2"],
            "category": 5,
        },
        {
            "question": "Did Bob adopt a cat?",
            "answer": "No",
            "adversarial_answer": "Yes",
            "evidence": [],
            "category": 5,
        },
    ]
    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:00 pm on 8 May, 2023",
            "session_1": turns,
        },
        "qa": qa,
    }
    path = tmp_path / "locomo_tiny.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


def test_reference_is_the_trap_answer_for_category_5(tmp_path: Path) -> None:
    qs = {q.id: q for q in load_dataset("locomo", locomo_tiny(tmp_path)).questions}
    assert amem_reference(qs["conv-x_q6"]) == "self-care is important"
    assert qs["conv-x_q6"].answer == NOT_MENTIONED  # our gold, not A-Mem's reference
    assert amem_reference(qs["conv-x_q7"]) == "Yes"  # the trap, though the question has answer "No"
    assert amem_reference(qs["conv-x_q1"]) == "hiking, painting"
    assert amem_reference(qs["conv-x_q3"]) == "France; she mentions Paris"  # whole, not cut at ";"


def _record(qid: int, strategy: str, answer: str | None, f1: float | None, evidence: float | None) -> dict[str, Any]:
    rec = {"question_id": f"conv-x_q{qid}", "strategy": strategy, "answer": answer, "f1": f1, "em": 0.0}
    return rec | {"evidence_recall": evidence, "error": None, "run": 0}


def _run_dir(path: Path, records: list[dict[str, Any]]) -> Path:
    """A ``gemrag eval`` output directory at ``path`` holding ``records`` (its ``records.jsonl`` alone)."""
    path.mkdir()
    (path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def compare() -> ModuleType:
    return load_script(SCRIPT, "amem_compare")


def test_compare_prints_published_rows_and_ours(
    tmp_path: Path, compare: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    data = locomo_tiny(tmp_path)
    errored = _record(5, "dense", None, None, None) | {"error": "model crashed"}
    records = [
        _record(1, "dense", "painting", 0.5, 1.0),  # A-Mem 2/3
        _record(2, "dense", "May 2023", 0.8, 0.5),  # A-Mem 0.8
        _record(3, "dense", "France", 1.0, 0.0),  # A-Mem 0: "france;" is a token of the reference
        _record(4, "dense", "Paris. Paris!", 2 / 3, 1.0),  # A-Mem 1
        errored,  # F1 0 under both scorers; no evidence recall
        _record(6, "dense", NOT_MENTIONED, 1.0, 0.0),  # declined: LoCoMo 1, A-Mem 0
        _record(7, "dense", "Yes", 0.0, None),  # the trap: LoCoMo 0, A-Mem 1
        _record(4, "bm25", "Paris", 1.0, 1.0),
    ]
    run = _run_dir(tmp_path / "run", records)
    out = tmp_path / "compare.md"
    assert compare.main([str(run), "--data", str(data), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert out.read_text(encoding="utf-8") == printed
    head = "| system | multi-hop (cat 1) | temporal (cat 2) | open domain (cat 3) | single hop (cat 4) |"
    assert head + " adversarial (cat 5) | no answer (F1 0) |" in printed
    assert "| A-Mem (published, Qwen2.5-1.5B) | 18.23 | 24.32 | 16.48 | 23.63 | 46.00 | — |" in printed
    assert "| LoCoMo full context (published, Qwen2.5-1.5B) | 9.05 | 4.25 | 9.91 | 11.15 | 40.38 | — |" in printed
    assert "| MemGPT (published, Qwen2.5-1.5B) | 10.44 | 4.21 | 13.42 | 9.56 | 31.51 | — |" in printed
    amem = (
        "| dense | 66.7 (66.7–66.7), n 1 | 80.0 (80.0–80.0), n 1 | 0.0 (0.0–0.0), n 1 | 50.0 (0.0–100.0), n 2 "
        "| 50.0 (0.0–100.0), n 2 | 1 |"
    )
    assert amem in printed
    assert "| bm25 | — | — | — | 100.0 (100.0–100.0), n 1 | — | 0 |" in printed
    locomo = (
        "| dense: F1 | 50.0 (50.0–50.0), n 1 | 80.0 (80.0–80.0), n 1 | 100.0 (100.0–100.0), n 1 "
        "| 33.3 (0.0–66.7), n 2 | 50.0 (0.0–100.0), n 2 |"
    )
    assert locomo in printed
    evidence = (
        "| dense: evidence recall | 100.0 (100.0–100.0), n 1 | 50.0 (50.0–50.0), n 1 | 0.0 (0.0–0.0), n 1 "
        "| 100.0 (100.0–100.0), n 1 | 0.0 (0.0–0.0), n 1 |"
    )
    assert evidence in printed
    assert printed.index("| A-Mem (published") < printed.index("| dense |") < printed.index("| bm25 |")
    other = _run_dir(tmp_path / "other", records[-1:])
    rows = compare.collect([run, other], data)  # several directories: rows named by directory
    assert list(rows) == [f"{run}: dense", f"{run}: bm25", f"{other}: bm25"]
    assert rows[f"{other}: bm25"].amem == {"4": [1.0]} and rows[f"{run}: dense"].unanswered == 1


def test_compare_reads_a_retrieval_only_run_as_evidence_recall_alone(
    tmp_path: Path, compare: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """``gemrag eval --no-answer`` records (no answer, no error) are not F1 0 and not "no answer": no F1 line."""
    data = locomo_tiny(tmp_path)
    records = [_record(1, "fused", None, None, 1.0), _record(4, "fused", None, None, 0.5)]
    run = _run_dir(tmp_path / "run", [*records, _record(4, "dense", "Paris", 1.0, 0.0)])
    assert compare.main([str(run), "--data", str(data)]) == 0
    printed = capsys.readouterr().out
    assert "| fused |" not in printed and "| fused: F1 |" not in printed
    assert "| fused: evidence recall | 100.0 (100.0–100.0), n 1 | — | — | 50.0 (50.0–50.0), n 1 | — |" in printed
    assert "| dense | — | — | — | 100.0 (100.0–100.0), n 1 | — | 0 |" in printed
    rows = compare.collect([run], data)
    assert rows["fused"].unanswered == 0 and rows["fused"].amem == {} and rows["fused"].locomo == {}


def test_compare_rejects_records_of_another_dataset(
    tmp_path: Path, compare: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    stray = _record(1, "dense", "x", 0.0, None) | {"question_id": "conv-26_q1"}
    run = _run_dir(tmp_path / "run", [stray])
    with pytest.raises(SystemExit) as exit_info:
        compare.main([str(run), "--data", str(locomo_tiny(tmp_path))])
    assert exit_info.value.code == 2
    assert "conv-26_q1" in capsys.readouterr().err


def test_compare_scores_pooled_published_records_and_writes_a_record(
    tmp_path: Path, compare: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """Published runs of disjoint questions are pooled (n is their sum), each answer scored against its gold answer
    from the records alone, and the figures kept as a record the documentation's marks read."""
    from test_published_costs import _answer, _publish

    def answered(q: str, answer: str, gold: str) -> dict[str, Any]:
        return _answer(q, seconds=1.0) | {"answer": answer, "gold_answers": [gold]}

    _publish(tmp_path, "part1", [answered("a1", "7 May 2023", "7 May 2023"), answered("a2", "May", "8 May 2023")])
    _publish(tmp_path, "part2", [answered("b1", "Paris. Paris!", "paris"), answered("b2", "no", "20 July")])
    expected = [1.0, amem_f1("May", "8 May 2023"), 1.0, 0.0]  # "May" against {8, may, 2023}: P 1, R 1/3
    assert expected[1] == pytest.approx(0.5)
    args = ["--published", "part1+part2", "--published", "part2", "--results", str(tmp_path), "--write", "amem-t"]
    assert compare.main(args) == 0
    printed = capsys.readouterr().out
    assert "| part1+part2: fused | — | 62.5 (" in printed and "n 4 |" in printed
    record = json.loads((tmp_path / "amem-t.json").read_text(encoding="utf-8"))
    assert record["kind"] == "amem-compare" and "--published part1+part2" in record["command"]
    pooled, alone = record["rows"]
    assert (pooled["records"], pooled["strategy"], pooled["category"], pooled["n"]) == ("part1+part2", "fused", "2", 4)
    assert pooled["amem_f1"] == pytest.approx(100 * sum(expected) / 4)
    assert pooled["amem_f1_low"] <= pooled["amem_f1"] <= pooled["amem_f1_high"]
    assert pooled["locomo_f1"] == pytest.approx(50.0)  # the records' own f1 (0.5 each)
    assert alone["n"] == 2 and alone["amem_f1"] == pytest.approx(50.0)
    # a question in two parts, and an adversarial question without the dataset's trap answer, are refused
    _publish(tmp_path, "part3", [answered("b1", "Paris", "paris")])
    for spec, message in (("part2+part3", "'b1' is in part2 and part3"), ("part2+part2", "each once")):
        with pytest.raises(SystemExit) as refused:
            compare.main(["--published", spec, "--results", str(tmp_path)])
        assert refused.value.code == 2 and message in capsys.readouterr().err
    _publish(tmp_path, "trap", [answered("c1", "no", "x") | {"category": "5"}])
    with pytest.raises(SystemExit) as trap:
        compare.main(["--published", "trap", "--results", str(tmp_path)])
    assert trap.value.code == 2 and "needs --data" in capsys.readouterr().err
