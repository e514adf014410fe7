"""LoCoMo evaluation: the category-5 refusal matcher, evidence recall by dialog turn (chunk spans, summary
members), per-category scores on a tiny hand-made LoCoMo file, the abstain prompt, running averages and
``workers=2`` against ``workers=1``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fakes import HashEmbedder, ScriptedLLM
from gemrag.answers.prompts import ABSTAIN, GUESS, answer_prompt
from gemrag.config import Config
from gemrag.eval.adversarial import DATE_HINT
from gemrag.eval.categories import category_tables, per_category, running_note, score_free_form
from gemrag.eval.datasets import Question
from gemrag.eval.evidence import ChunkSpans, evidence_recall, locate_chunks, member_chunks, question_evidence
from gemrag.eval.loaders.locomo import NOT_MENTIONED
from gemrag.eval.metrics import says_not_available
from gemrag.eval.report import markdown_report
from gemrag.eval.runner import run_eval
from gemrag.models.base import Completion, Message
from gemrag.strategies import register
from gemrag.strategies.base import StrategyContext, note_advance
from gemrag.types import Hit

# -- category 5 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Not mentioned in the conversation",
        "It is not mentioned.",
        "No information available",
        "The conversation doesn't say.",
        "That cannot be determined from the context",
        "Unknown",
        "The context does not mention what she realized.",
    ],
)
def test_refusals_are_recognized(answer: str) -> None:
    assert says_not_available(answer)


@pytest.mark.parametrize(
    "answer",
    ["", "Self-care is important", "She mentioned adoption agencies", "Nothing", "known for painting", "not"],
)
def test_answers_are_not_refusals(answer: str) -> None:
    assert not says_not_available(answer)


def _q(category: str, answer: str | None) -> Question:
    return Question(id="x", doc_ids=["d"], question="q?", answer=answer, category=category)


def test_category_5_is_scored_by_refusal_not_against_the_placeholder() -> None:
    adversarial = _q("5", NOT_MENTIONED)
    # a token F1 against "Not mentioned in the conversation" would give this partial credit; it says the opposite
    assert score_free_form("locomo", adversarial, "It was mentioned in the conversation") == (0.0, 0.0)
    assert score_free_form("locomo", adversarial, "No information available.") == (1.0, 1.0)
    assert score_free_form("locomo", adversarial, "Self-care is important") == (0.0, 0.0)
    # other categories and other datasets: SQuAD EM / F1
    assert score_free_form("locomo", _q("4", "Paris"), "Paris") == (1.0, 1.0)
    assert score_free_form("locomo", _q("4", "Paris"), "not mentioned") == (0.0, 0.0)
    assert score_free_form("qasper", _q("5", "yes"), "not mentioned") == (0.0, 0.0)


def test_abstain_prompt_only_when_asked() -> None:
    default = answer_prompt("Who?", ["ctx"])[1]["content"]
    assert default.endswith(f"Answer briefly. {GUESS}")
    assert default.endswith("Answer briefly. If the context does not contain the answer, give your best guess.")
    assert answer_prompt("Who?", ["ctx"], abstain=True)[1]["content"].endswith(ABSTAIN)


# -- chunk spans and evidence recall ---------------------------------------------------------------------


def test_locate_chunks_with_collapsed_whitespace_and_repeats() -> None:
    doc = "[d] A: hi there\n[d] B: hello\n\n[d] A: hi there\n[d] B:   bye  now"
    chunks = ["[d] A: hi there [d] B: hello", "[d] A: hi there", "[d] B: bye now", "missing text"]
    spans = locate_chunks(doc, chunks)
    assert spans[0] == (0, doc.index("hello") + 5)
    assert spans[1] == (doc.index("\n\n") + 2, doc.index("\n\n") + 2 + len("[d] A: hi there"))  # the second one
    assert spans[2] == (doc.rindex("[d] B"), len(doc))
    assert spans[3] is None


def test_locate_chunks_mid_word_cut() -> None:
    doc = "alpha betagamma delta"
    assert locate_chunks(doc, ["alpha beta", "gamma delta"]) == [(0, 10), (10, 21)]


@dataclass
class FakeNode:
    id: int
    kind: str
    doc_id: int | None
    ord: int
    text: str
    meta: dict[str, Any] = field(default_factory=dict)


class FakeStore:
    def __init__(self, nodes: list[FakeNode]) -> None:
        self._nodes = {n.id: n for n in nodes}

    def node(self, node_id: int) -> FakeNode:
        return self._nodes[node_id]

    def nodes(self, kind: str | None = None) -> list[FakeNode]:
        return [n for n in self._nodes.values() if kind is None or n.kind == kind]


# doc 7: three turn lines; turn D1:2 is cut across chunks 11 and 12
DOC = "[1 May] Ann: I moved to Paris.\n[1 May] Bob: Nice, I visited Rome in spring last year.\n[2 May] Ann: Bye."
TURNS = [
    {"dia_id": "D1:1", "start": 0, "end": 30},
    {"dia_id": "D1:2", "start": 31, "end": 85},
    {"dia_id": "D1:3", "start": 86, "end": 103},
]
STORE = FakeStore(
    [
        FakeNode(12, "chunk", 7, 1, "Rome in spring last year. [2 May] Ann: Bye."),  # stored out of id order
        FakeNode(11, "chunk", 7, 0, "[1 May] Ann: I moved to Paris. [1 May] Bob: Nice, I visited"),
        FakeNode(20, "summary", None, 0, "gem theme", {"members": [11]}),
        FakeNode(30, "summary", None, 0, "raptor layer 1", {"children": [12]}),
        FakeNode(31, "summary", None, 1, "raptor layer 2", {"children": [30]}),
        FakeNode(40, "summary", None, 0, "no members"),
    ]
)


def hit(node_id: int, kind: str = "chunk", meta: dict[str, Any] | None = None) -> Hit:
    return Hit(node_id, kind, 1.0, "", 0, meta or {})  # type: ignore[arg-type]


def test_turn_lines_as_written_by_the_loader() -> None:
    assert [DOC[t["start"] : t["end"]] for t in TURNS] == DOC.split("\n")


def test_evidence_recall_turn_split_over_two_chunks() -> None:
    spans = ChunkSpans(STORE, {7: DOC})
    assert spans.span(11) == (7, 0, DOC.index(" Rome"))
    assert spans.span(12) == (7, DOC.index("Rome"), len(DOC))
    gold = ["D1:2", "D1:3"]
    # either half of the split turn covers it
    assert question_evidence(gold, [(7, TURNS)], [hit(11)], spans, STORE) == (0.5, ["D1:2"])
    assert question_evidence(gold, [(7, TURNS)], [hit(12)], spans, STORE) == (1.0, ["D1:2", "D1:3"])
    assert question_evidence(["D1:1"], [(7, TURNS)], [hit(12)], spans, STORE) == (0.0, [])
    # a gold id the document does not have is left out; none left: undefined
    assert question_evidence(["D1:1", "D9:9"], [(7, TURNS)], [hit(11)], spans, STORE) == (1.0, ["D1:1"])
    assert question_evidence(["D9:9"], [(7, TURNS)], [hit(11)], spans, STORE) == (None, [])
    # spans of another stored document do not count
    assert question_evidence(["D1:1"], [(8, TURNS)], [hit(11)], spans, STORE) == (0.0, [])


def test_summary_hits_count_through_their_members() -> None:
    spans = ChunkSpans(STORE, {7: DOC})
    assert member_chunks(hit(20, "summary", {"members": [11]}), STORE) == [11]
    assert member_chunks(hit(20, "summary"), STORE) == [11]  # from the stored node's meta
    assert member_chunks(hit(31, "summary", {"children": [30]}), STORE) == [12]  # down two RAPTOR layers
    assert member_chunks(hit(40, "summary"), STORE) == []
    assert question_evidence(["D1:1"], [(7, TURNS)], [hit(20, "summary")], spans, STORE) == (1.0, ["D1:1"])
    assert question_evidence(["D1:3"], [(7, TURNS)], [hit(31, "summary")], spans, STORE) == (1.0, ["D1:3"])
    assert question_evidence(["D1:1"], [(7, TURNS)], [hit(40, "summary")], spans, STORE) == (0.0, [])


def test_evidence_recall_overlap_is_half_open() -> None:
    gold = {"a": (10, 20), "b": (30, 40)}
    assert evidence_recall(gold, [(20, 30)]) == (0.0, [])  # touches both, overlaps neither
    assert evidence_recall(gold, [(19, 31)]) == (1.0, ["a", "b"])
    with pytest.raises(ValueError):
        evidence_recall({}, [(0, 1)])


# -- end to end on a tiny LoCoMo file ----------------------------------------------------------------


@register("locomo_first")
class FirstChunk:
    """Test-only strategy: the conversation's first chunk, then the next ones in order (budget)."""

    name = "locomo_first"

    def build(self, ctx: StrategyContext) -> None:
        ctx.state["built"] = True

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        chunks = sorted(ctx.store.nodes("chunk"), key=lambda n: n.ord)[:budget]
        return [Hit(n.id, "chunk", 1.0, n.text, i) for i, n in enumerate(chunks)]

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        return {}


ANSWERS = {
    "Where did Ann move?": "Paris",
    "When did Ann move?": "May 2023",
    "What did Ann realize after the race?": "It is not mentioned in the conversation.",
    "What is Bob's favourite colour?": "Blue",
    "What are Bob's hobbies?": "painting",
}


class AnsweringLLM(ScriptedLLM):
    """Answers the free-form questions of :data:`ANSWERS` (category 5's options ignored: the text is the reply)."""

    def complete(self, messages: list[Message], **kwargs: Any) -> Completion:  # type: ignore[override]
        prompt = messages[-1]["content"]
        if "\nQuestion: " in prompt:
            question = prompt.split("\nQuestion: ")[1].split("\n")[0].split(" Select the correct answer:")[0]
            question = question.removesuffix(" " + DATE_HINT)  # category 2 as LoCoMo's released evaluation asks it
            return Completion(ANSWERS[question], None, super().complete(messages, **kwargs).usage)
        return super().complete(messages, **kwargs)


def locomo_file(tmp_path: Path) -> Path:
    def turns(session: int, lines: list[tuple[str, str]]) -> list[dict[str, str]]:
        return [{"speaker": s, "dia_id": f"D{session}:{i + 1}", "text": t} for i, (s, t) in enumerate(lines)]

    first = [
        ("Ann", "I finally moved to Paris last week after months of planning and packing boxes."),
        ("Bob", "That is wonderful news, I hope the new flat near the river is comfortable for you."),
        ("Ann", "It is small but bright, and the bakery downstairs sells amazing croissants every morning."),
    ]
    second = [
        ("Bob", "I spent the weekend painting landscapes and hiking in the hills with my brother Tom."),
        ("Ann", "Your paintings are always so calm, you should show them at the gallery in town."),
        ("Bob", "Maybe next year, for now I only paint for fun on quiet Sunday afternoons at home."),
    ]
    qa = [
        {"question": "Where did Ann move?", "answer": "Paris", "evidence": ["D1:1"], "category": 4},
        {"question": "When did Ann move?", "answer": "7 May 2023", "evidence": ["D1:1", "D2:3"], "category": 2},
        {
            "question": "What did Ann realize after the race?",
            "adversarial_answer": "self-care matters",
            "evidence": ["D2:3"],
            "category": 5,
        },
        {"question": "What is Bob's favourite colour?", "answer": "green", "evidence": ["D9:9"], "category": 5},
        {"question": "What are Bob's hobbies?", "answer": "hiking, painting", "evidence": ["D2:1"], "category": 1},
    ]
    sample = {
        "sample_id": "conv-t",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:00 pm on 8 May, 2023",
            "session_1": turns(1, first),
            "session_2_date_time": "2:00 pm on 20 May, 2023",
            "session_2": turns(2, second),
        },
        "qa": qa,
    }
    path = tmp_path / "locomo_tiny.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


def _run(
    tmp_path: Path, config: Config, name: str, workers: int = 1, llm: Any = None, plots: bool = False, **kw: Any
) -> Any:
    """``locomo_first`` over the tiny LoCoMo file with B = 1 into ``tmp_path / name`` (``kw``: more run_eval
    options)."""
    return run_eval(
        "locomo",
        locomo_file(tmp_path),
        ["locomo_first"],
        config=config,
        budget=1,
        out_dir=tmp_path / name,
        llm=llm or AnsweringLLM(),
        embedder=HashEmbedder(),
        workers=workers,
        plots=plots,
        **kw,
    )


def test_locomo_per_category_scores_and_evidence(tmp_path: Path, config: Config) -> None:
    res = _run(tmp_path, config, "out")
    recs = {r["question_id"]: r for r in res.records}
    assert [r["question_id"] for r in res.records] == [f"conv-t_q{i}" for i in range(1, 6)]
    f1 = {q: r["f1"] for q, r in recs.items()}
    assert f1["conv-t_q1"] == 1.0
    assert f1["conv-t_q2"] == pytest.approx(0.8)  # "May 2023" vs "7 May 2023"
    assert (f1["conv-t_q3"], recs["conv-t_q3"]["em"]) == (1.0, 1.0)  # declined: correct
    assert (f1["conv-t_q4"], recs["conv-t_q4"]["em"]) == (0.0, 0.0)  # "Blue": wrong
    assert f1["conv-t_q5"] == pytest.approx(1 / 2)  # LoCoMo's multi-hop rule: gold parts hiking / painting
    # B = 1: the context is the first chunk, which holds D1:1 but not the last turn of session 2
    ev = {q: (r["evidence_recall"], r["evidence_covered"]) for q, r in recs.items()}
    assert ev["conv-t_q1"] == (1.0, ["D1:1"])
    assert ev["conv-t_q2"] == (0.5, ["D1:1"])
    assert ev["conv-t_q3"] == (0.0, [])
    assert ev["conv-t_q4"] == (None, [])  # D9:9 is not a turn of the conversation
    assert all(r["recall@5"] is None for r in res.records)  # turn ids are not documents

    cats = res.summary.categories["locomo_first"]
    assert list(cats) == ["1", "2", "4", "5", "all"]
    assert {c: cats[c]["n"] for c in cats} == {"1": 1, "2": 1, "4": 1, "5": 2, "all": 5}
    assert cats["5"]["f1"] == 0.5 and cats["5"]["em"] == 0.5
    assert cats["2"]["f1"] == pytest.approx(0.8) and cats["2"]["em"] == 0.0
    assert cats["all"]["f1"] == pytest.approx((1 + 0.8 + 1 + 0 + 1 / 2) / 5)
    assert cats["all"]["evidence_recall"] == pytest.approx((1 + 0.5 + 0 + 0) / 4)
    assert res.summary.aggregates["locomo_first"]["evidence_recall"]["mean"] == pytest.approx(0.375)

    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["summary"]["categories"]["locomo_first"]["5"]["f1"] == 0.5
    md = markdown_report(res)
    assert "| RAG | 1 multi-hop (n=1) | 2 temporal (n=1) | 4 single-hop (n=1) | 5 adversarial (n=2) | all (n=5) |" in md
    assert "| locomo_first | 50.0 / 0.0 | 80.0 / 0.0 | 100.0 / 100.0 | 50.0 / 50.0 | 66.0 / 40.0 |" in md
    assert "| locomo_first | 0.0 | 50.0 | 100.0 | 0.0 | 37.5 |" in md  # evidence recall per category
    assert "Evidence R (95% CI)" in md


def test_locomo_answer_prompt_allows_abstaining(tmp_path: Path, config: Config) -> None:
    llm = AnsweringLLM()
    _run(tmp_path, config, "o", llm=llm)
    # the short answer form (the default for locomo) keeps the abstain instruction before "Short answer:"
    assert len(llm.prompts) == 5 and all(p.endswith(f"{ABSTAIN}\nShort answer:") for p in llm.prompts)
    default = AnsweringLLM()
    _run(tmp_path, config, "d", llm=default, answer_form="default")
    assert len(default.prompts) == 5 and all(p.endswith(ABSTAIN) for p in default.prompts)


def test_no_abstain_asks_as_locomos_released_evaluation(tmp_path: Path, config: Config) -> None:
    llm = AnsweringLLM()
    _run(tmp_path, config, "n", llm=llm, abstain=False)
    assert len(llm.prompts) == 5 and not any(ABSTAIN in p for p in llm.prompts)
    assert all(p.endswith("\nShort answer:") for p in llm.prompts)
    assert any("(a) Not mentioned in the conversation" in p or "(b) Not mentioned" in p for p in llm.prompts)
    assert json.loads((tmp_path / "n" / "run.json").read_text())["abstain"] is False


def test_workers_give_the_records_of_one_worker_in_order(tmp_path: Path, config: Config) -> None:
    keys = ("question_id", "answer", "em", "f1", "evidence_recall", "evidence_covered", "context", "tokens")
    one = [{k: r[k] for k in keys} for r in _run(tmp_path, config, "w1").records]
    two = [{k: r[k] for k in keys} for r in _run(tmp_path, config, "w2", workers=2).records]
    assert one == two
    lines = [json.loads(x) for x in (tmp_path / "w2" / "records.jsonl").read_text().splitlines()]
    assert [r["question_id"] for r in lines] == [r["question_id"] for r in one]


def test_per_category_tables_and_running_note() -> None:
    records = [
        {"strategy": "a", "category": "10", "f1": 1.0, "em": 1.0},
        {"strategy": "a", "category": "2", "f1": 0.5, "em": 0.0, "evidence_recall": 1.0},
        {"strategy": "b", "category": "2", "f1": 0.0, "em": 0.0},
    ]
    table = per_category(records, ["a", "b"])
    assert list(table["a"]) == ["2", "10", "all"]  # numeric order
    assert table["b"]["10"] == {
        "n": 0,
        "f1": None,
        "em": None,
        "accuracy": None,
        "evidence_recall": None,
        "recall@5": None,
    }
    assert table["a"]["all"]["f1"] == 0.75
    lines = category_tables(table, "qasper")
    assert "| RAG | 2 (n=1) | 10 (n=1) | all (n=2) |" in lines
    assert "| b | 0.0 / 0.0 | — / — | 0.0 / 0.0 |" in lines
    assert per_category([{"strategy": "a", "category": None, "f1": 1.0}], ["a"]) == {}
    assert running_note(records) == "F1 50.0 · EM 33.3 · EvR 100.0"
    assert running_note([]) == ""


def test_note_advance_only_passes_the_note_to_bars_that_take_it() -> None:
    seen: list[Any] = []

    def old(n: int = 1) -> None:
        seen.append(n)

    def new(n: int = 1, *, tokens: int = 0, note: str | None = None) -> None:
        seen.append((n, note))

    note_advance(old)(1, "F1 1.0")
    note_advance(new)(1, "F1 1.0")
    assert seen == [1, (1, "F1 1.0")]


@pytest.mark.parametrize(
    ("category", "prediction", "gold", "f1"),
    [
        ("4", "running dogs", "dog runs", 1.0),  # Porter stems: run, dog
        ("4", "The cat, and the hat", "cat hat", 1.0),  # commas, articles and "and" removed
        ("2", "7 May 2023", "7 May, 2023", 1.0),
        ("1", "Paris, London", "London, Berlin", 0.5),  # mean over gold parts of the best predicted part
        ("3", "a painter", "painter; maybe a sculptor", 1.0),  # the gold's first ;-part
        ("5", "It is not mentioned in the conversation.", "Not mentioned", 1.0),
        ("5", "No information available", "x", 1.0),
        ("5", "I do not know", "x", 0.0),  # the official rule accepts only its two phrases
    ],
)
def test_locomo_official_scoring(category: str, prediction: str, gold: str, f1: float) -> None:
    from gemrag.eval.locomo_scoring import locomo_f1

    assert locomo_f1(prediction, gold, category) == pytest.approx(f1)
    assert score_free_form("locomo", _q(category, gold), prediction)[1] == pytest.approx(f1)


def test_locomo_plots_include_evidence_recall(tmp_path: Path, config: Config) -> None:
    # evidence recall is a LoCoMo metric of results.json; its plot once raised KeyError after results were written
    _run(tmp_path, config, "p", plots=True)
    assert (tmp_path / "p" / "evidence_recall.png").stat().st_size > 1000
    assert (tmp_path / "p" / "f1.png").is_file()
