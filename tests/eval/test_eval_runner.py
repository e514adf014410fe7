"""``run_eval`` end to end with the test doubles on tiny datasets written here: records, resume, recall on
passage ids, ablations, parallel workers, errors, and the ``gemrag eval`` command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from fakes import HashEmbedder, ScriptedLLM
from gemrag.cli.eval import eval_command, parse_ablation, parse_documents
from gemrag.config import AnswerSettings, Config, load_config
from gemrag.errors import ConfigError, InputError
from gemrag.eval import runner as runner_module
from gemrag.eval.runner import run_eval
from gemrag.memory_settings import DeprecatedSettingWarning
from gemrag.models.base import Completion, Message
from gemrag.strategies import register
from gemrag.strategies.base import StrategyContext
from gemrag.strategies.gem.settings import gem_config
from gemrag.types import Hit

LIGHTHOUSE = (
    "The lighthouse keeper Amos Reed lived on Gull Island. He lit the great lamp every evening at dusk. "
    "Storms battered the island each winter and the keeper mended the shutters. "
    "Ships passing the island relied on the lamp to avoid the reef. "
    "In spring the puffins returned to nest on the cliffs below the lighthouse. "
    "The harbour master of Port Hollow later gave Amos a silver medal for his courage."
)
GARDEN = (
    "Marta Silva grew tomatoes and peppers in her greenhouse in the valley. "
    "Aphids attacked the pepper plants in June. Marta released ladybirds into the greenhouse to eat the aphids. "
    "By August the tomatoes were ripe and she sold them at the Saturday market in Oakford."
)


@register("firstchunks")
class FirstChunks:
    """Test-only strategy: the memory's chunks in storage order (so recall can be computed by hand)."""

    name = "firstchunks"

    def build(self, ctx: StrategyContext) -> None:
        ctx.state["built"] = True

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        ctx.embedder.embed([question])  # a query-phase embedding, like real strategies
        return [Hit(n.id, "chunk", 1.0, n.text, i) for i, n in enumerate(ctx.store.nodes("chunk")[:budget])]

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        return {}


@register("lastchunks")
class LastChunks(FirstChunks):
    """Test-only strategy whose retrievals are not nested (like a PAV committee): the last ``budget`` chunks."""

    name = "lastchunks"
    nested = False

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        ctx.embedder.embed([question])
        chunks = ctx.store.nodes("chunk")[-budget:]
        return [Hit(n.id, "chunk", 1.0, n.text, i) for i, n in enumerate(chunks)]


def _question(qid: str, text: str, options: list[str], gold: int, difficult: int) -> dict[str, Any]:
    return {
        "question_unique_id": qid,
        "question": text,
        "options": options,
        "gold_label": gold + 1,
        "difficult": difficult,
    }


def quality_file(tmp_path: Path) -> Path:
    """Two stories in the official QuALITY v1.0 line format (with HARD flags): 4 questions."""
    lines = [
        {
            "article_id": "light",
            "set_unique_id": "light_1",
            "title": "The Keeper",
            "article": LIGHTHOUSE,
            "questions": [
                _question(
                    "q1", "Who gave Amos a silver medal?", ["the harbour master of Port Hollow", "a puffin"], 0, 0
                ),
                _question("q2", "What returned in spring to nest?", ["ships", "the puffins on the cliffs"], 1, 1),
            ],
        },
        {
            "article_id": "garden",
            "set_unique_id": "garden_1",
            "title": "The Greenhouse",
            "article": GARDEN,
            "questions": [
                _question("q3", "What did Marta release to eat the aphids?", ["ladybirds greenhouse", "a cat"], 0, 1),
                _question("q4", "Where did she sell the tomatoes?", ["the Saturday market in Oakford", "Paris"], 0, 0),
            ],
        },
    ]
    path = tmp_path / "quality_tiny.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def multihop_file(tmp_path: Path) -> Path:
    """A MuSiQue-style file: one shared corpus of five short paragraphs (one chunk each), two questions."""
    paragraphs = [
        ("Alpha", "Alpha is a town on the river Lune with a stone bridge."),
        ("Beta", "Beta is a village famous for its cheese and its windmill."),
        ("Gamma", "Gamma was founded by monks who built an abbey there."),
        ("Delta", "Delta lies at the mouth of the river and has a harbour."),
        ("Epsilon", "Epsilon hosts a music festival every summer in July."),
    ]
    support = [{"Alpha", "Gamma"}, {"Epsilon"}]
    questions = ["Which town has a stone bridge and an abbey?", "When is the music festival held?"]
    records = [
        {
            "id": f"2hop__{i}",
            "question": questions[i],
            "answer": "July" if i else "Alpha",
            "answer_aliases": [],
            "paragraphs": [
                {"idx": j, "title": t, "paragraph_text": text, "is_supporting": t in support[i]}
                for j, (t, text) in enumerate(paragraphs)
            ],
        }
        for i in range(2)
    ]
    path = tmp_path / "mh.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def read_records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]


def answer_prompts(llm: ScriptedLLM) -> int:
    return sum(1 for p in llm.prompts if "Options:" in p)


def test_records_results_and_shared_memory(tmp_path: Path, config: Config) -> None:
    out = tmp_path / "out"
    llm = ScriptedLLM()
    res = run_eval(
        "quality",
        quality_file(tmp_path),
        ["gem", "firstchunks"],
        config=config,
        budget=2,
        out_dir=out,
        llm=llm,
        embedder=HashEmbedder(),
    )
    records = read_records(out)
    assert len(records) == len(res.records) == 8
    assert {(r["question_id"], r["strategy"]) for r in records} == {
        (q, s) for q in ("q1", "q2", "q3", "q4") for s in ("gem", "firstchunks")
    }
    gem = {r["question_id"]: r for r in records if r["strategy"] == "gem"}
    assert gem["q1"]["choice"] == 0 and gem["q1"]["correct"] is True
    for r in records:
        assert r["correct"] == (r["choice"] == r["gold_index"])
        assert len(r["retrieved"]) == r["context_hits"] == 2  # budget; no gold passages -> no deeper retrieval
        assert r["recall@2"] is None and r["f1"] is None
        assert r["tokens"]["prompt_tokens"] > 0 and r["tokens"]["embedding_tokens"] > 0
        assert r["retrieval_seconds"] >= 0
    assert gem["q2"]["difficult"] is True and gem["q1"]["difficult"] is False
    # one memory per story; both strategies were built in it (same chunks)
    memories = sorted(p.name for p in (out / "memories").iterdir())
    assert memories == ["quality_tiny-garden", "quality_tiny-light"]
    index = [json.loads(line) for line in (out / "index.jsonl").read_text().splitlines()]
    assert {(e["group"], e["strategy"]) for e in index} == {
        (g, s) for g in ("garden", "light") for s in ("gem", "firstchunks")
    }
    gem_index = [e for e in index if e["strategy"] == "gem"]
    assert all(e["prompt_tokens"] > 0 and e["summary_nodes"] == 2 for e in gem_index)
    # the cost plan made before each build (gemrag.memory.index_plan): its calls are the build's backend calls
    assert all(e["estimate"]["calls"] == e["llm_calls"] - e["llm_cached"] > 0 for e in gem_index), gem_index
    assert all(e["estimate"]["minutes"] is None for e in index if e["strategy"] == "firstchunks")  # no plan method
    assert all(e["prompt_tokens"] == 0 for e in index if e["strategy"] == "firstchunks")
    # gem's chunk texts in firstchunks' retrieval: the same chunks serve both strategies
    fc = {r["question_id"]: r for r in records if r["strategy"] == "firstchunks"}
    assert {h["id"] for h in fc["q1"]["retrieved"]} <= {h["id"] for r in gem.values() for h in r["retrieved"]} | {
        h["id"] for h in fc["q2"]["retrieved"]
    }
    payload = json.loads((out / "results.json").read_text(), parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert payload["dataset"]["questions"] == 4 and len(payload["records"]) == 8
    assert set(payload["summary"]["aggregates"]) == {"gem", "firstchunks"}
    md = (out / "results.md").read_text()
    assert "| gem |" in md and "| firstchunks |" in md and "Acc (95% CI)" in md and "HARD Acc" in md
    assert "R@5" not in md and "F1" not in md  # no data for them in QuALITY
    assert (out / "accuracy.png").stat().st_size > 1000 and (out / "hard_accuracy.png").exists()


class InterruptingLLM(ScriptedLLM):
    """Raises KeyboardInterrupt at the answer prompt after ``answers`` answers."""

    def __init__(self, answers: int) -> None:
        super().__init__()
        self.answers_left = answers

    def complete(self, messages: list[Message], **kwargs: Any) -> Completion:  # type: ignore[override]
        if "Options:" in messages[-1]["content"]:
            if self.answers_left == 0:
                raise KeyboardInterrupt
            self.answers_left -= 1
        return super().complete(messages, **kwargs)


def test_resume_after_interrupt_and_rerun_costs_nothing(tmp_path: Path, config: Config) -> None:
    path, out = quality_file(tmp_path), tmp_path / "out"
    kwargs: dict[str, Any] = {"config": config, "budget": 2, "out_dir": out, "plots": False}
    first = InterruptingLLM(answers=3)
    with pytest.raises(KeyboardInterrupt):
        run_eval("quality", path, ["gem", "firstchunks"], llm=first, embedder=HashEmbedder(), **kwargs)
    assert len(read_records(out)) == 3
    second = ScriptedLLM()
    res = run_eval("quality", path, ["gem", "firstchunks"], llm=second, embedder=HashEmbedder(), **kwargs)
    records = read_records(out)
    assert len(records) == len(res.records) == 8
    assert len({(r["question_id"], r["strategy"]) for r in records}) == 8  # nothing answered twice
    assert answer_prompts(second) == 5  # only the missing answers
    index = [json.loads(line) for line in (out / "index.jsonl").read_text().splitlines()]
    assert len(index) == len({(e["group"], e["strategy"]) for e in index}) == 4  # first measurement kept
    third = ScriptedLLM()
    again = run_eval("quality", path, ["gem", "firstchunks"], llm=third, embedder=HashEmbedder(), **kwargs)
    assert third.calls == 0 and len(read_records(out)) == 8
    assert again.summary.aggregates["gem"]["accuracy"] == res.summary.aggregates["gem"]["accuracy"]


def test_recall_on_passage_ids_and_free_form_scores(tmp_path: Path, config: Config) -> None:
    out = tmp_path / "out"
    common: dict[str, Any] = {"budget": 1, "out_dir": out, "llm": ScriptedLLM(), "embedder": HashEmbedder()}
    cited = config.model_copy(update={"answer": AnswerSettings(cite=True)})  # short answers cite only when asked
    res = run_eval("musique", multihop_file(tmp_path), ["firstchunks"], config=cited, **common)
    by_q = {r["question_id"]: r for r in res.records}
    first, second = by_q["2hop__0"], by_q["2hop__1"]
    # firstchunks returns corpus order; Recall@k retrieves max(B, 5) = 5 nodes, the answer sees B = 1
    assert first["passages"] == ["Alpha", "Beta", "Gamma", "Delta", "Epsilon"]
    assert len(first["retrieved"]) == 5 and first["context_hits"] == 1
    assert first["recall@2"] == 0.5 and first["recall@5"] == 1.0  # gold {Alpha, Gamma}
    assert second["recall@2"] == 0.0 and second["recall@5"] == 1.0  # gold {Epsilon}
    # musique is a span-answer kind: the short form keeps the completion's answer line, without its full stop
    assert first["answer"] == "A free-form answer" and first["em"] == 0.0 and first["f1"] == 0.0
    # cited answers (issue 39): scored without the marker; the cited passage is Alpha, gold for q0 only
    assert first["cited_answer"] == "A free-form answer [1]" and first["cited"] == [1]
    assert (first["citation_recall"], first["citation_precision"]) == (1.0, 1.0)
    assert (second["citation_recall"], second["citation_precision"]) == (0.0, 0.0)
    assert json.loads((out / "run.json").read_text())["answer_form"] == "short"
    assert json.loads((out / "run.json").read_text())["cite"] is True  # cited and uncited answers never mix
    for uncited in (config, config.model_copy(update={"answer": AnswerSettings(cite=False)})):  # the default: uncited
        with pytest.raises(ConfigError, match="differs in cite"):
            run_eval("musique", multihop_file(tmp_path), ["firstchunks"], config=uncited, **common)
    agg = res.summary.aggregates["firstchunks"]
    assert agg["recall@2"]["mean"] == 0.25 and agg["recall@5"]["mean"] == 1.0
    assert agg["accuracy"] is None and agg["f1"]["mean"] == 0.0 and agg["citation_recall"]["mean"] == 0.5
    assert len(list((out / "memories").iterdir())) == 1  # one shared corpus = one memory
    md = (out / "results.md").read_text()
    assert "R@2" in md and "R@5 (95% CI)" in md and "F1 (95% CI)" in md and "Acc (95% CI)" not in md
    assert "Citation R (95% CI)" in md and "Citation P (95% CI)" in md


def test_retrieval_only_loads_no_llm(tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_llm(*args: object, **kwargs: object) -> None:
        raise AssertionError("the LLM must not be built for a retrieval-only run of an LLM-free strategy")

    monkeypatch.setattr(runner_module, "build_llm", no_llm)
    res = run_eval(
        "musique",
        multihop_file(tmp_path),
        ["firstchunks"],
        config=config,
        out_dir=tmp_path / "out",
        answer=False,
        embedder=HashEmbedder(),
    )
    assert all(r["answer"] is None and r["f1"] is None and r["recall@5"] == 1.0 for r in res.records)


def test_ablation_separate_memories_and_names(tmp_path: Path, config: Config) -> None:
    out = tmp_path / "out"
    llm = ScriptedLLM()
    res = run_eval(
        "quality",
        quality_file(tmp_path),
        ["gem"],
        config=config,
        budget=2,
        out_dir=out,
        llm=llm,
        embedder=HashEmbedder(),
        ablation={"questions": ["0", "2"], "search": ["rank"]},
    )
    assert res.runs == ["gem", "gem[questions=0]", "gem[questions=2]", "gem[search=rank]"]
    memories = sorted(p.name for p in (out / "memories").iterdir())
    assert memories == sorted(
        f"quality_tiny-{g}{s}" for g in ("garden", "light") for s in ("", "-questions-0", "-questions-2")
    )  # search only changes retrieval: it reuses the base memory
    names = {r["strategy"] for r in res.records}
    assert names == set(res.runs) and len(res.records) == 16
    assert all(r["setting"] == {"questions": 0} for r in res.records if r["strategy"] == "gem[questions=0]")
    index = {(e["group"], e["strategy"]): e for e in res.index}
    assert index[("light", "gem[questions=0]")]["prompt_tokens"] < index[("light", "gem[questions=2]")]["prompt_tokens"]
    # gem[search=rank] rebuilt gem in the base memory from the cache: its cost is still the full cost
    for key in ("prompt_tokens", "completion_tokens", "embedding_tokens"):
        assert index[("light", "gem[search=rank]")][key] == index[("light", "gem")][key] > 0
    assert index[("light", "gem[search=rank]")]["shared_with"] == "gem"
    sweep = res.summary.sweeps["questions"]
    assert [row["value"] for row in sweep] == [0, 2] and all(row["n"] == 4 for row in sweep)
    assert "## Ablation: gem questions" in (out / "results.md").read_text()
    assert (out / "ablation_questions.png").stat().st_size > 1000


def test_parallel_workers_match_serial(tmp_path: Path, config: Config) -> None:
    path = quality_file(tmp_path)
    serial = run_eval(
        "quality",
        path,
        ["gem"],
        config=config,
        budget=2,
        out_dir=tmp_path / "a",
        llm=ScriptedLLM(),
        embedder=HashEmbedder(),
        plots=False,
    )
    parallel = run_eval(
        "quality",
        path,
        ["gem"],
        config=config,
        budget=2,
        out_dir=tmp_path / "b",
        llm=ScriptedLLM(),
        embedder=HashEmbedder(),
        workers=4,
        plots=False,
    )

    def key(res: runner_module.EvalResults) -> dict[str, tuple[Any, ...]]:
        return {r["question_id"]: (r["choice"], r["tokens"], [h["id"] for h in r["retrieved"]]) for r in res.records}

    assert key(serial) == key(parallel)  # per-question tokens are measured per thread


def test_errors_are_clear(tmp_path: Path, config: Config) -> None:
    path = quality_file(tmp_path)
    common: dict[str, Any] = {"config": config, "out_dir": tmp_path / "out", "embedder": HashEmbedder()}
    with pytest.raises(ConfigError, match="unknown strategy 'nope'"):
        run_eval("quality", path, ["gem", "nope"], **common)
    with pytest.raises(ConfigError, match="unknown gem parameter 'colour'"):
        run_eval("quality", path, [], ablation={"colour": ["red"]}, **common)
    with pytest.raises(ConfigError, match="invalid ablation value questions='many'"):
        run_eval("quality", path, [], ablation={"questions": ["many"]}, **common)
    with pytest.raises(ConfigError, match="nothing to evaluate"):
        run_eval("quality", path, [], **common)
    with pytest.raises(InputError):
        run_eval("quality", tmp_path / "missing.jsonl", ["gem"], **common)
    with pytest.raises(ConfigError, match="unknown dataset kind"):
        run_eval("nosuchkind", path, ["gem"], **common)
    run_eval("quality", path, ["firstchunks"], answer=False, limit=1, **common)
    with pytest.raises(ConfigError, match="another configuration"):
        run_eval("quality", path, ["firstchunks"], answer=True, llm=ScriptedLLM(), limit=1, **common)
    assert parse_ablation(["questions=0, 1,3", "search=rank"]) == {"questions": ["0", "1", "3"], "search": ["rank"]}
    for bad in (["questions"], ["questions="], ["=1,2"], ["questions=1", "questions=2"]):
        with pytest.raises(ConfigError):
            parse_ablation(bad)


def cli_app() -> typer.Typer:
    app = typer.Typer()
    app.command("eval")(eval_command)
    app.command("noop")(lambda: None)  # a second command keeps "eval" as a subcommand
    return app


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--strategies", "gem,nope"], "unknown strategy"),
        (["--ablation", "questions"], "bad --ablation"),
        (["--ablation", "gem.eigen=zero"], "invalid ablation value"),
    ],
)
def test_cli_errors_exit_2(tmp_path: Path, config: Config, args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli_app(), ["eval", "quality", str(quality_file(tmp_path)), *args, "-q"])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_cli_unreadable_dataset_exits_2(tmp_path: Path, config: Config) -> None:
    result = CliRunner().invoke(cli_app(), ["eval", "quality", str(tmp_path / "none.jsonl"), "-q"])
    assert result.exit_code == 2 and "error" in result.output


def test_cli_end_to_end_prints_table(tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_module, "build_embedder", lambda settings: HashEmbedder())
    monkeypatch.setattr(runner_module, "build_llm", lambda settings, cache_dir=None: ScriptedLLM())
    out = tmp_path / "out"
    args = ["eval", "quality", str(quality_file(tmp_path)), "--strategies", "gem,firstchunks", "--limit", "3"]
    result = CliRunner().invoke(cli_app(), [*args, "--budget", "2", "--out", str(out), "--no-plots", "-q"])
    assert result.exit_code == 0, result.output
    assert "| Embedding | LLM | RAG | Acc (95% CI)" in result.output
    assert "| fake:hash-embedder | llama_cpp:qwen2.5-coder-1.5b | gem |" in result.output
    assert len(read_records(out)) == 6 and not list(out.glob("*.png"))


def test_ablation_memories_reuse_the_base_memory_cache(tmp_path: Path, config: Config) -> None:
    """An eigen ablation changes only the summary nodes: its memory answers the utility-question calls from
    the caches of the base memory, so only summary calls reach the model, while costs stay the full ones."""
    out, path = tmp_path / "out", quality_file(tmp_path)
    llm = ScriptedLLM()
    common: dict[str, Any] = dict(config=config, budget=2, out_dir=out, llm=llm, embedder=HashEmbedder())
    run_eval("quality", path, ["gem"], **common)
    base_calls = len(llm.prompts)
    assert sum("questions that this passage answers" in p for p in llm.prompts) > 0
    res = run_eval("quality", path, ["gem"], ablation={"eigen": ["1"]}, **common)
    new = llm.prompts[base_calls:]
    assert not any("questions that this passage answers" in p for p in new)
    index = {(e["group"], e["strategy"]): e for e in res.index}
    assert index[("light", "gem[eigen=1]")]["prompt_tokens"] > 0
    assert index[("light", "gem[eigen=1]")]["summary_nodes"] == 1


def test_a_build_resumed_after_an_interrupt_costs_what_an_uninterrupted_one_does(
    tmp_path: Path, config: Config
) -> None:
    """The calls an interrupted build made (committed, so not repeated on resume) stay in the build's cost."""
    path = quality_file(tmp_path)
    kwargs: dict[str, Any] = {"config": config, "budget": 2, "plots": False, "answer": False}
    whole = run_eval(
        "quality", path, ["gem"], llm=ScriptedLLM(), embedder=HashEmbedder(), out_dir=tmp_path / "a", **kwargs
    )
    out = tmp_path / "b"
    with pytest.raises(KeyboardInterrupt):  # stops inside the first memory's utility questions
        run_eval(
            "quality", path, ["gem"], llm=ScriptedLLM(interrupt_after=2), embedder=HashEmbedder(), out_dir=out, **kwargs
        )
    resumed_llm = ScriptedLLM()
    resumed = run_eval("quality", path, ["gem"], llm=resumed_llm, embedder=HashEmbedder(), out_dir=out, **kwargs)
    keys = ("prompt_tokens", "completion_tokens", "embedding_tokens", "llm_calls")
    expected = {e["group"]: {k: e[k] for k in keys} for e in whole.index}
    assert resumed_llm.calls < sum(e["llm_calls"] for e in whole.index)  # the resumed run repeated nothing...
    assert {e["group"]: {k: e[k] for k in keys} for e in resumed.index} == expected  # ...yet costs the whole build
    attempts = [json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines()]
    assert [a["run"] for a in attempts] == ["gem"] * 3  # the interrupted attempt, its resumption, the 2nd memory


def test_merge_joins_evaluations_split_across_output_directories(tmp_path: Path, config: Config) -> None:
    """Two processes, each with some strategies, then one report over both: nothing is recomputed."""
    path = quality_file(tmp_path)

    def run(strategies: list[str], out: str, llm: ScriptedLLM, budget: int = 2, merge: Any = ()) -> Any:
        return run_eval(
            "quality", path, strategies, llm=llm, embedder=HashEmbedder(), out_dir=tmp_path / out, config=config,
            budget=budget, plots=False, merge=[tmp_path / m for m in merge],
        )  # fmt: skip

    gem, first = run(["gem"], "a", ScriptedLLM()), run(["firstchunks"], "b", ScriptedLLM())
    llm = ScriptedLLM()
    joined = run(["gem", "firstchunks"], "all", llm, merge=["a", "b"])
    assert llm.calls == 0 and not (tmp_path / "all" / "memories").exists()  # nothing built or answered again
    assert len(joined.records) == 8 and len(joined.index) == 4
    for name, alone in (("gem", gem), ("firstchunks", first)):
        assert joined.summary.aggregates[name] == alone.summary.aggregates[name]
    again = run(["gem", "firstchunks"], "all", llm, merge=["a"])  # merging again adds nothing twice
    assert len(read_records(tmp_path / "all")) == 8 and len(again.index) == 4
    run(["gem"], "b3", ScriptedLLM(), budget=3)
    with pytest.raises(ConfigError, match="another configuration.*budget"):
        run(["gem"], "x", llm, merge=["b3"])
    with pytest.raises(ConfigError, match="no run.json"):
        run(["gem"], "x", llm, merge=["."])


def test_documents_from_a_file_keep_ids_with_commas(
    tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MuSiQue paragraph titles contain commas ("Chamisal, New Mexico"): ``--documents @FILE`` takes one per line."""
    monkeypatch.setattr(runner_module, "build_embedder", lambda settings: HashEmbedder())
    titles = [["Chamisal, New Mexico", "Taos County"], ["Oakford, Illinois", "Lune"]]
    records = [
        {
            "id": f"2hop__{i}",
            "question": f"Where is {pair[0]}?",
            "answer": "here",
            "paragraphs": [
                {"idx": j, "title": t, "paragraph_text": f"{t} is a place with a river.", "is_supporting": j == 0}
                for j, t in enumerate(pair)
            ],
        }
        for i, pair in enumerate(titles)
    ]
    data = tmp_path / "mh.json"
    data.write_text(json.dumps(records), encoding="utf-8")
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(titles[1]) + "\n\n", encoding="utf-8")
    assert parse_documents(f"@{ids}") == titles[1] and parse_documents("a, b,") == ["a", "b"]
    assert parse_documents(None) is None
    out = tmp_path / "out"
    args = ["eval", "musique", str(data), "--per-question-corpus", "--no-answer", "--strategies", "firstchunks"]
    result = CliRunner().invoke(cli_app(), [*args, "--documents", f"@{ids}", "--out", str(out), "--no-plots", "-q"])
    assert result.exit_code == 0, result.output
    assert [r["question_id"] for r in read_records(out)] == ["2hop__1"]  # the question over the listed paragraphs
    comma = CliRunner().invoke(cli_app(), [*args, "--documents", ",".join(titles[1]), "--out", str(out), "-q"])
    assert comma.exit_code == 2 and "unknown document id(s) 'Oakford'" in comma.output  # why the file form exists
    empty = tmp_path / "empty.txt"
    empty.write_text("\n", encoding="utf-8")
    for bad, message in ((f"@{empty}", "holds no document id"), (f"@{tmp_path / 'none.txt'}", "cannot read")):
        failed = CliRunner().invoke(cli_app(), [*args, "--documents", bad, "--out", str(out), "-q"])
        assert failed.exit_code == 2 and message in failed.output and "Traceback" not in failed.output


def two_chunk_alpha_file(tmp_path: Path) -> Path:
    """:func:`multihop_file` with Alpha two sentences long (two chunks at T = 30); gold {Alpha, Beta} and {Epsilon}."""
    path = multihop_file(tmp_path)
    records = json.loads(path.read_text(encoding="utf-8"))
    for i, record in enumerate(records):
        for paragraph in record["paragraphs"]:
            if paragraph["title"] == "Alpha":
                paragraph["paragraph_text"] = (
                    "Alpha is a quiet market town on the river Lune, known for its old stone bridge and its fair. "
                    "The bridge at Alpha was rebuilt after the great flood, and the council meets in the hall by it."
                )
            paragraph["is_supporting"] = paragraph["title"] in ({"Alpha", "Beta"}, {"Epsilon"})[i]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_recall_reads_the_documents_of_the_first_k_passages_for_every_strategy(tmp_path: Path, config: Config) -> None:
    """One rule (issue 38): R@k counts the documents of the first k chunks of one ranking of max(B, 5) nodes. Alpha
    spans two chunks, so a ranked strategy's first two passages are both Alpha (the old rule, the first two distinct
    documents, gave R@2 = 1.0 for gold {Alpha, Beta}); a committee is read from its one ranking the same way (the old
    rule elected a separate 2-chunk committee, here [Delta, Epsilon], and gave 0.0 and 1.0)."""
    res = run_eval(
        "musique",
        two_chunk_alpha_file(tmp_path),
        ["firstchunks", "lastchunks"],
        config=config,
        budget=1,
        out_dir=tmp_path / "out",
        answer=False,
        embedder=HashEmbedder(),
    )
    by = {(r["strategy"], r["question_id"]): r for r in res.records}
    ranked = by[("firstchunks", "2hop__0")]
    assert ranked["passages"][:2] == ["Alpha", "Beta"] and len(ranked["retrieved"]) == 5
    assert ranked["recall_rule"] == "first k passages"
    assert ranked["recall@2"] == 0.5 and ranked["recall@5"] == 1.0  # chunks Alpha, Alpha | Beta, Gamma, Delta
    assert by[("firstchunks", "2hop__1")]["recall@5"] == 0.0  # Epsilon is the sixth chunk
    committee = [by[("lastchunks", q)] for q in ("2hop__0", "2hop__1")]  # ranking: Alpha, Beta, Gamma, Delta, Epsilon
    assert [r["recall@2"] for r in committee] == [1.0, 0.0]
    assert [r["recall@5"] for r in committee] == [1.0, 1.0]
    assert all("recall_from" not in r for r in res.records)  # no per-k election any more


def test_a_directory_answered_under_another_reading_is_refused(tmp_path: Path, config: Config) -> None:
    """The ``[answer]`` settings are in ``run.json``: a resumed run reading otherwise is another configuration; one
    written before they were recorded resumes with the defaults, and with others only once ``run.json`` says so."""
    path, out = quality_file(tmp_path), tmp_path / "out"
    kwargs: dict[str, Any] = {"budget": 2, "plots": False, "embedder": HashEmbedder(), "out_dir": out}

    def reading(**settings: Any) -> Config:
        return config.model_copy(update={"answer": AnswerSettings(**settings)})

    run_eval("quality", path, ["firstchunks"], config=reading(dates="off"), llm=ScriptedLLM(), **kwargs)
    assert json.loads((out / "run.json").read_text())["answer_settings"] == {"dates": "off"}
    for other in (config, reading(reading="notes")):
        with pytest.raises(ConfigError, match="differs in answer_settings"):
            run_eval("quality", path, ["firstchunks"], config=other, llm=ScriptedLLM(), **kwargs)
    legacy = {k: v for k, v in json.loads((out / "run.json").read_text()).items() if k != "answer_settings"}
    (out / "run.json").write_text(json.dumps(legacy))  # as written before the settings were recorded
    with pytest.raises(ConfigError, match='add "answer_settings": {"dates": "off"} to it'):
        run_eval("quality", path, ["firstchunks"], config=reading(dates="off"), llm=ScriptedLLM(), **kwargs)
    llm = ScriptedLLM()
    run_eval("quality", path, ["firstchunks"], config=config, llm=llm, **kwargs)  # the defaults: resumed as before
    assert llm.calls == 0 and "answer_settings" not in json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**legacy, "answer_settings": {"dates": "off"}}))  # the fix it names
    run_eval("quality", path, ["firstchunks"], config=reading(dates="off"), llm=llm, **kwargs)
    assert llm.calls == 0


#: The ``gem`` entry of ``run.json`` as written before ``[memory]`` existed (issue 40) for the ``config`` fixture:
#: the memory's chunk size inside it, the budget left out, ``chunk_titles`` true for a new memory.
OLD_GEM_FINGERPRINT = {
    "chunk_tokens": 30, "questions": 3, "eigen": 2, "eigen_top": 3, "search": "best_first", "members": "spectral",
    "summary_words": 80, "skip_trivial": False, "graph": "auto", "sparse_above": 2000, "knn": 32, "ann_above": 20000,
    "dedupe_questions": False, "chunk_titles": True,
}  # fmt: skip


def test_an_output_directory_written_before_the_memory_section_resumes(tmp_path: Path, config: Config) -> None:
    """The memory's settings moved from ``[gem]`` to ``[memory]`` without changing the ``run.json`` fingerprint:
    a directory evaluated with the old keys resumes with the new ones, recomputing nothing."""
    path, out = quality_file(tmp_path), tmp_path / "out"
    kwargs: dict[str, Any] = {"budget": 2, "plots": False, "embedder": HashEmbedder(), "out_dir": out}
    with pytest.warns(DeprecatedSettingWarning, match=r"\[gem\] chunk_tokens .* use \[memory\] chunk_tokens"):
        old = load_config(None, {"gem": {**gem_config(config).model_dump(), "chunk_tokens": 30}})
    first = run_eval("quality", path, ["dense"], config=old, llm=ScriptedLLM(), **kwargs)
    assert json.loads((out / "run.json").read_text())["gem"] == OLD_GEM_FINGERPRINT
    new = load_config(None, {"memory": {"chunk_tokens": 30}, "gem": gem_config(config).model_dump()})
    llm = ScriptedLLM()
    again = run_eval("quality", path, ["dense"], config=new, llm=llm, **kwargs)
    assert llm.calls == 0 and again.summary.aggregates == first.summary.aggregates
    with pytest.raises(ConfigError, match="another configuration.*gem"):  # the chunk size is still in it
        run_eval("quality", path, ["dense"], config=load_config(None, {"memory": {"chunk_tokens": 40}}), **kwargs)
