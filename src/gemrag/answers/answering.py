"""Answering a question from retrieved context (GEM-RAG section III.B.2: "The LLM is then given this context,
followed by the question"): :func:`answer_question`, which :meth:`gemrag.memory.Memory.answer` calls. It chooses the
prompt (:mod:`gemrag.answers.prompts`), reads the context as the reading asks (:mod:`gemrag.answers.reading`,
:mod:`gemrag.answers.shaping`, :mod:`gemrag.answers.consistency`), picks a multiple-choice letter
(:mod:`gemrag.answers.choices`) or reads the free-form replies (:mod:`gemrag.answers.replies`). Its streamed form,
:func:`gemrag.answers.streaming.answer_stream` (:meth:`gemrag.memory.Memory.ask_stream`), stands on it.

Cited answers (``cite=True``; the setting ``[answer] cite``, on by default): the context passages are numbered
``[1]..[n]`` as always (:func:`gemrag.prompting.format_context`) and the prompt asks the model to name the passages it
uses with ``[n]`` markers (free form), or to list their numbers in a ``passages`` field next to the option letter
(multiple choice); :func:`gemrag.prompting.parse_citations` reads them, and the answer carries the cited numbers and
the count of markers that named no passage (:class:`~gemrag.answers.answer.Answer`). A streamed answer is cited the same
way: its pieces show the markers as the model writes them, and its final Answer is read from the whole completion
(dropped markers removed from its text, and counted). An answer that is only markers (a small model's ``"[2]"``)
is asked once more without citing (:func:`gemrag.answers.replies.markers_only`). With ``cite=False`` every prompt is
the one of earlier releases, so their LLM cache keys hold.

Follow-ups (self-ask, Press et al. 2023, section 3: the final answer composed from the intermediate answers): a
retrieval that decomposed the question may give its sub-questions and their answers in a hit's
``meta["follow_ups"]`` (``iterative`` with ``answer_from = "steps"``); every answer prompt then shows them, unnumbered,
before the numbered passages (:func:`gemrag.answers.prompts.follow_ups_text`), so citations still name passages only.
Without them every prompt is unchanged."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from gemrag.answers.again import Asked, repaired, without_examples
from gemrag.answers.answer import Answer, Quote, ScoredOption
from gemrag.answers.choices import (
    LETTERS,
    ChoiceAnswer,
    ChoiceScoring,
    choice_schema,
    order_count,
    original_choice,
    rotate,
    vote_orders,
)
from gemrag.answers.consistency import most_consistent
from gemrag.answers.dates.completion import complete_dates
from gemrag.answers.demonstrations import copied_example
from gemrag.answers.letter_probability import LetterChoice, choose_by_letter_probability
from gemrag.answers.likelihood import OptionScore, best_option, score_options
from gemrag.answers.prompts import (
    ABSTAIN,
    ANSWER_MAX_TOKENS,
    GUESS,
    SHORT_MAX_TOKENS,
    FollowUps,
    answer_prompt,
    follow_ups_text,
    question_lead,
    short_answer_prompt,
    shorten_prompt,
)
from gemrag.answers.question_forms import QuestionForm
from gemrag.answers.reading import (
    NOT_FOUND,
    READING_MAX_TOKENS,
    SPAN_MAX_TOKENS,
    Reading,
    aid_prompt,
    read_quotes,
    reading_aid,
    reading_prompt,
)
from gemrag.answers.replies import read_reply, short_form
from gemrag.answers.shaping import evidence_score, shape_context
from gemrag.errors import StructuredOutputError
from gemrag.models.base import LLM, Embedder, Message, Usage
from gemrag.models.meter import UsageMeter
from gemrag.models.structured import complete_structured
from gemrag.store.parts import Caches
from gemrag.types import Hit

#: An agent's answer longer than this (words) is shortened by one extraction call in the short form.
SHORT_WORDS = 6


def answer_question(
    llm: Callable[[], LLM],
    meter: UsageMeter,
    store: Caches,
    question: str,
    hits: Sequence[Hit],
    choices: Sequence[str] | None = None,
    retrieval_seconds: float = 0.0,
    *,
    abstain: bool = False,
    short: bool = False,
    cite: bool = False,
    temperature: float = 0.0,
    seed: int | None = None,
    reading: Reading | None = None,
    embedder: Embedder | None = None,
) -> Answer:
    """Answer ``question`` from a given context (the LLM gets the context, then the question).

    With ``choices`` the LLM picks exactly one option letter (structured output; a malformed answer is recorded as
    a ``query/answer`` failure in ``store`` and the answer is empty). ``abstain``: a free-form answer may say the
    answer is not mentioned (see :func:`answer_prompt`). A free-form question whose retrieval already produced an
    answer (a hit's ``meta["agent_answer"]``: REMem's tool-using agent, :mod:`gemrag.strategies.remem.agent`) is
    answered with it, without another LLM call (``llm`` is then never called, so no model is loaded).

    ``short`` (free-form only): the benchmark form for span-answer datasets — :func:`short_answer_prompt`, the
    completion cut to its answer (:func:`short_form`), and an agent's answer longer than :data:`SHORT_WORDS` words
    shortened by one :func:`shorten_prompt` call (the final extraction step).

    Follow-ups in the hits (``meta["follow_ups"]``, module docstring) are shown before the passages in every
    prompt built here.

    ``cite``: a cited answer (module docstring): the prompt asks for the passages used, and the answer's ``cited``
    and ``dropped_citations`` report them (a free-form answer's markers are read from the whole completion, before
    the short form cuts it). Nothing is cited from an empty context or by an agent's answer. A free-form reply
    that is only markers is asked again with the uncited prompt (:func:`gemrag.answers.replies.markers_only`; two
    LLM calls for that question): its text is the second reply's, its ``cited`` the first reply's.

    A free-form answer over a dated context (hits with ``meta["date"]``, ``[answer] dates``) has its dates completed
    from the context (:func:`gemrag.answers.dates.completion.complete_dates`): each date written without its year
    gets the year, a date a turn was said on becomes the time that turn tells when it is the turn the question asks
    about (:mod:`gemrag.answers.dates.said`), each day the context gives only as a week's or weekend's first day
    becomes that period; ``reading["dates_completed"]`` lists them; nothing else of the text changes.

    Args:
        llm: returns the LLM to answer with (called only when an LLM call is needed).
        meter: the usage meter; the answer's calls are counted in its ``query`` phase.
        retrieval_seconds: the retrieval's wall time (seconds), reported in the answer.
        temperature, seed: sampling of a free-form answer (default greedy: temperature 0, the backend's seed);
            repeated evaluation runs (``gemrag eval --runs N``) sample each run with its own seed. A choice among
            options stays greedy (structured output).
        reading: how the context is read (:class:`~gemrag.answers.reading.Reading`: the quote, notes or span form
            (a multiple-choice question reads plainly under the span form), the
            context shaping, self-consistency samples); None is the plain reading, today's prompts exactly. A
            shaped context changes which hits are shown and in what order: the Answer's ``hits`` are the shown ones.
            Self-consistency samples ``reading.samples`` free-form answers at ``reading.temperature`` with seeds
            ``seed + 1 .. seed + k`` (``seed`` 0 when None) and keeps the most consistent one
            (:func:`gemrag.answers.consistency.most_consistent`); its ``reading["votes"]`` lists all of them.
            Option orders (multiple choice, ``reading.option_orders`` = k > 1; against the option-position bias
            of Zheng et al., ICLR 2024, sections 2-3, and Pezeshkpour & Hruschka 2023): the choice is asked k
            times, greedy, order i showing the options rotated by i positions
            (:func:`gemrag.answers.choices.rotate`; only ``len(choices)`` orders when k is larger, the distinct
            cyclic ones), each letter mapped back to its original option, and the option most orders chose is
            kept, a tie going to order 0's choice, else the earliest order's
            (:func:`gemrag.answers.choices.vote_orders`). An order whose reply is malformed is recorded as a
            failure and does not vote; no valid order gives no choice. Citing, the passages are those of the first
            order that chose the kept option. A quote or notes reading's first call is made once; only the choice
            call is repeated. The context comes before the options in the prompt, so a backend that keeps the
            evaluated prompt prefix (llama.cpp does) reads it once: the k calls cost much less than k times one
            on a long context. ``reading["option_orders"]`` is the number of orders asked and
            ``reading["order_votes"]`` each order's choice (original index, None where it gave none). With k = 1
            the prompt and the call are today's. List questions (``reading.lists``, free form in the plain form):
            a question :func:`gemrag.answers.lists.list_cue` finds to ask for several things is asked for every
            one the context names (TREC 2003's list questions; LoCoMo's multi-hop ones);
            ``reading["list_cue"]`` holds the words that made it one. Hypothetical questions
            (``reading.hypotheticals``, likewise): a question :func:`gemrag.answers.hypotheticals.hypothetical_cue`
            finds to ask what is likely ("Would she ...?", "What might ...") is asked for what the context points
            to ("Likely yes" or "Likely no" and why, to a yes-or-no one), with the guess line in place of the
            decline line (LoCoMo's open-domain ones);
            ``reading["hypothetical_cue"]`` holds the word that made it one. Choice by likelihood
            (``reading.choice_scoring`` ``"likelihood"`` or ``"calibrated"``, multiple choice; Brown et al. 2020,
            section 2.4; :mod:`gemrag.answers.likelihood`): every option is scored as the answer's text and the
            best is kept, the options never shown (so ``option_orders`` does not apply and nothing is cited);
            ``reading["option_scores"]`` lists each option's tokens and log-probabilities. Choice by the letters'
            probabilities (``reading.choice_scoring`` ``"letter_probability"``; Zheng et al., ICLR 2024, section 3;
            :mod:`gemrag.answers.letter_probability`): the letter prompt, but each letter's probability read by one
            scoring call an order instead of a decoded letter, and under ``option_orders`` = k each option's
            probability averaged over the k cyclic orders (the vote's probability form); nothing is cited;
            ``reading["option_scores"]`` holds each option's log-probabilities and ``reading["order_letter_logprobs"]``
            each order's letter distribution. Worked examples (``reading.demonstrations``, the library's or a user's
            own; free form in the plain form; Brown et al. 2020, section 2; :mod:`gemrag.answers.demonstrations`):
            the prompt carries them as earlier chat turns (``reading["demonstrations"]`` True); a single greedy
            answer naming an example's own name that neither the context nor the question holds
            (:func:`gemrag.answers.demonstrations.copied_example`) is asked once more without them, and
            ``reading["example_copied"]`` holds that name.
        embedder: the memory's embedder, needed to trim sentences (``reading.shaping.trim``) and to abstain
            (``reading.abstain_below``: below it the answer is :data:`~gemrag.answers.reading.NOT_FOUND`, no LLM call,
            and ``reading["abstained"]`` is True; ``reading["evidence"]`` holds the score either way).

    Raises:
        ValueError: fewer than 2 or more than 10 choices; trimming without an embedder.
        GemragError: choice by likelihood or by the letters' probabilities with an LLM that cannot score
            continuations.
    """
    if choices is not None and not 2 <= len(choices) <= len(LETTERS):
        raise ValueError(f"give between 2 and {len(LETTERS)} choices")
    reading = reading or Reading()
    before = meter.totals.get("query", Usage())
    t1 = time.perf_counter()
    agent = agent_answer(hits)
    steps = follow_ups_of(hits)
    cite = cite and bool(hits)
    cited: list[int] = []
    dropped = 0
    quotes: list[Quote] = []
    aside = ""
    if agent is not None and not choices and (not short or len(str(agent).split()) <= SHORT_WORDS):
        return Answer(
            short_form(str(agent)) if short else str(agent), None, list(hits), retrieval_seconds, 0.0, Usage()
        )
    hits, texts, info = _shown(question, hits, embedder, reading if agent is None else Reading())
    form = reading.form if agent is None and not (choices and reading.form == "span") else "plain"
    if reading.abstain_below is not None and agent is None and not choices:
        if embedder is None:
            raise ValueError("abstaining on weak evidence needs the memory's embedder")
        info["evidence"] = score = round(evidence_score(question, texts, embedder), 4)
        if score < reading.abstain_below:
            info.update(form=form, samples=reading.samples, abstained=True)
            seconds = time.perf_counter() - t1
            return Answer(NOT_FOUND, None, hits, retrieval_seconds, seconds, Usage(), reading=info)
    asked = reading.question_form(question) if agent is None and not choices and form == "plain" else QuestionForm()
    info.update(asked.cues)
    plain_abstain, instruction = asked.abstains(abstain), asked.instruction
    first = reading.question_first and agent is None  # the question also shown before the context
    examples = reading.demonstrations if agent is None else ()  # worked examples before the question
    ask = partial(answer_prompt, question_first=first, demonstrations=examples)
    ask_short = partial(short_answer_prompt, question_first=first, demonstrations=examples)
    if first:
        info["question_first"] = True
    if examples:
        info["demonstrations"] = True
    if agent is not None and not choices:
        messages = shorten_prompt(question, str(agent), abstain=abstain)
    elif form != "plain" and not choices:
        last = ABSTAIN if abstain else GUESS
        preface = question_lead(question, first) + follow_ups_text(steps)
        messages = reading_prompt(question, texts, form, short=short, abstain=abstain, preface=preface, last=last)
    elif short and not choices:
        messages = ask_short(
            question, texts, abstain=plain_abstain, cite=cite, follow_ups=steps, instruction=instruction
        )
    else:
        messages = ask(
            question, texts, choices, abstain=plain_abstain, cite=cite, follow_ups=steps, instruction=instruction
        )
    model = llm()
    with meter.phase("query"):
        if choices and form != "plain":
            aid = model.complete(
                aid_prompt(question, texts, form, question_lead(question, first) + follow_ups_text(steps)),
                max_tokens=READING_MAX_TOKENS,
            )
            quotes = read_quotes(aid.text, [h.text for h in hits]) if form == "quote" else []
            aside = reading_aid(form, aid.text)
            messages = ask(question, texts, choices, abstain=abstain, cite=cite, follow_ups=steps, aside=aside)
        if choices and reading.choice_scoring == "letter_probability" and agent is None:
            orders = order_count(reading.option_orders, len(choices))
            picked = choose_by_letter_probability(
                model,
                lambda i: messages if i == 0 else ask(
                    question, texts, rotate(choices, i), abstain=abstain, cite=cite, follow_ups=steps, aside=aside
                ),
                len(choices),
                orders,
            )  # fmt: skip
            scored = [_letter_scored(picked, o) for o in range(len(choices))]
            info.update(choice_scoring=reading.choice_scoring, option_scores=scored, option_orders=orders)
            info["order_letter_logprobs"] = [[round(lp, 4) for lp in order] for order in picked.orders]
            choice: int | None = picked.choice
            text = choices[picked.choice]
        elif choices and reading.choice_scoring != "letter" and agent is None:
            scores = score_options(
                model, question, texts, choices, reading.choice_scoring, follow_ups=steps, aside=aside
            )
            best = best_option(scores, reading.choice_scoring)
            scored = [_scored(s, reading.choice_scoring) for s in scores]
            info.update(choice_scoring=reading.choice_scoring, option_scores=scored)
            choice = best
            text = choices[best]
        elif choices:
            orders = order_count(reading.option_orders, len(choices)) if agent is None else 1
            votes: list[int | None] = []
            passages_of: list[tuple[list[int], int]] = []
            for i in range(orders):
                shown = messages  # order 0: today's prompt
                if i > 0:
                    shifted = rotate(choices, i)
                    shown = ask(question, texts, shifted, abstain=abstain, cite=cite, follow_ups=steps, aside=aside)
                letter, passages = _choose(model, store, question, shown, len(choices), len(hits) if cite else 0)
                votes.append(None if letter is None else original_choice(letter, i, len(choices)))
                passages_of.append(passages)
            choice = vote_orders(votes)
            if cite:
                cited, dropped = passages_of[votes.index(choice) if choice is not None else 0]
            if orders > 1:
                info.update(option_orders=orders, order_votes=votes)
            text = choices[choice] if choice is not None else ""
        else:
            limit = (
                SPAN_MAX_TOKENS if form == "span"
                else READING_MAX_TOKENS if form != "plain"
                else SHORT_MAX_TOKENS if short
                else ANSWER_MAX_TOKENS
            )  # fmt: skip
            uncited = (ask_short if short else ask)(
                question, texts, abstain=plain_abstain, follow_ups=steps, instruction=instruction
            )
            k = reading.samples if agent is None else 1
            reads = [
                read_reply(model, messages, uncited, hits, form, short=short, cite=cite, limit=limit,
                      temperature=reading.temperature if k > 1 else temperature,
                      seed=((seed or 0) + i + 1) if k > 1 else seed)
                for i in range(k)
            ]  # fmt: skip
            pick = most_consistent([r[0] for r in reads]) if k > 1 else 0
            text, cited, dropped, quotes = reads[pick]
            asking = Asked(
                model, question, hits, texts, short, cite, plain_abstain, steps, instruction, temperature, seed,
                question_first=first, demonstrations=examples,
            )  # fmt: skip
            single = examples and form == "plain" and k == 1  # one greedy answer asked after the examples
            copied = copied_example(text, texts, question, examples) if single else None
            if copied is not None:  # the answer names a worked example's name: asked again without the examples
                text, cited, dropped, quotes = without_examples(asking)
                info["example_copied"] = copied
                asking = replace(asking, demonstrations=())
            if reading.repair and form == "plain" and agent is None and k == 1:
                (text, cited, dropped, quotes), note = repaired(asking, (text, cited, dropped, quotes))
                if note is not None:
                    info["repair"] = note
            choice = None
            if k > 1:
                info["votes"] = [r[0] for r in reads]
    if not choices:  # a free-form answer over a dated context: its dates completed (years, periods)
        text, completed = complete_dates(text, hits, question)
        if completed:
            info["dates_completed"] = completed
    t2 = time.perf_counter()
    spent = meter.totals.get("query", Usage()) - before
    if not reading.plain and agent is None:
        info = {"form": form, "samples": reading.samples, **info}
    return Answer(text, choice, list(hits), retrieval_seconds, t2 - t1, spent, cited, dropped, quotes, info)


def _choose(
    model: LLM, store: Caches, question: str, messages: list[Message], n_choices: int, n_passages: int
) -> tuple[int | None, tuple[list[int], int]]:
    """One greedy choice call (structured output, :func:`gemrag.answers.choices.choice_schema`): the position of the
    letter chosen among ``n_choices`` (None when the reply names none of them, or is malformed: then recorded as a
    ``query/answer`` failure in ``store``) and, with ``n_passages`` > 0 (citing), the cited passage numbers
    ``1..n_passages`` and the count of numbers naming no passage (``([], 0)`` otherwise)."""
    try:
        parsed = complete_structured(
            model,
            messages,
            ChoiceAnswer,
            schema=choice_schema(n_choices, n_passages),
            max_tokens=16 + 4 * n_passages,
        )
    except StructuredOutputError as exc:
        store.record_failure("query/answer", None, f"{question[:80]}: {exc}")
        return None, ([], 0)
    letter = parsed.answer.strip().upper()[:1]
    choice = LETTERS.index(letter) if letter and letter in LETTERS[:n_choices] else None
    if not n_passages:
        return choice, ([], 0)
    cited = sorted({n for n in parsed.passages if 1 <= n <= n_passages})
    return choice, (cited, sum(1 for n in parsed.passages if not 1 <= n <= n_passages))


def _letter_scored(picked: LetterChoice, option: int) -> dict[str, Any]:
    """An option of a choice by the letters' probabilities as ``Answer.reading["option_scores"]`` records it: a
    :class:`~gemrag.answers.answer.ScoredOption` as a dict (no tokens: the letter was scored, not the option's text),
    ``logprob`` its letter's normalized log-probability in the original order, ``score`` the log of its probability
    averaged over the orders; rounded to 4 places."""
    first = picked.orders[0][option]
    return ScoredOption(tokens=None, logprob=round(first, 4), score=round(picked.options[option], 4)).model_dump()


def _scored(score: OptionScore, scoring: ChoiceScoring) -> dict[str, Any]:
    """An option's scores as ``Answer.reading["option_scores"]`` records them: a
    :class:`~gemrag.answers.answer.ScoredOption` as a dict, log-probabilities rounded to 4 places."""
    unconditional = None if score.unconditional is None else round(score.unconditional, 4)
    logprob, value = round(score.logprob, 4), round(score.value(scoring), 4)
    return ScoredOption(tokens=score.tokens, logprob=logprob, unconditional=unconditional, score=value).model_dump()


def _shown(
    question: str, hits: Sequence[Hit], embedder: Embedder | None, reading: Reading
) -> tuple[list[Hit], list[str], dict[str, Any]]:
    """The hits shown to the model, in the order shown, the text each shows, and what shaping did (for
    ``Answer.reading``): the hits as retrieved when ``reading.shaping`` is None."""
    if reading.shaping is None or not hits:
        return list(hits), [h.text for h in hits], {}
    shaped = shape_context(question, hits, embedder, reading.shaping)
    info = {"words_before": shaped.words_before, "words_after": shaped.words_after, "duplicates": shaped.dropped}
    return shaped.hits, shaped.texts, info


def agent_answer(hits: Sequence[Hit]) -> object | None:
    """The answer a retrieval already produced (a hit's ``meta["agent_answer"]``), or None."""
    return next((h.meta["agent_answer"] for h in hits if h.meta.get("agent_answer")), None)


def follow_ups_of(hits: Sequence[Hit]) -> FollowUps:
    """The follow-ups a retrieval gave for the answer (the first hit's ``meta["follow_ups"]`` that has some), or
    ``()``."""
    for h in hits:
        follow_ups = h.meta.get("follow_ups")
        if follow_ups and isinstance(follow_ups, (list, tuple)):
            return follow_ups
    return ()
