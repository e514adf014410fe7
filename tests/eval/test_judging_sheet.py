"""Blind judging sheets (gemrag.eval.judging.sheet): export the acceptance test's replies, judge them outside
gemrag, report with those verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_eval_acceptance import SCENE, DogLLM, cli_app, write_dog
from typer.testing import CliRunner

from fakes import HashEmbedder
from gemrag.config import Config
from gemrag.errors import InputError
from gemrag.eval.acceptance.runner import NOT_JUDGED, AcceptanceSettings, run_acceptance
from gemrag.eval.judging.sheet import KEY_FILE, apply_verdicts, read_verdicts


@pytest.fixture
def dog(tmp_path: Path) -> Path:
    return write_dog(tmp_path)


FIELDS = {"item", "movie", "content", "dialogue1", "candidate", "correct", "verdict"}


class NoCalls(DogLLM):
    def complete(self, messages: Any, **kw: Any) -> Any:
        raise AssertionError("a recorded run must not call the model")


def _run(dog: Path, config: Config, out: Path, llm: DogLLM, **kw: Any) -> dict[str, Any]:
    return run_acceptance(
        dog, ["dense", "full"], config=config, out_dir=out, embedder=HashEmbedder(), llm=llm,
        settings=AcceptanceSettings(budget=2, runs=2), **kw,
    )  # fmt: skip


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_sheet_is_blind_and_verdicts_replace_the_judge(tmp_path: Path, dog: Path, config: Config) -> None:
    out, sheet = tmp_path / "out", tmp_path / "sheets" / "sheet.jsonl"
    first = _run(dog, config, out, DogLLM(), sheet=sheet)
    llm_md = (out / "results.md").read_text()
    items = _lines(sheet)
    assert len(items) == len(first["records"]) == 2 * 2 * 5  # 2 strategies x 2 runs x 5 generated turns
    assert all(set(it) == FIELDS and it["verdict"] is None for it in items)
    text = sheet.read_text()
    assert "dense" not in text and "full" not in text and '"run"' not in text  # blind to strategy and run
    assert sorted(it["candidate"] for it in items) == sorted(r["generated"] for r in first["records"])
    ada = next(it for it in items if it["correct"] == "Ada Stone plays Mira Holt.")
    assert ada["movie"] == "Harbour Lights" and ada["dialogue1"] == "who is in it?" and SCENE in ada["content"]
    # the key maps every id to its record; a rewritten sheet keeps the ids
    key = json.loads((out / KEY_FILE).read_text())
    assert set(key["items"]) == {it["item"] for it in items}
    _run(dog, config, out, NoCalls(), sheet=sheet)
    assert {it["item"] for it in _lines(sheet)} == set(key["items"])
    # an outside judge: every dense reply chokes, full ones are correct, one full reply left unjudged
    filled, skipped = [], None
    for it in items:
        strategy = key["items"][it["item"]][2]
        verdict: str | None = "choke" if strategy == "dense" else "Correct"
        if strategy == "full" and skipped is None:
            skipped, verdict = it["item"], None
        filled.append({**it, "verdict": verdict})
    verdicts = tmp_path / "hand.jsonl"
    verdicts.write_text("".join(json.dumps(f) + "\n" for f in filled))
    res = _run(dog, config, out, NoCalls(), verdicts=verdicts)
    assert res["models"]["judge"] == "external verdicts (hand.jsonl)"
    assert res["means"]["dense"]["choke"] == 5 and res["means"]["dense"]["correct"] == 0
    assert res["means"]["full"]["correct"] == 4.5 and res["means"]["full"]["unjudged"] == 0.5
    assert [c["choke"] for c in res["counts"]["dense"]] == [5, 5]
    assert "external verdicts (hand.jsonl)" in (out / "results-hand.md").read_text()
    assert (out / "results.md").read_text() == llm_md  # the LLM judge's report is kept


def test_bad_verdict_files_are_named(tmp_path: Path) -> None:
    path = tmp_path / "v.jsonl"
    path.write_text('{"item": "a", "verdict": "choke"}\n{"item": "b", "verdict": "maybe"}\n')
    with pytest.raises(InputError, match=r"v.jsonl:2: verdict 'maybe'"):
        read_verdicts(path)
    path.write_text('{"item": "a", "verdict": "choke"}\n\n{"item": "a", "verdict": null}\n')
    with pytest.raises(InputError, match=r":3: item a appears twice"):
        read_verdicts(path)
    path.write_text('{"verdict": "choke"}\n')
    with pytest.raises(InputError, match=r':1: expected an object with a string "item"'):
        read_verdicts(path)
    path.write_text("{not json\n")
    with pytest.raises(InputError, match=":1: not JSON"):
        read_verdicts(path)
    with pytest.raises(InputError, match="cannot read"):
        read_verdicts(tmp_path / "missing.jsonl")
    path.write_text('{"item": "a", "verdict": "Inaccuracy"}\n{"item": "b", "verdict": null}\n')
    assert read_verdicts(path) == {"a": "inaccurate", "b": None}
    with pytest.raises(InputError, match="write the sheet first"):
        apply_verdicts([], {"a": "choke"}, tmp_path)
    (tmp_path / KEY_FILE).write_text(json.dumps({"salt": "s", "items": {"x": ["c", 1, "dense", 0]}}))
    with pytest.raises(InputError, match="lacks"):
        apply_verdicts([], {"a": "choke"}, tmp_path)


def test_cli_sheet_and_verdicts(tmp_path: Path, dog: Path, config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    from gemrag.eval.acceptance import runner as acceptance_module

    monkeypatch.setattr(acceptance_module, "build_embedder", lambda settings: HashEmbedder())
    monkeypatch.setattr(acceptance_module, "build_llm", lambda settings, cache_dir=None: DogLLM())
    out, sheet = tmp_path / "out", tmp_path / "sheet.jsonl"
    args = ["eval", "cmu_dog", str(dog), "--strategies", "dense", "--runs", "1", "--out", str(out), "-q"]
    result = CliRunner().invoke(cli_app(), [*args, "--sheet", str(sheet)])
    assert result.exit_code == 0, result.output
    items = _lines(sheet)
    assert len(items) == 5
    sheet.write_text("".join(json.dumps({**it, "verdict": "inaccurate"}) + "\n" for it in items))
    result = CliRunner().invoke(cli_app(), [*args, "--verdicts", str(sheet)])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "results-sheet.json").read_text())["means"]["dense"]["inaccurate"] == 5
    sheet.write_text('{"item": "zzz", "verdict": "choke"}\n')
    bad = CliRunner().invoke(cli_app(), [*args, "--verdicts", str(sheet)])
    assert bad.exit_code != 0 and "lacks" in bad.output and "Traceback" not in bad.output
    other = CliRunner().invoke(cli_app(), ["eval", "musique", str(dog), "--sheet", str(sheet), "-q"])
    assert other.exit_code == 2 and "only apply to the cmu_dog" in other.output


def test_judge_model_none_generates_replies_only(tmp_path: Path, dog: Path, config: Config) -> None:
    llm, sheet = DogLLM(), tmp_path / "sheet.jsonl"
    res = _run(dog, config, tmp_path / "out", llm, judge_model="none", sheet=sheet)
    assert not llm.judged and len(llm.replies) > 0  # nothing was judged, every reply generated
    assert res["models"]["judge"] == "none (replies left unjudged)"
    assert all(r["verdict"] is None and r["judge_error"] == NOT_JUDGED for r in res["records"])
    assert res["means"]["dense"]["unjudged"] == 5 and res["means"]["dense"]["choke"] == 0
    assert len(_lines(sheet)) == 2 * 2 * 5


def test_a_sheet_of_other_labels_reads_those_labels_only(tmp_path: Path) -> None:
    path = tmp_path / "v.jsonl"
    path.write_text('{"item": "a", "verdict": "Correct"}\n{"item": "b", "verdict": null}\n')
    assert read_verdicts(path, ("correct", "incorrect")) == {"a": "correct", "b": None}
    path.write_text('{"item": "a", "verdict": "choke"}\n')
    with pytest.raises(InputError, match=r"v.jsonl:1: verdict 'choke' is not one of correct, incorrect"):
        read_verdicts(path, ("correct", "incorrect"))
