"""The token table of ``gemrag eval`` (UnWeaver Table 1's columns): exact numbers from hand-made builds and
records (own, cached and shared builds), its markdown and JSON, and the attribution of a real (fake-model) run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_eval_runner import quality_file

from fakes import HashEmbedder, ScriptedLLM
from gemrag.config import Config
from gemrag.eval.aggregates import summarize
from gemrag.eval.report import write_results
from gemrag.eval.runner import EvalResults, run_eval
from gemrag.eval.tokens import token_markdown, token_table

UW, AV, LONG = "unweaver", "unweaver[rule=av]", "unweaver[representative_max_chars=100]"
RUNS = ["dense", UW, AV, LONG]


def cost(p: int, c: int, e: int, calls: int = 0, cached: int = 0) -> dict[str, int]:
    return {"prompt_tokens": p, "completion_tokens": c, "embedding_tokens": e, "llm_calls": calls, "llm_cached": cached}


def per(p: float, c: float, e: float) -> dict[str, float]:
    return {"prompt_tokens": p, "completion_tokens": c, "embedding_tokens": e}


def build(group: str, strategy: str, spent: dict[str, int], **extra: Any) -> dict[str, Any]:
    return {"group": group, "memory": f"toy-{group}", "strategy": strategy, "seconds": 1.0} | spent | extra


def hand_made() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two memories; unweaver's build of g2 came entirely from the LLM cache (a resumed run); the two variants
    share unweaver's builds, the second one's rebuild made 2 new LLM calls (a build-time setting)."""
    g1, g2 = cost(1000, 200, 300, 10), cost(500, 100, 150, 5, 5)
    index = [
        build("g1", "dense", cost(0, 0, 100)),
        build("g2", "dense", cost(0, 0, 50)),
        build("g1", UW, g1),
        build("g2", UW, g2),
        build("g1", AV, g1, shared_with=UW, rebuild=cost(0, 0, 300)),
        build("g2", AV, g2, shared_with=UW, rebuild=cost(0, 0, 150)),
        build("g1", LONG, g1, shared_with=UW, rebuild=cost(40, 8, 290, 2, 0)),
    ]
    per_question = {"dense": (90, 10, 6), UW: (60, 12, 6), AV: (61, 12, 6), LONG: (62, 12, 6)}
    records = []
    for name, (p, c, e) in per_question.items():
        for i, qid in enumerate(("q1", "q2", "q3")):
            tokens = {"prompt_tokens": p + i, "completion_tokens": c, "embedding_tokens": e}
            records.append({"question_id": qid, "strategy": name, "tokens": tokens, "llm_calls": 1, "llm_cached": i})
    return index, records


def test_table_from_hand_made_builds_and_records() -> None:
    index, records = hand_made()
    table = token_table(RUNS, records, index)
    rows = table["runs"]
    assert rows["dense"]["index"] == cost(0, 0, 150)
    assert rows["dense"]["query"] == cost(273, 30, 18, 3, 3)  # 90+91+92
    # the cached build of g2 counts at its original cost
    assert rows[UW]["index"] == cost(1500, 300, 450, 15, 5)
    assert rows[UW]["query"] == cost(183, 36, 18, 3, 3)
    assert rows[UW]["index_per_question"] == per(500.0, 100.0, 150.0)  # over its 3 questions
    assert rows[UW]["query_per_question"] == per(61.0, 12.0, 6.0)
    assert (rows[UW]["shared_with"], rows[UW]["shared_builds"], rows[UW]["builds"]) == ([], 0, 2)
    # a shared build shows the build it shares (not its rebuild's 0 LLM tokens), and says whose it is
    assert rows[AV]["index"] == rows[UW]["index"] and rows[AV]["shared_with"] == [UW]
    assert (rows[AV]["shared_builds"], rows[AV]["rebuild_new_llm_calls"]) == (2, 0)
    assert rows[LONG]["index"] == cost(1000, 200, 300, 10, 0) and rows[LONG]["rebuild_new_llm_calls"] == 2
    assert rows[LONG]["index_per_question"]["prompt_tokens"] == 1000 / 3
    # every build once: dense's and unweaver's, not the variants' copies
    distinct = table["distinct"]
    assert (distinct["builds"], distinct["questions"]) == (4, 12)
    assert distinct["index"] == cost(1500, 300, 600, 15, 5)
    assert distinct["query"]["prompt_tokens"] == 273 + 183 + 186 + 189


def test_table_markdown_rows() -> None:
    index, records = hand_made()
    lines = token_markdown(token_table(RUNS, records, index))
    text = "\n".join(lines)
    assert "| dense | 3 | — | 273 | — | 30 | 150 | 18 |" in lines  # no LLM call to index: the paper's "-"
    assert "| unweaver | 3 | 1,500 | 183 | 300 | 36 | 450 | 18 |" in lines
    assert "| unweaver[rule=av] (†unweaver) | 3 | 1,500 | 186 | 300 | 36 | 450 | 18 |" in lines
    assert f"| {LONG} (†unweaver ‡) | 3 | 1,000 | 189 | 200 | 36 | 300 | 18 |" in lines
    assert "| all runs, each build once | 12 | 1,500 | 831 | 300 | 138 | 600 | 72 |" in lines
    assert "| unweaver | 3 | 500.0 | 61.0 | 100.0 | 12.0 | 150.0 | 6.0 |" in lines  # per question
    assert "‡: rebuilding made new LLM calls" in text
    assert token_markdown(token_table([], [], [])) == []


def test_results_json_and_md_carry_the_table(tmp_path: Path) -> None:
    index, records = hand_made()
    for r in records:
        r |= {"setting": {}, "retrieval_seconds": 0.1, "answer_seconds": 1.0, "summary_hits": 0, "context_hits": 2}
        r |= {"correct": r["question_id"] != "q3", "f1": None, "em": None, "error": None}
    res = EvalResults(
        out_dir=tmp_path,
        dataset={"name": "toy", "kind": "quality", "path": "x", "questions": 3, "groups": 2, "documents": 2},
        config={},
        models={"embedder": "e", "llm": "l"},
        budget=2,
        answer=True,
        runs=RUNS,
        ablation={},
        records=records,
        index=index,
    )
    res.summary = summarize(res, n_resamples=200)
    json_path, md_path = write_results(res)
    tokens = json.loads(json_path.read_text())["summary"]["tokens"]
    assert tokens["runs"][AV]["shared_with"] == [UW] and tokens["distinct"]["index"]["prompt_tokens"] == 1500
    assert "## Tokens (UnWeaver Table 1 layout)" in md_path.read_text()


def test_eval_run_attributes_shared_builds(tmp_path: Path, config: Config) -> None:
    """A real (fake-model) run: the unweaver variants rebuild in unweaver's memory from its stored entities (0
    LLM tokens measured), and are attributed unweaver's build, once in the distinct total."""
    res = run_eval(
        "quality",
        quality_file(tmp_path),
        RUNS,
        config=config,
        budget=2,
        out_dir=tmp_path / "out",
        llm=ScriptedLLM(),
        embedder=HashEmbedder(),
        plots=False,
    )
    entries = {(e["group"], e["strategy"]): e for e in res.index}
    assert entries[("light", AV)]["rebuild"]["prompt_tokens"] == 0 < entries[("light", UW)]["prompt_tokens"]
    rows, distinct = res.summary.tokens["runs"], res.summary.tokens["distinct"]
    assert rows[AV]["index"] == rows[UW]["index"] and rows[UW]["index"]["prompt_tokens"] > 0
    assert rows[AV]["shared_with"] == [UW] and rows[AV]["rebuild_new_llm_calls"] == 0
    assert rows[LONG]["rebuild_new_llm_calls"] > 0  # shortening at 100 characters: a build-time setting
    assert rows["dense"]["index"]["llm_calls"] == 0 and rows["dense"]["index"]["embedding_tokens"] > 0
    for key in ("prompt_tokens", "completion_tokens", "embedding_tokens"):
        assert distinct["index"][key] == rows["dense"]["index"][key] + rows[UW]["index"][key]
        for name in RUNS:
            assert rows[name]["query"][key] == sum(r["tokens"][key] for r in res.records if r["strategy"] == name)
    assert rows[UW]["query"]["embedding_tokens"] > 0 and rows[UW]["questions"] == 4
    assert "| unweaver[rule=av] (†unweaver) | 4 |" in (tmp_path / "out" / "results.md").read_text()
