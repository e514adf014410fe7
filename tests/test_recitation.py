"""Re-citing a miscited sentence (``[answer] verify_miscited``): a sentence its own markers do not support is checked
against the best other passage and, when that one supports it, cited with it instead; every other case keeps the
sentence's own markers."""

from __future__ import annotations

import pytest

from gemrag.answers.answer import Answer, SentenceCheck
from gemrag.answers.sentences import add_citations
from gemrag.cli.ask import verification_lines
from gemrag.config import AnswerSettings
from gemrag.types import Hit
from test_verification import BOAT, HITS, SUPPORTED, UNSUPPORTED, _answer, _spans_hold, _verify


def test_a_sentence_citing_the_wrong_passage_is_cited_with_the_one_that_supports_it() -> None:
    out, llm, _ = _verify(_answer(f"{SUPPORTED} {BOAT} [1].", [1]))
    assert out.text == f"{SUPPORTED} {BOAT} [2]." and out.cited == [1, 2] and _spans_hold(out)
    first, second = out.verification
    assert (first.added_citation, first.recited_from) == (None, [])
    assert (second.cited, second.supported, second.added_citation, second.recited_from) == ([2], True, 2, [1])
    assert out.unsupported == [] and second.method == "entailment"
    # the boat sentence's words are not in passage [1]: flagged by overlap without a call, then one check against [2]
    assert llm.calls == 2 and "Port Hollow" in llm.prompts[1]
    assert AnswerSettings().verify_miscited == "recite"  # the default


def test_under_flag_or_when_no_other_passage_supports_it_the_sentence_keeps_its_markers() -> None:
    text = f"{SUPPORTED} {BOAT} [1]."
    flagged, llm, _ = _verify(_answer(text, [1]), miscited="flag")
    assert flagged.text == text and flagged.cited == [1] and llm.calls == 1
    assert [(c.supported, c.recited_from, c.added_citation) for c in flagged.verification] == [
        (True, [], None),
        (False, [], None),
    ]
    wrong = f"{SUPPORTED} {UNSUPPORTED}"  # passage [1] does not hold the golden crowns either
    out, llm, _ = _verify(_answer(wrong, [1, 2]))
    assert out.text == wrong and out.cited == [1, 2] and llm.calls == 1  # overlap first: no call for the re-check
    assert (out.verification[1].supported, out.verification[1].recited_from) == (False, [])
    everywhere = f"{SUPPORTED} The keeper sold golden crowns to sailors [1][2]."  # cites every passage: none left
    all_cited, _, _ = _verify(_answer(everywhere, [1, 2]))
    assert all_cited.text == everywhere and not all_cited.verification[1].supported


def test_a_reference_and_an_answer_without_markers_are_not_recited() -> None:
    reference = "The supply boat brought golden crowns. This information is found in passage [1]."
    out, _, _ = _verify(_answer(reference, [1]))
    assert out.text == reference and all(not c.recited_from for c in out.verification)
    bare = f"{BOAT}."  # no marker anywhere: checked against the whole context, nothing to re-cite
    unmarked, _, _ = _verify(_answer(bare, []))
    assert unmarked.text == bare and unmarked.verification[0].supported and unmarked.verification[0].cited == []


def test_drop_keeps_a_recited_sentence_and_the_markers_are_replaced_in_place() -> None:
    out, _, _ = _verify(_answer(f"{BOAT} [1]. {UNSUPPORTED}", [1, 2]), "drop")
    assert out.text == f"{BOAT} [2]." and out.cited == [2] and out.dropped_sentences == [UNSUPPORTED]
    check = SentenceCheck(
        sentence="It came monthly [1][3].", start=5, end=28, cited=[2], supported=True, method="overlap",
        added_citation=2, recited_from=[1, 3],
    )  # fmt: skip
    text, (moved,) = add_citations("Yes. It came monthly [1][3]. End.", [check])
    assert text == "Yes. It came monthly [2]. End." and text[moved.start : moved.end] == moved.sentence


def test_the_cli_says_what_was_recited() -> None:
    out, _, _ = _verify(_answer(f"{SUPPORTED} {BOAT} [1].", [1]))
    lines = [str(line) for line in verification_lines(out, listed=True)]
    assert lines[0] == "+ 1 of 2 sentences re-cited ([1] -> [2]): not supported by the passage it named, found " \
        "supported by another"  # fmt: skip
    assert lines[1].endswith(f"{BOAT} [2].") and not any("cited after the answer" in line for line in lines)


def test_an_unknown_mode_is_refused() -> None:
    answer = Answer(SUPPORTED, None, list(HITS), 0.0, 0.0, cited=[1])
    with pytest.raises(ValueError, match="verify_miscited"):
        _verify(answer, miscited="always")


def test_hits_fixture_has_two_passages() -> None:
    assert [h.node_id for h in HITS] == [11, 12] and all(isinstance(h, Hit) for h in HITS)


def test_the_recheck_follows_overlap_first() -> None:
    wrong = f"{SUPPORTED} {UNSUPPORTED}"
    _, first, _ = _verify(_answer(wrong, [1, 2]))  # overlap first: neither passage holds its words, no call for it
    _, model, _ = _verify(_answer(wrong, [1, 2]), overlap_first=False)  # its check and its re-check by the model
    assert first.calls == 1 and model.calls == 3
