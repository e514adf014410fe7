"""Multiple choice with its options in the query (``[answer] choice_retrieval``): the merge of per-option rankings,
the three modes, ``Memory.ask`` with choices, and an evaluation run that retrieves per option and records it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_eval_adversarial import SEEN  # its locomo_seen strategy records the queries it is asked
from test_view_data import build_gem_memory

from fakes import HashEmbedder, ScriptedLLM
from gemrag.config import AnswerSettings, Config, load_config
from gemrag.eval.protocol import answer_settings_fingerprint
from gemrag.eval.runner import run_eval
from gemrag.memory.choice_queries import merge_ranked, option_query, retrieve_for_choices
from gemrag.strategies.base import WARM_UP
from gemrag.types import Hit
from test_memory import DOC_A

QUESTION = "Which of these happened?"
CHOICES = ["one night the lamp failed and Amos climbed the tower", "ladybirds ate the aphids", "a cat sang"]


def hits(*ids: int) -> list[Hit]:
    """Hits for node ``ids``, ranked in the order given, each scored by its id (to tell which list it came from)."""
    return [Hit(i, "chunk", float(i), f"node {i}", rank) for rank, i in enumerate(ids)]


def test_merge_takes_each_lists_best_first_and_keeps_a_node_once() -> None:
    merged = merge_ranked([hits(1, 2, 3), hits(4, 1, 5), hits(6, 7, 8)], 4)
    assert [h.node_id for h in merged] == [1, 4, 6, 2]  # depth 0 of every list, then list 0's depth 1
    assert [h.rank for h in merged] == [0, 1, 2, 3]  # re-ranked in the merged order
    assert [h.node_id for h in merge_ranked([hits(1, 2), hits(1, 3), hits(1, 2)], 3)] == [1, 2, 3]  # 1 once
    assert merge_ranked([hits(1), hits()], 5) == hits(1)  # fewer hits than the size: all of them
    assert merge_ranked([], 3) == [] and merge_ranked([hits(1, 2)], 0) == []


class Recorder:
    """A retrieval that records its queries and returns, per query, the hits given for it (else none)."""

    def __init__(self, answers: dict[str, list[Hit]]) -> None:
        self.answers: dict[str, list[Hit]] = answers
        self.queries: list[str] = []

    def __call__(self, query: str) -> list[Hit]:
        self.queries.append(query)
        return self.answers.get(query, [])


def test_question_mode_and_free_form_questions_retrieve_for_the_question_alone() -> None:
    for mode, choices in (("question", CHOICES), ("each", None), ("joined", None), ("each", [])):
        rec = Recorder({QUESTION: hits(9, 8)})
        assert retrieve_for_choices(rec, QUESTION, choices, mode) == hits(9, 8)  # type: ignore[arg-type]
        assert rec.queries == [QUESTION]


def test_joined_mode_asks_once_with_every_option() -> None:
    rec = Recorder({f"{QUESTION} {CHOICES[0]} ladybirds ate the aphids a cat sang": hits(5)})
    assert retrieve_for_choices(rec, QUESTION, CHOICES, "joined") == hits(5)
    assert rec.queries == [option_query(QUESTION, *CHOICES)]


def test_each_mode_asks_once_per_option_and_merges_to_the_budget() -> None:
    ranked = [(1, 2, 6), (3, 1, 7), (4, 5, 8)]
    budget_3 = {option_query(QUESTION, c): hits(*ids) for c, ids in zip(CHOICES, ranked, strict=True)}
    rec = Recorder(budget_3)
    got = retrieve_for_choices(rec, QUESTION, CHOICES, "each")
    assert rec.queries == [f"{QUESTION} {c}" for c in CHOICES]
    assert [h.node_id for h in got] == [1, 3, 4]  # every option's best, as many as one retrieval returns
    budget_2 = {q: h[:2] for q, h in budget_3.items()}
    got = retrieve_for_choices(Recorder(budget_2), QUESTION, CHOICES, "each")
    assert [h.node_id for h in got] == [1, 3]  # the budget cuts: the third option's best does not fit
    with pytest.raises(ValueError, match="choice_retrieval must be one of"):
        retrieve_for_choices(rec, QUESTION, CHOICES, "both")  # type: ignore[arg-type]


def test_option_query_trims_and_skips_empty_parts() -> None:
    assert option_query(" Why? ", "", " the mutiny ") == "Why? the mutiny"
    assert option_query("Why?") == "Why?"


@pytest.mark.parametrize("mode", ["question", "joined", "each"])
def test_ask_with_choices_retrieves_as_the_setting_says(tmp_path: Path, config: Config, mode: str) -> None:
    config = config.model_copy(update={"answer": AnswerSettings(choice_retrieval=mode)})  # type: ignore[arg-type]
    queries: list[str] = []
    with build_gem_memory(tmp_path / "m", config) as mem:
        retrieve = mem.retrieve

        def recording(question: str, *args: Any, **kwargs: Any) -> list[Hit]:
            queries.append(question)
            return retrieve(question, *args, **kwargs)

        mem.retrieve = recording  # type: ignore[method-assign]
        answer = mem.ask(QUESTION, CHOICES[:2], budget=2, strategy="dense", build=True)
        free = len(queries)
        mem.ask("Who climbed the tower?", budget=2, strategy="dense", build=True)  # free form: as written
    assert queries[free:] == ["Who climbed the tower?"]
    expected = {
        "question": [QUESTION],
        "joined": [option_query(QUESTION, *CHOICES[:2])],
        "each": [option_query(QUESTION, c) for c in CHOICES[:2]],
    }[mode]
    assert queries[:free] == expected
    assert len(answer.hits) == 2 and [h.rank for h in answer.hits] == [0, 1]
    if mode == "each":  # each option brought its own passage: the lamp's and the ladybirds'
        shown = " ".join(h.text for h in answer.hits)
        assert "lamp failed" in shown and "ladybirds" in shown


def test_the_setting_is_read_checked_and_recorded() -> None:
    assert load_config(sets=["answer.choice_retrieval=each"]).answer.choice_retrieval == "each"
    assert load_config().answer.choice_retrieval == "question"
    with pytest.raises(Exception, match="choice_retrieval"):
        load_config(sets=["answer.choice_retrieval=options"])
    assert answer_settings_fingerprint(AnswerSettings(choice_retrieval="each")) == {"choice_retrieval": "each"}
    assert answer_settings_fingerprint(AnswerSettings()) == {}  # directories answered before it resume


def test_an_evaluation_retrieves_per_option_and_records_the_setting(tmp_path: Path, config: Config) -> None:
    line = {
        "article_id": "light",
        "set_unique_id": "light_1",
        "title": "The Keeper",
        "article": DOC_A,
        "questions": [
            {"question_unique_id": "q1", "question": QUESTION, "options": CHOICES, "gold_label": 1, "difficult": 0}
        ],
    }
    path = tmp_path / "quality_tiny.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    each = config.model_copy(update={"answer": AnswerSettings(choice_retrieval="each")})
    SEEN.clear()
    out = tmp_path / "out"
    run_eval(
        "quality", path, ["locomo_seen"], config=each, budget=2, out_dir=out, llm=ScriptedLLM(), embedder=HashEmbedder()
    )
    assert [q for q in SEEN if q != WARM_UP] == [option_query(QUESTION, c) for c in CHOICES]  # not the warm-up
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["answer_settings"] == {"choice_retrieval": "each"}
    record = json.loads((out / "records.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert record["context_hits"] == 1 and record["choice"] is not None  # the one chunk, kept once
