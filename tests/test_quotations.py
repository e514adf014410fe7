"""A sentence's quotation checked by its text (:func:`gemrag.answers.sentence_checks.misquotes`): a quotation the cited
passages do not hold makes the sentence unsupported without a model call, and re-citation then finds the passage that
holds it. The judge here is lenient (it passes every sentence it is asked about), as the small model is with a
sentence whose words match the topic of the passage it names."""

from __future__ import annotations

from typing import Any

from fakes import ScriptedLLM
from gemrag.answers.sentence_checks import QUOTE_WORDS, misquotes
from gemrag.cli.ask import UNSUPPORTED_MARK, verification_lines
from gemrag.models.base import Completion, Usage
from gemrag.types import Hit
from test_verification import _answer, _spans_hold, _verify

PREVALENT = "Other species (OC43, 229E) are much more prevalent and much less severe."
SEVERE = "Species such as OC43 and 229E are common, and SARS is much more severe."
HITS = [Hit(1, "chunk", 0.9, f"Coronaviruses infect people. {PREVALENT}", 0), Hit(2, "chunk", 0.8, SEVERE, 1)]
QUOTING = f'This is stated in [2], which states: "{PREVALENT}"'  # the quoted sentence is passage [1]'s


class _Lenient(ScriptedLLM):
    """Says every sentence it is asked about is supported."""

    def complete(self, messages: Any, **kw: Any) -> Completion:
        self.calls += 1
        self.prompts.append(messages[-1]["content"])
        return Completion(
            '{"supported": true}', {"supported": True}, Usage(prompt_tokens=5, completion_tokens=4, calls=1)
        )


def test_a_quotation_is_looked_for_in_the_passages_by_its_text() -> None:
    one, two = HITS[0].text, HITS[1].text
    assert misquotes(QUOTING, [two]) and not misquotes(QUOTING, [one]) and not misquotes(QUOTING, [two, one])
    assert not misquotes(QUOTING.replace('"', "\u201c", 1).replace('"', "\u201d"), [one])  # curly quotes
    assert misquotes(QUOTING.replace('"', "\u201c", 1).replace('"', "\u201d"), [two])
    # a word miscopied is still the passage's sentence (80 % of its words in it)
    assert not misquotes(QUOTING.replace("prevalent", "common"), [one])
    # a short quotation may be the writer's phrase: not checked
    short = 'It is "much more severe than others" [2].'
    assert QUOTE_WORDS > 5 and not misquotes(short, [one])  # five words quoted
    assert not misquotes("No quotation here, only claims [2].", [one])
    # a quotation of the question quotes no passage
    asked = "Which species are more prevalent but much less severe?"
    restated = f'The answer to "{asked}" is OC43 [2].'
    assert misquotes(restated, [two]) and not misquotes(restated, [two], asked)


def test_a_miscited_quotation_is_flagged_without_a_call_and_recited_to_the_passage_holding_it() -> None:
    # the sentence's words mostly match passage [2] (overlap passes it) and the lenient judge would pass it
    flagged, llm, _ = _verify(_answer(QUOTING, [2], HITS), llm=_Lenient(), miscited="flag")
    (check,) = flagged.verification
    assert (check.supported, check.method, check.cited) == (False, "quote", [2]) and llm.calls == 0
    recited, llm, _ = _verify(_answer(QUOTING, [2], HITS), llm=_Lenient())  # the default re-cites
    (check,) = recited.verification
    assert (check.supported, check.cited, check.recited_from, check.added_citation) == (True, [1], [2], 1)
    assert recited.text == QUOTING.replace("[2]", "[1]") and _spans_hold(recited)
    assert llm.calls == 1 and PREVALENT in llm.prompts[0]  # one check, against passage [1]
    # the quotation in the passage it cites: checked as any sentence is (here by the lenient judge)
    right, llm, _ = _verify(_answer(QUOTING.replace("[2]", "[1]"), [1], HITS), llm=_Lenient())
    assert [(c.supported, c.method) for c in right.verification] == [(True, "entailment")] and llm.calls == 1


def test_gemrag_ask_says_a_sentence_was_flagged_for_its_quotation() -> None:
    flagged, _, _ = _verify(_answer(f"{PREVALENT.split(' (')[0]} [1]. {QUOTING}", [1, 2], HITS), llm=_Lenient(),
                            miscited="flag")  # fmt: skip
    assert [(c.supported, c.method) for c in flagged.verification] == [(True, "overlap"), (False, "quote")]
    lines = [str(line) for line in verification_lines(flagged, listed=True)]
    assert lines == [
        f"{UNSUPPORTED_MARK} 1 of 2 sentences quoting text the passages it cites do not hold",
        f"  - {QUOTING}",
    ]
