"""Verified citations: each answer sentence checked against the passages it cites (entailment by the LLM, token
overlap for short sentences), flagged or dropped by ``[answer] verify``, on every surface (``Memory.ask``, the
stream's final Answer, ``--json``/MCP's description, the server's payload, the CLI's mark). Unit tests with the test
doubles of tests/fakes.py (the fake judges a sentence supported iff the cited passages hold its long words)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.answers.answer import Answer, SentenceCheck
from gemrag.answers.evidence import best_sentence_cosines
from gemrag.answers.provenance import describe_answer
from gemrag.answers.verification import (
    _match_by_overlap,
    add_citations,
    answer_sentences,
    drop_unsupported,
    entailment_prompt,
    is_reference,
    overlap_support,
    post_hoc_citations,
    verify_answer,
)
from gemrag.cli.ask import UNSUPPORTED_MARK, marked, verification_lines
from gemrag.config import AnswerSettings, Config, load_config
from gemrag.models.base import Completion, Message, Usage
from gemrag.models.cache import CachedEmbedder, CachedLLM
from gemrag.models.meter import UsageMeter
from gemrag.prompting import strip_citations
from gemrag.types import Hit
from test_memory import DOC_A

HITS = [
    Hit(11, "chunk", 0.9, "The keeper Ansel Brandt lit the lamp every evening at dusk.", 0),
    Hit(12, "chunk", 0.5, "The supply boat came from Port Hollow once a month with oil and bread.", 1),
]
SUPPORTED = "Ansel Brandt lit the lamp every evening [1]."
UNSUPPORTED = "The supply boat brought golden crowns every week [2]."


class _Store:
    """The LLM cache (a dict) and the failures of a memory's store."""

    def __init__(self) -> None:
        self.failures: list[tuple[str, str]] = []
        self.cache: dict[str, dict[str, Any]] = {}

    def record_failure(self, phase: str, node_id: int | None, message: str) -> None:
        self.failures.append((phase, message))

    def get_llm(self, key: str) -> dict[str, Any] | None:
        return self.cache.get(key)

    def put_llm(self, key: str, model: str, response: dict[str, Any]) -> None:
        self.cache[key] = response

    def get_embeddings(self, model: str, keys: list[str]) -> dict[str, np.ndarray]:
        return {}

    def put_embeddings(self, model: str, items: Any) -> None:
        pass


def _answer(text: str, cited: list[int], hits: list[Hit] = HITS) -> Answer:
    return Answer(text, None, list(hits), 0.0, 0.0, Usage(prompt_tokens=100, completion_tokens=20, calls=1), cited)


def _verify(answer: Answer, mode: str = "flag", llm: Any = None, **kw: Any) -> tuple[Answer, Any, _Store]:
    llm = llm or ScriptedLLM()
    store, meter = _Store(), UsageMeter()
    cached = CachedLLM(llm, store, meter)  # as the memory's LLM: cached and metered
    if isinstance(kw.get("embedder"), HashEmbedder):  # as the memory's embedder: metered
        kw["embedder"] = CachedEmbedder(kw["embedder"], store, meter)  # type: ignore[arg-type]
    out = verify_answer(lambda: cached, meter, store, "Who lit the lamp?", answer, mode, **kw)  # type: ignore[arg-type]
    return out, llm, store


def test_sentences_are_split_with_their_own_markers() -> None:
    text = "Ansel lit it [1]. The boat came. [2] Then:\n- oil [1, 2]\n- bread [9]\n[2]."
    found = answer_sentences(text, 2)
    assert [s.text for s in found] == [
        "Ansel lit it [1].",
        "The boat came. [2]",
        "Then:",
        "- oil [1, 2]",
        "- bread [9]",
    ]
    assert [s.cited for s in found] == [[1], [2], [], [1, 2], []]  # [9] names no passage; a lone marker is no sentence
    assert all(text[s.start : s.end] == s.text for s in found)
    assert answer_sentences("3.5 kg of oil, e.g. in cans [1].", 1)[0].text == "3.5 kg of oil, e.g. in cans [1]."
    assert answer_sentences("", 2) == [] and answer_sentences("[1].", 2) == []
    coded = "It is the strain BCV (accession no. KU886219), 100% identical. The answer is no. Done."
    assert [s.text for s in answer_sentences(coded, 1)] == [
        "It is the strain BCV (accession no. KU886219), 100% identical.",
        "The answer is no.",
        "Done.",
    ]
    # a numbered list's item is one sentence with its number (and a marker the model put after the number)
    listed = answer_sentences("They are:\n1. Oil [1]\n2. [2] bread, sent monthly.\nCount: 10. 2. Done.", 2)
    assert [(s.text, s.cited) for s in listed] == [
        ("They are:", []),
        ("1. Oil [1]", [1]),
        ("2. [2] bread, sent monthly.", [2]),
        ("Count: 10.", []),
        ("2.", []),  # not at the start of a line: the number ends no item
        ("Done.", []),
    ]


def test_a_marker_on_the_next_line_belongs_to_the_sentence_its_line_goes_on_with() -> None:
    # a 1.5B's answer: the marker opening the next paragraph is that paragraph's source, not the sentence before
    text = "The orf1ab gene is at the 5' end.\n\n[1] states that it is located at the 5= side of the genome."
    assert [(s.text, s.cited) for s in answer_sentences(text, 2)] == [
        ("The orf1ab gene is at the 5' end.", []),
        ("[1] states that it is located at the 5= side of the genome.", [1]),
    ]
    # alone on its line, or after the stop on the same line, the marker stays with the sentence before
    assert [(s.text, s.cited) for s in answer_sentences("It is 30 kb.\n[2]\nIt has genes. [1] More.", 2)] == [
        ("It is 30 kb.\n[2]", [2]),
        ("It has genes. [1]", [1]),
        ("More.", []),
    ]


def test_overlap_counts_the_sentences_own_words() -> None:
    passage = "The keeper Ansel Brandt lit the lamps every evening."
    assert overlap_support("Ansel Brandt [1].", passage, "Who lit the lamp?") == 1.0
    assert overlap_support("Vale [1].", passage, "Who lit the lamp?") == 0.0
    # the question's words earn nothing: only "vale" is the sentence's own, and the passage lacks it
    assert overlap_support("Vale lit the lamp.", passage, "Who lit the lamp?") == 0.0
    assert overlap_support("The lamp.", passage, "Who lit the lamp?") == 1.0  # all words in the question: all count
    assert overlap_support("The.", passage) == 0.0


def test_the_reading_frame_and_abbreviations_do_not_count_against_a_sentence() -> None:
    # a 1.5B's answer over a dated conversation turn, flagged by overlap before (4 of its 7 own words covered)
    passage = "(date: 20 July 2023) Caroline: I just joined a new LGBTQ activist group last Tues (= 18 July 2023)."
    question = "When did Caroline join a new activist group?"
    sentence = "Based on the context, Caroline joined a new activist group on Tuesday, July 18, 2023."
    assert overlap_support(sentence, passage, question) == 1.0
    assert overlap_support(sentence.replace("Tuesday", "Friday"), passage, question) == 0.75  # "joined": the question's
    for framed in (
        "According to passage [2], the lamps were lit by Ansel Brandt [2].",
        "The passage [2] states that Ansel Brandt lit the lamps [2].",
        "As mentioned in the provided context, Ansel Brandt lit the lamps.",
        "[2] states that Ansel Brandt lit the lamps.",  # a marker opening the sentence as its source
    ):
        assert overlap_support(framed, "The keeper Ansel Brandt lit the lamps every evening.") == 1.0, framed
    framed = "This is stated in the first passage [1], where it is mentioned that Liew detected 9 antigens [1]."
    assert overlap_support(framed, "Liew validated one ELISA for the detection of 9 antigens.") == 1.0  # stems
    assert overlap_support("2. Varicella zoster virus", "varicella zoster virus (VZV)") == 1.0  # a list item's number
    # a marker inside the claim is no frame: its verb is the claim's ("shows" is not in the passage)
    assert overlap_support("The keeper [1] shows lamps.", "The keeper lit the lamps.") == 2 / 3
    # the frame is no claim; what the sentence does claim still counts against it
    assert overlap_support("Based on the context, Vale lit them.", "Ansel Brandt lit the lamps.") == 0.5
    # "in the context of ..." loses only the frame's words: what follows still counts
    assert overlap_support("Spread rose in the context of hospitals.", "Spread rose.") == 2 / 3
    # a month's abbreviation reads as the month; an uncapitalized "sat" or "sun" is a word, not a day
    assert overlap_support("It began in Sept 2020.", "It began in September 2020.") == 1.0
    assert overlap_support("The cat sat in the sun.", "On Saturday and Sunday the cat rested.") == 1 / 3


def test_the_entailment_prompt_shows_only_the_cited_passages_and_the_sentence_without_markers() -> None:
    messages = entailment_prompt("Who?", "Ansel lit it [1].", ["passage one"])
    user = messages[1]["content"]
    assert "passage one" in user and "Answer sentence: Ansel lit it.\n" in user and "[1]" not in user
    assert '{"supported": true}' in user


def test_an_unsupported_sentence_is_flagged_and_its_check_counted_in_the_usage() -> None:
    answer = _answer(f"{SUPPORTED} {UNSUPPORTED}", [1, 2])
    # every sentence of more than 6 words to the model; no re-citation (its extra check: tests/test_recitation.py)
    out, llm, _ = _verify(answer, overlap_first=False, miscited="flag")
    assert out.text == answer.text and out.cited == [1, 2]  # flag changes nothing but the checks
    assert [(c.supported, c.method, c.cited) for c in out.verification] == [
        (True, "entailment", [1]),
        (False, "entailment", [2]),
    ]
    assert [c.sentence for c in out.unsupported] == [UNSUPPORTED]
    first, second = out.verification
    assert (first.start, first.end, second.start) == (0, len(SUPPORTED), len(SUPPORTED) + 1)
    assert llm.calls == 2 and out.verification_usage.calls == 2
    assert out.usage.calls == 3 and out.usage.prompt_tokens == 100 + out.verification_usage.prompt_tokens > 100
    # the check of sentence 2 saw passage [2] only
    assert "Port Hollow" in llm.prompts[1] and "Ansel" not in llm.prompts[1].split("Question:")[0]


def test_overlap_first_flags_a_sentence_the_passage_does_not_cover_without_a_model_call() -> None:
    answer = _answer(f"{SUPPORTED} {UNSUPPORTED}", [1, 2])
    out, llm, _ = _verify(answer)  # the default: overlap first
    assert [(c.supported, c.method) for c in out.verification] == [(True, "entailment"), (False, "overlap")]
    assert llm.calls == 1 and out.verification_usage.calls == 1  # only the covered sentence went to the model
    # a covered sentence the model rejects is still flagged: overlap only ever saves a call, never clears a sentence
    covered = "The supply boat came from Port Hollow with oil [2]."
    rejected, llm, _ = _verify(_answer(covered, [2]), llm=_NoJson())
    assert llm.calls >= 1 and rejected.verification[0].method == "entailment"
    assert not rejected.verification[0].supported
    # without it the uncovered sentence costs a call, and the model's verdict decides
    model, llm, _ = _verify(answer, overlap_first=False, miscited="flag")
    assert llm.calls == 2 and [c.method for c in model.verification] == ["entailment", "entailment"]


def test_drop_removes_the_sentence_and_the_citation_only_it_made() -> None:
    out, _, _ = _verify(_answer(f"{SUPPORTED} {UNSUPPORTED}", [1, 2]), "drop")
    assert out.text == SUPPORTED and out.cited == [1] and out.citations == [HITS[0]]
    assert out.dropped_sentences == [UNSUPPORTED]
    assert [(c.start, c.end, c.supported) for c in out.verification] == [(0, len(SUPPORTED), True)]
    first, _, _ = _verify(_answer(f"{UNSUPPORTED}\n{SUPPORTED}", [1, 2]), "drop")  # the first one dropped
    assert first.text == SUPPORTED and first.verification[0].start == 0
    both, _, _ = _verify(_answer(UNSUPPORTED, [2]), "drop")
    assert both.text == "" and both.cited == [] and both.verification == []


def test_a_supported_answer_is_kept_whole_under_drop() -> None:
    answer = _answer(f"{SUPPORTED}\n\nAnsel [1].", [1])
    out, _, _ = _verify(answer, "drop")
    assert out.text == answer.text and out.cited == [1] and out.dropped_sentences == []
    assert [(c.supported, c.method) for c in out.verification] == [(True, "entailment"), (True, "overlap")]


def test_short_sentences_and_extractive_answers_are_checked_without_a_model_call() -> None:
    out, llm, _ = _verify(_answer("Ansel Brandt [1]. Vale [1].", [1]))
    assert [(c.supported, c.method) for c in out.verification] == [(True, "overlap"), (False, "overlap")]
    assert llm.calls == 0 and out.verification_usage == Usage()
    long, llm, _ = _verify(_answer(SUPPORTED, [1]), extractive=True)
    assert long.verification[0].method == "overlap" and long.verification[0].supported and llm.calls == 0
    every, llm, _ = _verify(_answer("Ansel Brandt [1].", [1]), overlap_words=0)
    assert every.verification[0].method == "entailment" and llm.calls == 1


def test_an_uncited_sentence_counts_as_unsupported_under_flag_unless_the_answer_cites_nothing() -> None:
    text = "Ansel Brandt lit the lamp every evening. The boat came from Port Hollow once a month [2]."
    embedder = HashEmbedder()
    out, llm, _ = _verify(_answer(text, [2]), uncited="flag", embedder=embedder)
    assert [(c.cited, c.supported, c.uncited) for c in out.verification] == [([], False, True), ([2], True, False)]
    assert llm.calls == 1 and embedder.calls == 0  # the uncited sentence needs no check, nor a match
    assert out.text == text and out.cited == [2] and out.verification[0].added_citation is None
    # an answer citing nothing (citing off, an agent's answer) is checked against the whole context
    whole, llm, _ = _verify(_answer(text.replace(" [2]", ""), []))
    assert [(c.cited, c.supported) for c in whole.verification] == [([], True), ([], True)] and llm.calls == 2
    assert "Port Hollow" in llm.prompts[0] and "Ansel" in llm.prompts[0]
    # no marker in the text, but citations made outside it (the quote reading's quoted passages): checked against those
    quoted, llm, _ = _verify(_answer("The boat came from Port Hollow once a month with oil.", [2]))
    assert [(c.cited, c.supported) for c in quoted.verification] == [([2], True)] and "Ansel" not in llm.prompts[0]
    nothing, _, _ = _verify(_answer("Ansel Brandt lit the lamp every evening.", [], hits=[]))
    assert [c.supported for c in nothing.verification] == [False]  # no context: nothing supports it


BOAT = "The boat came from Port Hollow once a month with oil"  # passage [2] states it; passage [1] does not


def _spans_hold(answer: Answer) -> bool:
    return all(answer.text[c.start : c.end] == c.sentence for c in answer.verification)


def test_an_uncited_sentence_is_cited_after_the_answer_with_the_passage_that_supports_it() -> None:
    embedder = HashEmbedder()
    out, llm, _ = _verify(_answer(f"{SUPPORTED} {BOAT}.", [1]), embedder=embedder)
    assert out.text == f"{SUPPORTED} {BOAT} [2]." and out.cited == [1, 2] and out.citations == HITS
    first, second = out.verification
    assert (second.cited, second.supported, second.added_citation, second.uncited) == ([2], True, 2, False)
    assert (first.cited, first.added_citation) == ([1], None) and second.sentence == f"{BOAT} [2]." and _spans_hold(out)
    assert llm.calls == 2 and embedder.calls == 1  # one check per sentence; one embedder call for the matching
    assert "Port Hollow" in llm.prompts[1] and "Ansel" not in llm.prompts[1].split("Question:")[0]
    assert out.verification_usage.calls == 3 and out.verification_usage.embedding_tokens > 0  # 2 checks, 1 embedding
    # the sentence before a cited one, matched to the first passage: the later span moves by the marker's length
    before, _, _ = _verify(_answer(f"Ansel Brandt lit the lamp at dusk every evening. {BOAT} [2].", [2]))
    assert before.text == f"Ansel Brandt lit the lamp at dusk every evening [1]. {BOAT} [2]." and _spans_hold(before)
    assert [c.added_citation for c in before.verification] == [1, None] and before.cited == [1, 2]


def test_an_uncited_sentence_no_passage_supports_stays_flagged_as_uncited() -> None:
    text = f"{SUPPORTED} The keeper sold golden crowns to passing sailors."
    out, llm, _ = _verify(_answer(text, [1]), overlap_first=False)
    assert out.text == text and out.cited == [1] and llm.calls == 2  # one check for the best match, in vain
    first, llm, _ = _verify(_answer(text, [1]))  # overlap first: the best match lacks its words, no call
    assert first.verification[1].uncited and llm.calls == 1
    bad = out.verification[1]
    assert (bad.cited, bad.supported, bad.uncited, bad.added_citation) == ([], False, True, None)
    assert out.unsupported == [bad]


def test_drop_keeps_a_sentence_cited_after_the_answer_and_drops_an_uncited_one() -> None:
    text = f"{SUPPORTED} The keeper sold golden crowns to passing sailors. {BOAT}."
    out, _, _ = _verify(_answer(text, [1]), "drop")
    assert out.text == f"{SUPPORTED} {BOAT} [2]." and out.cited == [1, 2] and _spans_hold(out)
    assert out.dropped_sentences == ["The keeper sold golden crowns to passing sailors."]
    flagged, _, _ = _verify(_answer(text, [1]), "drop", uncited="flag")  # every uncited sentence dropped
    assert flagged.text == SUPPORTED and len(flagged.dropped_sentences) == 2


def test_a_short_uncited_sentence_is_matched_and_checked_by_overlap_without_a_call() -> None:
    embedder = HashEmbedder()
    out, llm, _ = _verify(_answer(f"{SUPPORTED}\n- Port Hollow\n- golden crowns", [1]), embedder=embedder)
    assert out.text == f"{SUPPORTED}\n- Port Hollow [2]\n- golden crowns" and _spans_hold(out)
    assert [(c.added_citation, c.uncited, c.method) for c in out.verification[1:]] == [
        (2, False, "overlap"),
        (None, True, "overlap"),
    ]
    assert llm.calls == 1 and embedder.calls == 0  # only the long cited sentence went to the model


class _Synonyms:
    """An embedder knowing only that 'vessel' means 'boat': a text's vector says whether it speaks of one."""

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        ship = [any(w in t.lower() for w in ("boat", "vessel")) for t in texts]
        return np.array([[1.0, 0.0] if s else [0.0, 1.0] for s in ship], dtype=np.float32)


def test_a_long_uncited_sentence_is_matched_by_the_embedder_and_else_by_overlap() -> None:
    paraphrase = "A vessel arrived every few weeks carrying provisions."  # no content word of passage [2]
    assert post_hoc_citations("q", [paraphrase], [h.text for h in HITS], ["entailment"], _Synonyms()) == [2]
    assert post_hoc_citations("q", [paraphrase], [h.text for h in HITS], ["entailment"]) == [1]  # "every" is in [1]
    assert post_hoc_citations("q", ["Golden crowns."], [h.text for h in HITS], ["overlap"]) == [1]  # a tie: the first
    out, llm, _ = _verify(_answer(f"{SUPPORTED} {paraphrase}", [1]), embedder=_Synonyms(), overlap_first=False)
    assert "Port Hollow" in llm.prompts[1] and "Ansel" not in llm.prompts[1].split("Question:")[0]
    assert out.verification[1].uncited  # the fake judge wants the sentence's own words in the passage
    with pytest.raises(ValueError, match="passage"):
        post_hoc_citations("q", ["x"], [], ["overlap"])
    with pytest.raises(ValueError, match="verify_uncited"):
        _verify(_answer(SUPPORTED, [1]), uncited="guess")


def test_an_uncited_sentence_the_embedders_match_does_not_support_is_checked_against_the_passage_with_its_words() -> (
    None
):
    bare = "Oil and bread came from Port Hollow once a month."  # no boat: the embedder matches it with passage [1]
    assert post_hoc_citations("q", [bare], [h.text for h in HITS], ["entailment"], _Synonyms()) == [1]
    out, llm, _ = _verify(_answer(f"{SUPPORTED} {bare}", [1]), embedder=_Synonyms())
    check = out.verification[1]
    assert (check.supported, check.cited, check.added_citation, check.uncited) == (True, [2], 2, False)
    assert out.text.endswith("once a month [2].") and out.cited == [1, 2]
    assert len(llm.prompts) == 2 and "Port Hollow" in llm.prompts[1]  # [1] failed by overlap, with no call
    # a sentence neither passage supports stays uncited, after at most one more check
    wrong, llm, _ = _verify(
        _answer(f"{SUPPORTED} Oil and gold came from Port Hollow every day.", [1]), embedder=_Synonyms()
    )
    assert wrong.verification[1].uncited and len(llm.prompts) <= 2


def test_a_reference_gets_no_second_match(monkeypatch: pytest.MonkeyPatch) -> None:
    # "This is stated in the passage." cited after the answer with [1] asserts the claim before it; checked alone
    # against another passage it would take another sentence as its claim, so only the claim is checked again
    import gemrag.answers.verification as verification

    text = f"{SUPPORTED} Oil and gold came from Port Hollow every day. This is stated in the passage."
    sentences = [replace(s, cited=s.cited or [1]) for s in answer_sentences(text, 2)]
    checks = [
        SentenceCheck(sentence=s.text, start=s.start, end=s.end, cited=s.cited, supported=False, method="overlap")
        for s in sentences
    ]
    checked: list[str] = []
    real = verification.check_sentences

    def spy(llm: Any, question: str, batch: list[Any], *args: Any, **kw: Any) -> list[SentenceCheck]:
        checked.extend(s.text for s in batch)
        return real(llm, question, batch, *args, **kw)

    monkeypatch.setattr(verification, "check_sentences", spy)
    found = _match_by_overlap(
        ScriptedLLM, "Who lit the lamp?", sentences, checks, [1, 2], [h.text for h in HITS], {1: 1, 2: 2}, False, 6,
        True, _Store(),
    )  # fmt: skip
    assert checked == [sentences[1].text] and found == {} and not checks[2].supported


def test_best_sentence_cosines_is_one_row_per_query_and_one_column_per_text() -> None:
    sims = best_sentence_cosines(
        ["boat", "lamp", "sky"], ["Rain fell. The boat sank.", "", "Gulls cried."], _Synonyms()
    )
    assert sims.shape == (3, 3) and sims.dtype == np.float32
    assert sims[0].tolist() == [1.0, -1.0, 0.0] and sims[1].tolist() == [1.0, -1.0, 1.0]
    assert best_sentence_cosines([], ["A."], _Synonyms()).shape == (0, 1)


def test_a_marker_goes_before_the_final_stop_or_at_the_end() -> None:
    def added(sentence: str, n: int) -> str:
        check = SentenceCheck(
            sentence=sentence, start=0, end=len(sentence), cited=[n], supported=True, method="overlap", added_citation=n
        )
        return add_citations(sentence, [check])[0]

    assert added("It opened in 1990.", 2) == "It opened in 1990 [2]."
    assert added('He said "never!"', 1) == 'He said "never [1]!"'
    assert added("- oil and bread", 3) == "- oil and bread [3]"
    plain = SentenceCheck(sentence="A.", start=0, end=2, cited=[1], supported=True, method="overlap")
    assert add_citations("A.", [plain]) == ("A.", [plain])


def test_off_and_multiple_choice_check_nothing() -> None:
    answer = _answer(f"{SUPPORTED} {UNSUPPORTED}", [1, 2])
    off, llm, _ = _verify(answer, "off")
    assert off is answer and off.verification == [] and llm.calls == 0
    choice = Answer("Ansel Brandt", 0, list(HITS), 0.0, 0.0, cited=[1])
    assert _verify(choice)[0].verification == []
    with pytest.raises(ValueError, match="verify must be"):
        _verify(answer, "strict")
    abstained = Answer("Not found in the memory.", None, list(HITS), 0.0, 0.0, reading={"abstained": True})
    out, llm, _ = _verify(abstained)
    assert out is abstained and out.verification == [] and llm.calls == 0  # an abstention claims nothing


class _NoJson(ScriptedLLM):
    def complete(self, messages: Any, **kw: Any) -> Completion:
        self.calls += 1
        return Completion("yes, I think so", None, Usage(prompt_tokens=5, completion_tokens=4, calls=1))


def test_a_verdict_that_stays_invalid_is_unsupported_and_recorded() -> None:
    out, llm, store = _verify(_answer(SUPPORTED, [1]), llm=_NoJson())
    assert [c.supported for c in out.verification] == [False] and llm.calls == 3  # three attempts
    assert [phase for phase, _ in store.failures] == ["query/verify"]


def test_drop_unsupported_of_an_unchecked_answer_is_the_answer() -> None:
    answer = _answer(SUPPORTED, [1])
    assert drop_unsupported(answer) is answer


class _Replies(ScriptedLLM):
    """Answers the answer prompt with ``reply``; everything else (the citation checks) as ScriptedLLM."""

    def __init__(self, reply: str) -> None:
        super().__init__()
        self.reply = reply

    def complete(self, messages: list[Message], **kw: Any) -> Completion:  # type: ignore[override]
        if "Answer briefly" in messages[-1]["content"]:
            self.calls += 1
            return Completion(self.reply, None, Usage(prompt_tokens=50, completion_tokens=20, calls=1))
        return super().complete(messages, **kw)


REPLY = (
    "Amos Reed lived on Gull Island and lit the great lamp every evening [1]. "
    "The harbour master gave Amos a golden crown for his singing [1]."
)


def _memory(tmp_path: Path, verify: str, reply: str = REPLY, **answer: Any) -> Memory:
    # one chunk: the context is DOC_A as passage [1]
    settings = {"verify": verify, **answer}
    config = load_config(None, {"strategy": "dense", "memory": {"chunk_tokens": 400}, "answer": settings})
    mem = Memory.open(tmp_path / "m", config, llm=_Replies(reply), embedder=HashEmbedder())
    if not mem.store.nodes("chunk"):
        mem.add_text(DOC_A, "lighthouse", source="lighthouse.txt")
        mem.index("dense")
    return mem


def test_memory_ask_and_its_stream_carry_the_checks(tmp_path: Path, config: Config) -> None:
    assert AnswerSettings().verify == "flag"  # the default
    with _memory(tmp_path, "flag") as mem:
        answer = mem.ask("Who lived on Gull Island?")
        assert answer.text == REPLY and [c.supported for c in answer.verification] == [True, False]
        # embedding, answer, 1 check: the second sentence's words are not in its passage (overlap first, no call)
        assert answer.verification_usage.calls == 1 and answer.usage.calls == 3
        *pieces, final = list(mem.ask_stream("Who kept the lamp on Gull Island?"))
        assert "".join(pieces) == REPLY and isinstance(final, Answer)
        assert [c.supported for c in final.verification] == [True, False] and final.usage.calls == 3
        described = describe_answer(None, answer, "dense").model_dump(mode="json")
        assert described["verification"][1] == {
            "sentence": REPLY.split(". ")[1],
            "start": REPLY.index("The harbour"),
            "end": len(REPLY),
            "cited": [1],
            "supported": False,
            "method": "overlap",
            "added_citation": None,
            "uncited": False,
            "recited_from": [],
        }
    with _memory(tmp_path, "drop") as mem:
        dropped = mem.ask("Who lived on Gull Island?")  # the answer is cached; the checks too
        assert dropped.text == REPLY.split(" The harbour")[0] and dropped.cited == [1]
        assert dropped.dropped_sentences == [REPLY.split(". ")[1]] and dropped.usage.calls == 0
    with _memory(tmp_path, "off") as mem:
        assert mem.ask("Who lived on Gull Island?").verification == []


def test_the_server_payload_and_the_mcp_result_carry_the_checks(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from gemrag.mcp_server import AskResult, MemoryTools
    from gemrag.server.serialize import answer_out

    with _memory(tmp_path, "flag") as mem:
        answer = mem.ask("Who lived on Gull Island?")
        payload = answer_out(answer, "dense").model_dump(mode="json")
        assert [c["supported"] for c in payload["verification"]] == [True, False]
        assert payload["verification"][0]["method"] == "entailment" and payload["dropped_sentences"] == []
        result = MemoryTools(mem, "dense").ask("Who lived on Gull Island?")
        assert isinstance(result, AskResult) and [c.supported for c in result.verification] == [True, False]


def test_cli_ask_marks_the_unsupported_sentence(tmp_path: Path, config: Config) -> None:
    with _memory(tmp_path, "flag") as mem:
        answer = mem.ask("Who lived on Gull Island?")
    text = marked(answer)
    assert text.plain == REPLY + f" {UNSUPPORTED_MARK}"  # the mark after the unsupported sentence only
    assert [str(line) for line in verification_lines(answer, listed=False)] == [
        f"{UNSUPPORTED_MARK} 1 of 2 sentences not supported by the passages it cites"
    ]
    listed = [str(line) for line in verification_lines(answer, listed=True)]
    assert listed[1] == "  - " + REPLY.split(". ")[1]
    check = SentenceCheck(sentence="A.", start=0, end=2, cited=[1], supported=True, method="overlap")
    assert verification_lines(Answer("A.", None, [], 0.0, 0.0, verification=[check]), listed=True) == []
    # an answer that cites no passage is checked against the whole context: the line says so, not "it cites"
    bare = SentenceCheck(sentence="Likely yes", start=0, end=10, cited=[], supported=False, method="overlap")
    assert [str(line) for line in verification_lines(Answer("Likely yes", None, [], 0.0, 0.0, verification=[bare]),
                                                     listed=False)] == [
        f"{UNSUPPORTED_MARK} 1 of 1 sentence not supported by the context (the answer cites no passage)"
    ]  # fmt: skip


def test_cli_ask_json_and_text_output(tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    from gemrag.cli.main import app

    _memory(tmp_path, "flag").close()
    monkeypatch.setattr("gemrag.memory.facade.build_embedder", lambda settings: HashEmbedder())
    monkeypatch.setattr("gemrag.memory.facade.build_llm", lambda settings, cache_dir=None: _Replies(REPLY))
    runner = CliRunner()
    base = ["ask", "Who lived on Gull Island?", "--memory", str(tmp_path / "m"), "--strategy", "dense"]
    base += ["--set", "memory.chunk_tokens=400"]
    result = runner.invoke(app, [*base, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert [c["supported"] for c in payload["verification"]] == [True, False]
    result = runner.invoke(app, [*base, "--no-stream"])
    assert result.exit_code == 0, result.output
    assert f"[1]. {UNSUPPORTED_MARK}" in result.output and "1 of 2 sentences not supported" in result.output
    result = runner.invoke(app, [*base, "--no-stream", "--set", "answer.verify=drop"])
    assert result.exit_code == 0, result.output
    assert "golden crown" in result.output.split("dropped:")[1] and "answer: Amos Reed" in result.output
    result = runner.invoke(app, [*base, "--set", "answer.verify=strict"])
    assert result.exit_code == 2 and "error:" in result.output


UNMARKED = (
    "Amos Reed lived on Gull Island and lit the great lamp every evening [1]. "
    "The supply boat came from Port Hollow once a month with oil and bread. "  # DOC_A states it, unmarked
    "The harbour master gave Amos a golden crown for his singing."  # DOC_A does not state it, unmarked
)
CITED_AFTER = UNMARKED.replace("oil and bread.", "oil and bread [1].")


def test_every_surface_shows_a_citation_added_after_the_answer_and_an_uncited_sentence(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from gemrag.mcp_server import AskResult, MemoryTools
    from gemrag.server.serialize import answer_out

    assert AnswerSettings().verify_uncited == "cite"  # the default
    with _memory(tmp_path, "flag", UNMARKED) as mem:
        answer = mem.ask("Who lived on Gull Island?")
        assert answer.text == CITED_AFTER and answer.cited == [1]
        assert [(c.supported, c.added_citation, c.uncited) for c in answer.verification] == [
            (True, None, False),
            (True, 1, False),
            (False, None, True),
        ]
        # 2 checks and the embedding of the unmatched sentences; the third's best match lacks its words (no call)
        assert answer.verification_usage.calls == 3
        described = describe_answer(None, answer, "dense").model_dump(mode="json")  # --json
        assert described["answer"] == CITED_AFTER
        assert [(c["added_citation"], c["uncited"]) for c in described["verification"]] == [
            (None, False),
            (1, False),
            (None, True),
        ]
        payload = answer_out(answer, "dense").model_dump(mode="json")  # the server's answer
        assert payload["text"] == CITED_AFTER and payload["verification"][1]["added_citation"] == 1
        assert payload["verification"][2]["uncited"] is True
        result = MemoryTools(mem, "dense").ask("Who lived on Gull Island?")  # MCP
        assert isinstance(result, AskResult) and result.answer == CITED_AFTER
        assert [c.added_citation for c in result.verification] == [None, 1, None] and result.verification[2].uncited
        *_, final = list(mem.ask_stream("Who kept the lamp on Gull Island?"))  # the stream's final answer
        assert isinstance(final, Answer) and final.text == CITED_AFTER
    text = marked(answer)
    assert text.plain == CITED_AFTER + f" {UNSUPPORTED_MARK} uncited"
    at = CITED_AFTER.index("bread [1]") + len("bread ")
    assert [(sp.start, sp.end) for sp in text.spans if sp.style == "italic cyan"] == [(at, at + 3)]  # the added [1]
    lines = [str(line) for line in verification_lines(answer, listed=True)]
    assert lines == [
        f"{UNSUPPORTED_MARK} 1 of 3 sentences uncited: it names no passage, and none was found to support it",
        "  - The harbour master gave Amos a golden crown for his singing.",
        "+ 1 of 3 sentences cited after the answer ([1]): written without a marker, found supported by that passage",
        "  - The supply boat came from Port Hollow once a month with oil and bread [1].",
    ]
    with _memory(tmp_path, "flag", UNMARKED, verify_uncited="flag") as mem:
        flagged = mem.ask("Who lived on Gull Island?")
        assert flagged.text == UNMARKED and [c.uncited for c in flagged.verification] == [False, True, True]
        assert flagged.verification_usage.calls == 0  # the answer's check is cached; the uncited ones cost nothing
    assert str(verification_lines(flagged, listed=False)[0]).startswith(f"{UNSUPPORTED_MARK} 2 of 3 sentences uncited:")


@pytest.mark.parametrize(
    ("sentence", "reference"),
    [
        ("This information is found in passage [1].", True),
        ("According to the context [2].", True),
        ("See passage [1].", True),
        ("This is stated in the second passage [2].", True),
        ("This information is provided in [1].", True),  # the marker names the source
        ("This can be seen in [1] and [2].", True),
        ("The passages that support these findings are [1] and [2].", True),
        ("This information is found in passage 1.", False),  # no marker: it names no passage
        ("Ansel Brandt lit the lamp [1].", False),
        ("The answer is 9 [1].", False),  # a claim, however short
        ('This is found in the passage, which states "he lit the lamp" [1].', False),  # it quotes a claim
    ],
)
def test_a_reference_only_names_where_the_answer_comes_from(sentence: str, reference: bool) -> None:
    (parsed,) = answer_sentences(sentence, 2)
    assert is_reference(parsed) is reference


def test_a_reference_without_a_marker_in_an_answer_citing_nothing_is_checked_as_the_claim_before_it() -> None:
    # the answer cites no passage: every sentence against the whole context; "This is stated in." claims nothing
    # itself (its marker was dropped) and asserts that the context supports the sentence before it
    right, _, _ = _verify(_answer(f"{strip_citations(SUPPORTED)} This is stated in.", []))
    assert [c.supported for c in right.verification] == [True, True]
    wrong, _, _ = _verify(_answer(f"{strip_citations(UNSUPPORTED)} This is stated in the passage.", []))
    assert [c.supported for c in wrong.verification] == [False, False]


def test_a_reference_is_checked_as_the_claim_before_it_against_its_own_passages() -> None:
    right = _answer(f"{SUPPORTED} This information is found in passage [1].", [1])
    out, llm, _ = _verify(right)
    assert [(c.supported, c.cited) for c in out.verification] == [(True, [1]), (True, [1])]
    assert out.unsupported == [] and llm.calls == 1  # the same claim against the same passage: one cached verdict
    wrong, _, _ = _verify(_answer(f"{SUPPORTED} This information is found in passage [2].", [1, 2]))
    assert [(c.supported, c.method) for c in wrong.verification] == [(True, "entailment"), (False, "overlap")]
    assert wrong.unsupported[0].sentence == "This information is found in passage [2]."
    first, _, _ = _verify(_answer("This information is found in passage [1].", [1]))
    assert [c.supported for c in first.verification] == [False]  # nothing before it: checked as written
