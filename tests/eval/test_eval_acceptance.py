"""The CMU DoG acceptance test (HLGraphRAG section 4) with the test doubles: the loader on a tiny fixture written
here, the replay loop (generated turns, error correction, judge counts, malformed verdicts), the Mann-Whitney
wiring, resume, and ``gemrag eval cmu_dog``."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import typer
from scipy.stats import mannwhitneyu
from typer.testing import CliRunner

from fakes import HashEmbedder, ScriptedLLM
from gemrag.cli.eval import eval_command
from gemrag.config import Config
from gemrag.errors import ConfigError, InputError, ModelCrashError
from gemrag.eval.acceptance import runner as acceptance_module
from gemrag.eval.acceptance.prompts import GO_ON, clean_reply, reply_prompt
from gemrag.eval.acceptance.report import mann_whitney, run_counts, summarize_acceptance
from gemrag.eval.acceptance.runner import AcceptanceSettings, replay, reply_turns, run_acceptance
from gemrag.eval.judging.judge import Judge, judge_settings
from gemrag.eval.judging.prompts import Verdict
from gemrag.eval.loaders.cmu_dog import load_cmu_dog
from gemrag.eval.plan import plan_runs
from gemrag.memory import Memory
from gemrag.models.base import Completion, Message, Usage
from paths import REPO
from realparts import require_real

SCENE = (
    "Captain Mira Holt sails the Albatross to Kestrel Island because her brother Tomas is missing. "
    "On the island Mira finds Tomas in a lighthouse. Tomas had hidden the map from the smugglers."
)
WIKI = {
    "Harbour_Lights": {
        "0": {
            "movieName": "Harbour Lights",
            "year": "2011",
            "director": "Ines Vale",
            "genre": "Adventure",
            "cast": ["Ada Stone as Mira Holt", "Ben Roy as Tomas Holt"],
            "introduction": "Harbour Lights is a 2011 adventure film directed by Ines Vale.",
            "rating": ["Rotten Tomatoes: 81%"],
            "critical_response": ["A salty, lively ride."],
        },
        "1": SCENE,
        "2": "The smugglers chase the Albatross through a storm.",
        "3": "Mira returns the map to the harbour master of Port Wren.",
        "wikiDocumentIdx": 4,
    },
    "Other": {"0": {"movieName": "Other Film", "introduction": "Unused."}, "1": "", "2": "", "3": "",
              "wikiDocumentIdx": 7},
}  # fmt: skip
# conversation A: user2 read the document; turns 1, 3 (user2) and 4 (user2 again) are generated
CONV_A = [
    ("user1", "hi, what movie is it?", 0),
    ("user2", "Harbour Lights, a 2011 adventure.", 0),
    ("user1", "who is in it?", 0),
    ("user2", "Ada Stone plays Mira Holt.", 1),
    ("user2", "She sails to Kestrel Island to find her brother.", 1),
    ("user1", "sounds fun", 1),
    ("user1", "", 1),  # empty text: dropped
]
# conversation B: both read it and user2 opens (turn 0 is never generated)
CONV_B = [("user2", "hello", 0), ("user1", "hey, did you like the film?", 0), ("user2", "Yes, the storm chase.", 2)]


def _conversation(cid: str, turns: Sequence[tuple[str, str, int]], saw: list[str]) -> dict[str, Any]:
    history = [{"docIdx": d, "text": t, "uid": u, "utcTimestamp": "2018-01-01T00:00:00Z"} for u, t, d in turns]
    return {"conversation_id": cid, "wikiDocumentIdx": 4, "whoSawDoc": saw, "rating": 2, "history": history}


def write_dog(tmp_path: Path) -> Path:
    """The two-conversation CMU DoG files above under ``tmp_path/dog``; returns the conversation file."""
    folder = tmp_path / "dog"
    folder.mkdir()
    (folder / "wikidata.json").write_text(json.dumps(WIKI), encoding="utf-8")
    lines = [_conversation("conv-a", CONV_A, ["user2"]), _conversation("conv-b", CONV_B, ["user1", "user2"])]
    (folder / "valid.jsonl").write_text("\n".join(json.dumps(c) for c in lines) + "\n", encoding="utf-8")
    return folder / "valid.jsonl"


@pytest.fixture
def dog(tmp_path: Path) -> Path:
    return write_dog(tmp_path)


def _field(prompt: str, before: str, after: str) -> str:
    return prompt.split(before, 1)[1].split(after, 1)[0]


class DogLLM(ScriptedLLM):
    """ScriptedLLM that also plays the acceptance test: a reply is ``"GEN<n> <first context words>"``; the verdict
    is ``verdicts[k % len]`` for the k-th judge call, where ``"bad"`` answers malformed text and ``"Inaccuracy"``
    tests the normalization. Every reply prompt and judge question is kept."""

    def __init__(self, verdicts: Sequence[str] = ("choke", "inaccurate", "correct"), **kw: Any) -> None:
        super().__init__(**kw)
        self.verdicts = list(verdicts)
        self.replies: list[dict[str, Any]] = []
        self.judged: list[dict[str, str]] = []

    def complete(self, messages: Sequence[Message], **kw: Any) -> Completion:
        system = messages[0]["content"]
        usage = Usage(prompt_tokens=10, completion_tokens=5, seconds=0.001, calls=1)
        if system.startswith("You are a person chatting online"):
            if self.interrupt_after is not None and self.calls >= self.interrupt_after:
                raise KeyboardInterrupt
            self.calls += 1
            context = system.split("Context:\n", 1)[1]
            text = f"GEN{len(self.replies)} " + " ".join(context.split()[1:5])
            chat = "\n".join(f"{m['role']}: {m['content']}" for m in messages[1:])  # the transcript as chat turns
            self.replies.append({"prompt": chat, "text": text, "seed": kw.get("seed"), "temp": kw.get("temperature")})
            return Completion(f"You: {text}\nStranger: a line the speaker must not say", None, usage)
        if system.startswith("You are a psychology major"):
            self.calls += 1
            q = messages[1]["content"].split("Now, given", 1)[1]
            self.judged.append(
                {"candidate": _field(q, 'responds with "', '" when'), "correct": _field(q, 'answer is "', '", is')}
            )
            verdict = self.verdicts[(len(self.judged) - 1) % len(self.verdicts)]
            if verdict == "bad":
                return Completion("I think it is fine", None, usage)
            return Completion(json.dumps({"verdict": verdict}), {"verdict": verdict}, usage)
        return super().complete(messages, **kw)


# -- loader -----------------------------------------------------------------------------------------------------
def test_loader_reads_conversations_and_movie(dog: Path) -> None:
    corpus = load_cmu_dog(dog)
    assert corpus.name == "valid" and [d.id for d in corpus.documents] == ["movie-4"]  # unused movie left out
    doc = corpus.document("movie-4")
    assert doc.title == "Harbour Lights"
    assert doc.text.startswith("Harbour Lights (Year: 2011; Director: Ines Vale; Genre: Adventure).")
    assert "Cast: Ada Stone as Mira Holt; Ben Roy as Tomas Holt" in doc.text and SCENE in doc.text
    assert doc.metadata["sections"][1] == SCENE
    a, b = corpus.conversations
    assert (a.id, a.doc_id, a.saw_doc, a.rating) == ("conv-a", "movie-4", ["user2"], 2)
    assert len(a.turns) == 6 and a.turns[3].doc_idx == 1  # the empty message is dropped
    assert reply_turns(a) == [1, 3, 4]
    assert b.saw_doc == ["user1", "user2"] and reply_turns(b) == [1, 2]  # both read it; turn 0 has no prompt
    assert [c.id for c in corpus.select(["conv-b"]).conversations] == ["conv-b"]
    assert corpus.select(limit=1).conversations == [a]
    with pytest.raises(InputError, match="unknown conversation id"):
        corpus.select(["nope"])
    with pytest.raises(KeyError):
        corpus.document("movie-9")


def test_loader_errors_name_the_problem(dog: Path) -> None:
    bad = dog.parent / "bad.jsonl"
    bad.write_text(json.dumps({**_conversation("x", CONV_B, ["user2"]), "wikiDocumentIdx": 99}) + "\n")
    with pytest.raises(InputError, match=r"bad.jsonl: field 'wikiDocumentIdx' \(99\) names no movie"):
        load_cmu_dog(bad)
    bad.write_text(json.dumps(_conversation("x", CONV_B, ["user3"])) + "\n")
    with pytest.raises(InputError, match="whoSawDoc"):
        load_cmu_dog(bad)
    bad.write_text("\n".join(json.dumps(_conversation("x", CONV_B, ["user1"])) for _ in range(2)) + "\n")
    with pytest.raises(InputError, match="duplicate conversation id 'x'"):
        load_cmu_dog(bad)
    with pytest.raises(InputError, match="not found"):
        load_cmu_dog(dog, wiki_path=dog.parent / "none.json")


def test_loader_on_the_real_valid_file() -> None:
    data = Path(os.environ.get("GEMRAG_EVAL_DATA", REPO.parent / "shared" / "data"))
    path = data / "cmu_dog" / "valid.jsonl"
    if not path.is_file():
        require_real(f"{path} not available (../shared/data beside the repository)")
    corpus = load_cmu_dog(path)
    assert len(corpus.conversations) == 229 and len(corpus.documents) == 30
    first = corpus.conversations[0]
    assert first.id == "00938aa6d208cc3884c2bae678a23cb9f27f9c31" and first.doc_id == "movie-19"
    assert corpus.document("movie-19").title == "Catch me if you can"


# -- judge ------------------------------------------------------------------------------------------------------
def test_judge_normalizes_retries_and_records_unjudged() -> None:
    assert Verdict.model_validate({"verdict": " Inaccuracy."}).verdict == "inaccurate"
    llm = DogLLM(verdicts=["bad"])
    verdict = Judge(llm).classify("Mira sails.", "where does she go?", "to Paris", "to Kestrel Island")
    assert verdict.verdict is None and "StructuredOutputError" in (verdict.error or "")
    assert len(llm.judged) == 3  # three attempts, then unjudged
    assert llm.judged[0] == {"candidate": "to Paris", "correct": "to Kestrel Island"}
    llm = DogLLM(verdicts=["bad", "Correct"])
    assert Judge(llm).classify("c", "q", "a", "b").verdict == "correct" and len(llm.judged) == 2

    class Crashed(DogLLM):
        def complete(self, messages: Sequence[Message], **kw: Any) -> Completion:
            raise ModelCrashError("the model process died")

    with pytest.raises(ModelCrashError):
        Judge(Crashed()).classify("c", "q", "a", "b")


def test_judge_settings(config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert judge_settings(config, None, None) is None
    served = judge_settings(config, "gpt-4o-mini", "http://127.0.0.1:9/v1")
    assert served is not None and (served.provider, served.model) == ("openai", "gpt-4o-mini")
    assert served.api_key == "sk-test"
    local = judge_settings(config, "qwen2.5-coder-0.5b", None)
    assert local is not None and (local.provider, local.model) == ("llama_cpp", "qwen2.5-coder-0.5b")


# -- replay -----------------------------------------------------------------------------------------------------
def _replay(tmp_path: Path, dog: Path, config: Config, llm: DogLLM, conv: int = 0) -> list[dict[str, Any]]:
    corpus = load_cmu_dog(dog)
    run = plan_runs(["dense"], None, config)[0]
    with Memory.open(tmp_path / "mem", config, llm=llm, embedder=HashEmbedder()) as mem:
        doc = corpus.documents[0]
        mem.add_text(doc.text, doc.title, source=doc.id)
        mem.index(strategy="dense")
        settings = AcceptanceSettings(budget=2, seed=5, history=3)
        return list(replay(mem, run, Judge(mem.llm()), corpus.conversations[conv], doc, run_index=2, settings=settings))


def test_replay_generates_only_the_readers_turns_with_error_correction(
    tmp_path: Path, dog: Path, config: Config
) -> None:
    llm = DogLLM()
    records = _replay(tmp_path, dog, config, llm)
    assert [(r["turn"], r["speaker"]) for r in records] == [(1, "user2"), (3, "user2"), (4, "user2")]
    assert [r["real"] for r in records] == [t for u, t, _ in CONV_A[1:5] if u == "user2"]
    # searched with the other speaker's last message (turn 4 follows user2's own turn 3: user1's turn 2)
    assert [r["query"] for r in records] == ["hi, what movie is it?", "who is in it?", "who is in it?"]
    assert all(r["seed"] == 7 and r["run"] == 2 and r["error"] is None and len(r["context"]) <= 2 for r in records)
    assert all(reply["seed"] == 7 and reply["temp"] > 0 for reply in llm.replies)
    # error correction: each later prompt holds the real earlier replies and none of the generated ones
    last = llm.replies[2]["prompt"]
    # the transcript is a chat session: the stranger's turns are user messages, the speaker's own assistant ones
    assert last.splitlines() == [  # history=3: the last three real turns, then the speaker is asked to go on
        "assistant: Harbour Lights, a 2011 adventure.",
        "user: who is in it?",
        "assistant: Ada Stone plays Mira Holt.",
        f"user: {GO_ON}",
    ]
    assert llm.replies[0]["prompt"].splitlines() == ["user: hi, what movie is it?"]
    assert not any(reply["text"] in later["prompt"] for reply in llm.replies for later in llm.replies)
    # the speaker labels the model wrote are gone, and so is the stranger's line it went on to write
    assert [r["generated"] for r in records] == [reply["text"] for reply in llm.replies]
    # the judge saw each generated reply against the real one
    assert [j["candidate"] for j in llm.judged] == [r["generated"] for r in records]
    assert [j["correct"] for j in llm.judged] == [r["real"] for r in records]
    assert [r["verdict"] for r in records] == ["choke", "inaccurate", "correct"]


def test_replay_records_malformed_verdicts_as_unjudged(tmp_path: Path, dog: Path, config: Config) -> None:
    llm = DogLLM(verdicts=["correct", "bad", "bad", "bad", "choke"])
    records = _replay(tmp_path, dog, config, llm, conv=0)
    assert [r["verdict"] for r in records] == ["correct", None, "choke"]
    assert records[1]["judge_error"] and records[1]["error"] is None
    counts = run_counts(records, "dense", 3)[2]
    assert counts == {"choke": 1, "inaccurate": 0, "correct": 1, "unjudged": 1, "errors": 0, "turns": 3}


# -- statistics -------------------------------------------------------------------------------------------------
def test_mann_whitney_on_the_papers_appendix_data() -> None:
    hl_dw = [58, 56, 64, 62, 65, 59, 61, 59, 64, 65, 58, 63, 63, 62, 61]
    hl_dw_rr = [28, 30, 35, 34, 38, 28, 35, 29, 34, 38, 33, 34, 29, 27, 36]
    test = mann_whitney(hl_dw, hl_dw_rr)
    assert test is not None and test["u"] == 225.0 and test["n"] == [15, 15]  # every run of A above every run of B
    assert test["p_greater"] == pytest.approx(mannwhitneyu(hl_dw, hl_dw_rr, alternative="greater").pvalue)
    assert test["p_greater"] < 1e-5 and test["p_two_sided"] == pytest.approx(2 * test["p_greater"])
    assert mann_whitney([], [1.0]) is None


def _rec(strategy: str, run: int, verdict: str | None, turn: int = 0) -> dict[str, Any]:
    return {"strategy": strategy, "run": run, "verdict": verdict, "error": None, "turn": turn}


def test_summary_compares_neighbours_on_complete_runs() -> None:
    records = []
    for run, (a, b, c) in enumerate([(3, 1, 0), (2, 1, 1), (3, 0, 0)]):  # chokes per run of x, y, z (3 turns)
        for name, chokes in (("x", a), ("y", b), ("z", c)):
            records += [_rec(name, run, "choke" if t < chokes else "correct", t) for t in range(3)]
    records = [r for r in records if not (r["strategy"] == "z" and r["run"] == 2 and r["turn"] == 2)]  # z: 2 done
    meta = {"dataset": {"turns_per_run": 3}}
    res = summarize_acceptance(records, ["x", "y", "z"], 3, meta)
    assert res["complete_runs"] == {"x": 3, "y": 3, "z": 2}
    assert res["means"]["x"]["choke"] == pytest.approx(8 / 3) and res["means"]["z"]["choke"] == pytest.approx(0.5)
    assert res["means"]["y"]["acceptance"] == pytest.approx(7 / 9)
    assert [(c["a"], c["b"]) for c in res["comparisons"]] == [("x", "y"), ("y", "z")]
    expected = mannwhitneyu([3, 2, 3], [1, 1, 0], alternative="greater").pvalue
    assert res["comparisons"][0]["p_greater"] == pytest.approx(expected)
    assert res["comparisons"][1]["n"] == [3, 2]  # z's incomplete run is left out


# -- end to end -------------------------------------------------------------------------------------------------
def test_run_acceptance_side_by_side_resumes(tmp_path: Path, dog: Path, config: Config) -> None:
    out = tmp_path / "out"
    strategies = ["hlgraph", "hlgraph[ranked=false]", "dense"]
    kw: dict[str, Any] = {"config": config, "out_dir": out, "embedder": HashEmbedder()}
    settings = AcceptanceSettings(budget=2, runs=2, seed=3)
    with pytest.raises(KeyboardInterrupt):
        run_acceptance(dog, strategies, settings=settings, llm=DogLLM(interrupt_after=30), **kw)
    partial = len((out / "records.jsonl").read_text().splitlines())
    assert 0 < partial < 30
    llm = DogLLM()
    res = run_acceptance(dog, strategies, settings=settings, llm=llm, **kw)
    turns = 5  # conv-a: 3, conv-b: 2
    assert res["dataset"]["turns_per_run"] == turns and len(res["records"]) == 3 * 2 * turns
    lines = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    keys = [(r["conversation_id"], r["turn"], r["strategy"], r["run"]) for r in lines]
    assert len(keys) == len(set(keys)) == 3 * 2 * turns  # the rerun added only what was missing
    assert 0 < len(llm.replies) <= 3 * 2 * turns - partial  # (identical prompts of two runs are cache hits)
    assert {(r["strategy"], r["run"], r["seed"]) for r in res["records"]} == {
        (s, r, 3 + r) for s in ("hlgraph", "hlgraph[ranked=false]", "dense") for r in (0, 1)
    }
    assert res["complete_runs"] == {s: 2 for s in ("hlgraph", "hlgraph[ranked=false]", "dense")}
    assert [(c["a"], c["b"]) for c in res["comparisons"]] == [
        ("hlgraph", "hlgraph[ranked=false]"),
        ("hlgraph[ranked=false]", "dense"),
    ]
    md = (out / "results.md").read_text()
    assert "| Strategy | Chokes | Inaccuracies | Correct |" in md and "| hlgraph vs hlgraph[ranked=false] |" in md
    assert json.loads((out / "results.json").read_text())["models"]["judge"].endswith("(the evaluation LLM)")
    again = DogLLM()
    run_acceptance(dog, strategies, settings=settings, llm=again, **kw)
    assert again.calls == 0  # everything recorded: nothing generated or judged again
    with pytest.raises(ConfigError, match="budget"):
        run_acceptance(dog, ["dense"], settings=AcceptanceSettings(budget=3, runs=2, seed=3), llm=again, **kw)


def test_a_separate_judge_model_judges(tmp_path: Path, dog: Path, config: Config) -> None:
    writer, judge = DogLLM(), DogLLM(verdicts=["correct"])
    judge.model_id = "fake:judge"
    res = run_acceptance(
        dog, ["dense"], config=config, out_dir=tmp_path / "o", embedder=HashEmbedder(), llm=writer, judge_llm=judge,
        settings=AcceptanceSettings(runs=1), conversations=["conv-b"],
    )  # fmt: skip
    assert not writer.judged and len(judge.judged) == 2 and not judge.replies
    assert res["means"]["dense"]["correct"] == 2 and res["models"]["judge"] == "fake:judge"


def cli_app() -> typer.Typer:
    app = typer.Typer()
    app.command("eval")(eval_command)
    app.command("noop")(lambda: None)  # a second command keeps "eval" as a subcommand
    return app


def test_cli_eval_cmu_dog(tmp_path: Path, dog: Path, config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(acceptance_module, "build_embedder", lambda settings: HashEmbedder())
    monkeypatch.setattr(acceptance_module, "build_llm", lambda settings, cache_dir=None: DogLLM())
    out = tmp_path / "out"
    args = ["eval", "cmu_dog", str(dog), "--strategies", "dense,full", "--runs", "2", "--seed", "4", "--limit", "1"]
    result = CliRunner().invoke(cli_app(), [*args, "--budget", "2", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    assert "| dense |" in result.output and "| dense vs full |" in result.output
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(records) == 2 * 2 * 3 and {r["conversation_id"] for r in records} == {"conv-a"}
    assert {r["seed"] for r in records} == {4, 5}
    bad = CliRunner().invoke(cli_app(), ["eval", "cmu_dog", str(dog), "--ablation", "eigen=1", "-q"])
    assert bad.exit_code == 2 and "--ablation" in bad.output and "Traceback" not in bad.output
    merged = CliRunner().invoke(cli_app(), ["eval", "cmu_dog", str(dog), "--merge", str(out), "-q"])
    assert merged.exit_code == 2 and "--merge" in merged.output and "Traceback" not in merged.output
    shown = CliRunner().invoke(cli_app(), ["eval", "--help"], env={"COLUMNS": "200"})
    assert all(flag in shown.output for flag in ("--judge-base-url", "--judge-model", "--runs", "--seed"))


def test_hand_labels_resolve_to_real_turns() -> None:
    """benchmarks/judge_labels.jsonl: at least 30 labelled replies of every class, each naming a generated turn of a
    real CMU DoG conversation whose reply starts as recorded (the script's own join)."""
    import importlib.util

    script = REPO / "benchmarks" / "judge_agreement.py"
    spec = importlib.util.spec_from_file_location("judge_agreement", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    labels = [json.loads(line) for line in module.LABELS.read_text().splitlines()]
    assert len(labels) >= 30 and len({x["id"] for x in labels}) == len(labels)
    assert {x["label"] for x in labels} == {"choke", "inaccurate", "correct"}
    assert min(sum(x["label"] == c for x in labels) for c in ("choke", "inaccurate", "correct")) >= 10
    data = Path(os.environ.get("GEMRAG_EVAL_DATA", REPO.parent / "shared" / "data"))
    if not (data / "cmu_dog" / "valid.jsonl").is_file():
        require_real("../shared/data/cmu_dog not available")
    items = module.resolve(module.LABELS, data / "cmu_dog" / "valid.jsonl")
    assert all(i["real"].startswith(i["real_starts"]) and i["content"] and i["dialogue1"] for i in items)
    assert items[0]["dialogue1"] == "was it good?"


def test_reply_prompt_merges_a_speakers_consecutive_turns() -> None:
    messages = reply_prompt("Harbour Lights", ["p1", "p2"], [(False, "hi"), (False, "seen it?"), (True, "Yes.")])
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"] == "hi\nseen it?" and messages[3]["content"] == GO_ON
    assert messages[0]["content"].endswith("Context:\n[1] p1\n\n[2] p2")
    assert reply_prompt("M", [], [(True, "a"), (False, "b")])[-1] == {"role": "user", "content": "b"}


def test_clean_reply_keeps_the_speakers_own_words() -> None:
    assert clean_reply("Stranger: tell me more? You: It stars  Ryan Gosling.") == "It stars Ryan Gosling."
    assert clean_reply("You: Yes! I loved it.\nStranger: me too") == "Yes! I loved it."
    assert clean_reply("Plain reply. Stranger: x") == "Plain reply."
    assert clean_reply("Stranger: only theirs") == "only theirs"
    assert clean_reply("Me:  fine\n") == "fine" and clean_reply("  ") == ""


def test_the_default_runs_are_the_papers_three_rows_and_ours_tested_in_its_direction(config: Config) -> None:
    """HLGraphRAG Figure 5.1's three rows (base, + DW, + DW + RR) and ours (+ RR alone), and one-sided tests, the
    paper's two of Figure 5.5 (base vs + DW, + DW vs both) and our two (base vs + RR, + RR vs both): the row expected
    to choke more comes first (``alternative="greater"``)."""
    from gemrag.eval.acceptance.runner import DEFAULT_STRATEGIES, PAPER_PAIRS
    from gemrag.eval.plan import plan_runs

    runs = plan_runs(DEFAULT_STRATEGIES.split(","), None, config)
    settings = [(r.strategy, r.config.section("hlgraph")) for r in runs]
    assert settings == [
        ("hlgraph", {"directional": False, "ranked": False}),
        ("hlgraph", {"ranked": False}),
        ("hlgraph", {"directional": False}),
        ("hlgraph", {}),
    ]
    names = [r.name for r in runs]
    assert [(names[a], names[b]) for a, b in PAPER_PAIRS][:2] == [(names[0], names[1]), (names[1], names[3])]
    records = [_rec(n, run, "choke" if t < chokes else "correct", t) for n, chokes in zip(names, (3, 2, 2, 0),
               strict=True) for run in range(3) for t in range(3)]  # fmt: skip
    pairs = [(names[a], names[b]) for a, b in PAPER_PAIRS]
    res = summarize_acceptance(records, names, 3, {"dataset": {"turns_per_run": 3}}, pairs=pairs)
    base_vs_dw = res["comparisons"][0]
    assert (base_vs_dw["a"], base_vs_dw["b"]) == (names[0], names[1])
    assert base_vs_dw["p_greater"] == pytest.approx(mannwhitneyu([3] * 3, [2] * 3, alternative="greater").pvalue)


def test_conversations_are_replayed_sorted_by_name(dog: Path) -> None:
    """The paper took "the top 1219 JSON data tests sorted by name": select() sorts, then limits."""
    corpus = load_cmu_dog(dog)
    convs = corpus.conversations
    renamed = [c.model_copy(update={"id": f"z{i}"}) for i, c in enumerate(convs)]
    renamed.append(convs[0].model_copy(update={"id": "a-first"}))
    shuffled = corpus.model_copy(update={"conversations": renamed})
    assert [c.id for c in shuffled.select(None, 1).conversations] == ["a-first"]
    assert [c.id for c in shuffled.select(None).conversations] == sorted(c.id for c in renamed)
