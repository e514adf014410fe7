"""Reading strategies of an answer (``[answer] reading``, ``shape``, ``samples``): the quote and notes forms, quotes
checked against their passages, context shaping (duplicates, trimming, order) and self-consistency votes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fakes import HashEmbedder, ScriptedLLM
from gemrag.answers.answer import Answer
from gemrag.answers.answering import answer_question
from gemrag.answers.consistency import most_consistent, token_f1
from gemrag.answers.evidence import cited_evidence, passage_evidence
from gemrag.answers.prompts import answer_prompt
from gemrag.answers.reading import (
    NOT_FOUND,
    SPAN_MAX_TOKENS,
    Reading,
    aid_prompt,
    locate_quote,
    locate_span,
    parse_quotes,
    read_span,
    reading_prompt,
    split_answer,
)
from gemrag.answers.shaping import GAP, Shaping, edges_order, evidence_score, shape_context, trim_passages
from gemrag.answers.streaming import answer_stream
from gemrag.config import load_config
from gemrag.memory.asking import reading_of
from gemrag.models.base import Completion, Message, Usage
from gemrag.models.meter import UsageMeter
from gemrag.store import Store
from gemrag.types import Hit

HITS = [
    Hit(1, "chunk", 0.9, "Marta sold her boat to Ivo in 1998. The harbour was quiet that year."),
    Hit(2, "chunk", 0.5, "Ivo painted the boat red. He named it Kestrel."),
]


class Replies(ScriptedLLM):
    """Answers call i with ``replies[i]`` (the last one repeated) and records every call's messages and options."""

    def __init__(self, *replies: str) -> None:
        super().__init__()
        self.replies, self.seen = list(replies), []  # type: list[tuple[Sequence[Message], dict[str, Any]]]

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        self.seen.append((messages, kwargs))
        reply = self.replies[min(len(self.seen) - 1, len(self.replies) - 1)]
        return Completion(reply, None, Usage(prompt_tokens=10, completion_tokens=3, seconds=0.0, calls=1))


def _ask(tmp_path: Path, llm: Replies, reading: Reading, hits: list[Hit] = HITS, **options: Any) -> Any:
    store = Store(tmp_path / "m")
    try:
        return answer_question(
            lambda: llm, UsageMeter(), store, "Who bought the boat?", hits, reading=reading,
            embedder=HashEmbedder(), **options,
        )  # fmt: skip
    finally:
        store.close()


def test_quote_then_answer_cites_the_verified_quotes(tmp_path: Path) -> None:
    llm = Replies('[1] "Marta sold her boat to Ivo in 1998."\n[2] "Ivo owned a plane."\nAnswer: Ivo')
    answer = _ask(tmp_path, llm, Reading("quote"), short=True)
    assert answer.text == "Ivo"
    assert [(q.passage, q.verified) for q in answer.quotes] == [(1, True), (2, False)]  # passage 2 never says it
    quote = answer.quotes[0]
    assert HITS[0].text[quote.start : quote.end] == "Marta sold her boat to Ivo in 1998."
    assert answer.cited == [1]  # only the verified quote's passage
    ((messages, kwargs),) = llm.seen
    assert 'as [n] "sentence"' in messages[1]["content"] and kwargs["max_tokens"] >= 256
    assert answer.reading["form"] == "quote"


def test_notes_form_answers_after_its_notes(tmp_path: Path) -> None:
    llm = Replies("[1] Note: Marta sold the boat to Ivo.\n[2] Note: nothing relevant.\nAnswer: Ivo, in 1998.")
    answer = _ask(tmp_path, llm, Reading("notes"), short=True)
    assert answer.text == "Ivo, in 1998" and answer.quotes == []
    assert "short note for each passage" in llm.seen[0][0][1]["content"]


def test_plain_reading_keeps_todays_prompt(tmp_path: Path) -> None:
    llm = Replies("Ivo.")
    answer = _ask(tmp_path, llm, Reading())
    assert llm.seen[0][0] == answer_prompt("Who bought the boat?", [h.text for h in HITS])
    assert answer.reading == {} and answer.quotes == []


def test_multiple_choice_reads_first_then_chooses(tmp_path: Path) -> None:
    llm = Replies('[1] "Marta sold her boat to Ivo in 1998."', '{"answer": "B"}')
    answer = _ask(tmp_path, llm, Reading("quote"), choices=["Marta", "Ivo"])
    assert answer.choice == 1 and len(llm.seen) == 2
    assert "Options" not in llm.seen[0][0][1]["content"]  # the reading does not see the options
    assert "Sentences quoted from the context:" in llm.seen[1][0][1]["content"]
    assert answer.quotes[0].verified


def test_self_consistency_keeps_the_agreed_answer(tmp_path: Path) -> None:
    llm = Replies("Marta", "Ivo the painter", "Ivo")
    answer = _ask(tmp_path, llm, Reading(samples=3, temperature=0.7), short=True)
    assert answer.text == "Ivo the painter" or answer.text == "Ivo"
    assert answer.text != "Marta" and answer.reading["votes"] == ["Marta", "Ivo the painter", "Ivo"]
    assert [kw["seed"] for _, kw in llm.seen] == [1, 2, 3] and all(kw["temperature"] == 0.7 for _, kw in llm.seen)


def test_a_reading_other_than_plain_is_not_streamed(tmp_path: Path) -> None:
    store = Store(tmp_path / "m")
    llm = Replies('[1] "Marta sold her boat to Ivo in 1998."\nAnswer: Ivo bought it.')
    items = list(answer_stream(lambda: llm, UsageMeter(), store, "Who?", HITS, reading=Reading("quote")))
    store.close()
    assert items[0] == "Ivo bought it." and items[-1].cited == [1]


@pytest.mark.parametrize(
    ("text", "reading", "answer"),
    [
        ('[1] "a"\nAnswer: Ivo', '[1] "a"\n', "Ivo"),
        ("[1] x\n**Answer:** Ivo", "[1] x\n", "Ivo"),
        ("[1] Note: x\nIvo", "[1] Note: x\nIvo", "Ivo"),
        ("", "", ""),
    ],
)
def test_split_answer(text: str, reading: str, answer: str) -> None:
    assert split_answer(text) == (reading, answer)


def test_quotes_name_real_passages_only() -> None:
    assert parse_quotes('[1] "Marta sold it."\n[7] "Out of range."\n- [2]: “Ivo painted it.”\n[1] ""', 2) == [
        (1, "Marta sold it."),
        (2, "Ivo painted it."),
    ]


def test_locate_quote_tolerates_a_changed_word_not_a_made_up_sentence() -> None:
    passage = HITS[0].text
    assert locate_quote("marta sold her boat to ivo in 1998.", passage) == (0, 35)
    s, e = locate_quote("Marta sold the boat to Ivo in 1998", passage)  # one word changed: the sentence
    assert passage[s:e] == "Marta sold her boat to Ivo in 1998."
    assert locate_quote("Ivo flew to Oslo with his sister.", passage) is None


def test_edges_order_puts_the_best_at_both_ends() -> None:
    assert edges_order(5) == [0, 2, 4, 3, 1] and edges_order(2) == [0, 1] and edges_order(0) == []


class Keyword:
    """An embedder whose vectors say only whether a text holds 'boat' (question and matching sentences align)."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.array([[1.0, 0.0] if "boat" in t.lower() else [0.0, 1.0] for t in texts], dtype=np.float32)
        return rows


def test_trimming_keeps_matching_sentences_and_marks_gaps() -> None:
    text = "The sky was grey. Marta sold the boat. Gulls cried. Rain fell. Ivo sailed the boat home."
    (trimmed,) = trim_passages("Who has the boat?", [text], Keyword(), keep_min=1, margin=0.1)
    assert trimmed == f"{GAP} Marta sold the boat. {GAP} Ivo sailed the boat home."
    with pytest.raises(ValueError):
        trim_passages("q", [text], Keyword(), keep_min=0)


def test_shaping_drops_duplicates_and_reorders(tmp_path: Path) -> None:
    hits = [HITS[0], Hit(3, "summary", 0.4, "Marta sold her boat to Ivo."), HITS[1]]
    shaped = shape_context("boat", hits, Keyword(), Shaping(trim=False, order="edges"))
    assert shaped.dropped == [3] and [h.node_id for h in shaped.hits] == [1, 2]
    shaped = shape_context("boat", [HITS[0], HITS[1], Hit(4, "chunk", 0.1, "Other.")], None, Shaping(trim=False))
    assert [h.node_id for h in shaped.hits] == [1, 4, 2]  # best first, second best last
    with pytest.raises(ValueError, match="embedder"):
        shape_context("boat", hits, None, Shaping(trim=True))


def test_shaped_answer_cites_the_hits_as_shown(tmp_path: Path) -> None:
    hits = [HITS[0], HITS[1], Hit(4, "chunk", 0.1, "Nothing about it.")]
    llm = Replies("Ivo [2]")
    answer = _ask(tmp_path, llm, Reading(shaping=Shaping(trim=False)), hits=hits, cite=True)
    assert [h.node_id for h in answer.hits] == [1, 4, 2] and answer.citations[0].node_id == 4
    assert "[2] Nothing about it." in llm.seen[0][0][1]["content"]
    assert answer.reading["words_before"] == answer.reading["words_after"]


def test_votes() -> None:
    assert token_f1("the Ivo", "Ivo") == 1.0 and token_f1("", "") == 1.0 and token_f1("a", "Ivo") == 0.0
    assert most_consistent(["Marta", "Ivo", "Ivo Kos"]) == 1
    with pytest.raises(ValueError):
        most_consistent([])


def test_settings_build_the_reading() -> None:
    cfg = load_config(overrides={"answer": {"reading": "quote", "shape": True, "shape_order": "rank", "samples": 3}})
    reading = reading_of(cfg.answer)
    assert reading.form == "quote" and reading.samples == 3 and reading.shaping == Shaping(order="rank")
    assert reading_of(load_config().answer).plain
    with pytest.raises(Exception, match="reading"):
        load_config(overrides={"answer": {"reading": "skim"}})


def test_reading_prompt_refuses_plain() -> None:
    with pytest.raises(ValueError):
        reading_prompt("q", ["t"], "plain", short=True, abstain=False)


def test_weak_evidence_abstains_without_a_call(tmp_path: Path) -> None:
    llm = Replies("Ivo")
    hits = [Hit(1, "chunk", 0.9, "Gulls cried over the harbour. Rain fell.")]
    answer = _ask(tmp_path, llm, Reading(abstain_below=0.5), hits=hits, short=True)
    assert answer.text == NOT_FOUND and llm.seen == [] and answer.reading["abstained"]
    strong = _ask(tmp_path, llm, Reading(abstain_below=-0.5), hits=hits, short=True)  # every cosine is above -0.5
    assert strong.text == "Ivo" and "abstained" not in strong.reading and "evidence" in strong.reading


def test_evidence_score_is_the_best_sentence_cosine() -> None:
    assert evidence_score("boat?", ["Rain fell. Marta sold the boat."], Keyword()) == pytest.approx(1.0)
    assert evidence_score("boat?", ["Rain fell."], Keyword()) == pytest.approx(0.0)
    assert evidence_score("boat?", [], Keyword()) == -1.0


def test_each_cited_passage_has_its_own_evidence_score() -> None:
    assert passage_evidence("boat?", ["Rain fell. Marta sold the boat.", "Rain fell.", ""], Keyword()) == [
        pytest.approx(1.0),
        pytest.approx(0.0),
        -1.0,
    ]
    hits = [Hit(1, "chunk", 0.1, "Marta sold the boat."), Hit(2, "chunk", 9.0, "Gulls cried."), Hit(3, "chunk", 5, "x")]
    answer = Answer("Marta sold it [1], gulls cried [2].", None, hits, 0.0, 0.0, cited=[1, 2])
    assert cited_evidence("Who sold the boat?", answer, Keyword()) == {1: 1.0, 2: 0.0}  # not the strategy's scores
    uncited = Answer("Marta.", None, hits, 0.0, 0.0)
    assert cited_evidence("Who sold the boat?", uncited, Failing()) == {}  # nothing cited: no embedder call


class Failing:
    """An embedder that must not be called."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise AssertionError("the embedder was called")


def test_span_reading_answers_with_the_passage_words_and_cites_them(tmp_path: Path) -> None:
    llm = Replies("ivo   painted the boat.\nIt was red.")  # case and spacing differ from the passage
    answer = _ask(tmp_path, llm, Reading("span"), short=True)
    assert answer.text == "Ivo painted the boat" and answer.cited == [2]
    (quote,) = answer.quotes
    assert HITS[1].text[quote.start : quote.end] == "Ivo painted the boat" and answer.reading["form"] == "span"
    ((messages, kwargs),) = llm.seen
    assert messages[1]["content"].endswith("Copied words:") and kwargs["max_tokens"] == SPAN_MAX_TOKENS


def test_span_reading_prefers_the_named_passage_and_keeps_unfound_words_uncited(tmp_path: Path) -> None:
    moved = _ask(tmp_path, Replies('[2] "in 1998"'), Reading("span"), short=True)
    assert moved.text == "in 1998" and moved.cited == [1] and moved.quotes[0].passage == 1
    made_up = _ask(tmp_path, Replies('[1] "a blue yacht"'), Reading("span"), short=True)
    assert made_up.text == "a blue yacht" and made_up.cited == [] and not made_up.quotes[0].verified
    unnamed = _ask(tmp_path, Replies("A blue yacht."), Reading("span"), short=True)
    assert unnamed.text == "A blue yacht" and unnamed.quotes == [] and unnamed.cited == []


SPAN_HITS = [HITS[0].text, HITS[1].text, "The boat went to Ivo."]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("98", ("98", (1, 32, 34))),  # short answers are kept (quotes need 3 characters)
        ("Copied words: “sold her boat”", ("sold her boat", (1, 6, 19))),
        ("kestrel [2]", ("Kestrel", (2, 38, 45))),
        ("Kes", ("Kes", (2, 38, 41))),  # a part of a word is where the passage writes it
        ("[3] the boat", ("The boat", (3, 0, 8))),  # the named passage first, though passage 2 has it too
        ("the boat", ("the boat", (2, 12, 20))),  # else the first passage that has it
    ],
)
def test_read_span(reply: str, expected: tuple[str, tuple[int, int, int]]) -> None:
    words, quote = read_span(reply, SPAN_HITS)
    assert quote is not None
    assert (words, (quote.passage, quote.start, quote.end)) == expected
    assert locate_span("", SPAN_HITS, 1) is None and read_span("  \n", SPAN_HITS) == ("", None)


def test_multiple_choice_reads_plainly_under_the_span_reading(tmp_path: Path) -> None:
    llm = Replies('{"answer": "B"}')
    answer = _ask(tmp_path, llm, Reading("span"), choices=["Marta", "Ivo"])
    assert answer.choice == 1 and len(llm.seen) == 1 and "copied words" not in llm.seen[0][0][1]["content"]
    assert answer.reading["form"] == "plain"
    with pytest.raises(ValueError, match="span"):
        aid_prompt("q", ["t"], "span")


def test_json_surfaces_carry_the_span(tmp_path: Path) -> None:
    from dataclasses import replace

    from gemrag.answers.provenance import describe_answer
    from gemrag.server.serialize import answer_out
    from gemrag.types import Provenance

    hits = [replace(h, provenance=Provenance()) for h in HITS]
    answer = _ask(tmp_path, Replies("Kestrel"), Reading("span"), hits=hits, short=True)
    for quotes in (describe_answer(None, answer, "dense").quotes, answer_out(answer, "dense").quotes):
        assert [q.model_dump() for q in quotes] == [
            {"passage": 2, "text": "Kestrel", "start": 38, "end": 45, "verified": True}
        ]
    plain = _ask(tmp_path, Replies("Ivo"), Reading(), hits=hits, short=True)
    assert describe_answer(None, plain, "dense").quotes == []
