"""Reading a free-form answer from the model's reply: the reply cut to its short form (:func:`short_form`), a cited
reply that is only markers (:func:`markers_only`), and one completion read into its text, the passages it cites and
its quotes (:func:`read_reply`), for :func:`gemrag.answers.answering.answer_question`.

Citations are read by :func:`gemrag.prompting.parse_citations`; the quote and notes forms are split and their quotes
located by :mod:`gemrag.answers.reading`."""

from __future__ import annotations

import re
from collections.abc import Sequence

from gemrag.answers.answer import Quote
from gemrag.answers.reading import read_quotes, read_span, split_answer
from gemrag.models.base import LLM, Message
from gemrag.prompting import parse_citations, strip_citations
from gemrag.types import Hit

_ANSWER_LABEL = re.compile(r"^\s*(?:\*\*)?(?:short |final )?answer\s*(?:is)?\s*[:\-]\s*(?:\*\*)?\s*", re.IGNORECASE)


def short_form(text: str) -> str:
    """A completion cut to its answer: the text after the last ``Answer:`` label if there is one, else the first
    non-empty line; a leading label, wrapping quotes or ``**`` and a trailing full stop removed. ``""`` for
    ``""``."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    labelled = [line for line in lines if _ANSWER_LABEL.match(line)]
    line = labelled[-1] if labelled else lines[0]
    line = _ANSWER_LABEL.sub("", line).strip().strip("*").strip()
    if len(line) >= 2 and line[0] == line[-1] and line[0] in "\"'`":
        line = line[1:-1].strip()
    return line[:-1].rstrip() if line.endswith(".") and not line.endswith("..") else line


def read_reply(
    model: LLM,
    messages: list[Message],
    uncited: list[Message],
    hits: Sequence[Hit],
    form: str,
    *,
    short: bool,
    cite: bool,
    limit: int,
    temperature: float,
    seed: int | None,
) -> tuple[str, list[int], int, list[Quote]]:
    """One free-form completion read into ``(text, cited, dropped, quotes)``.

    Plain form: the ``[n]`` markers when citing (a markers-only reply asked again with ``uncited``), the text cut to
    its short form when ``short``. Quote and notes forms: the answer after the ``Answer:`` line
    (:func:`gemrag.answers.reading.split_answer`); under ``quote`` the quotes are located in their passages and the
    verified ones are cited (with any markers the answer line names). Span form: the copied words as the passage
    writes them (:func:`gemrag.answers.reading.read_span`), that passage cited when they were found in it."""
    raw = model.complete(messages, max_tokens=limit, temperature=temperature, seed=seed).text
    if form == "span":
        words, quote = read_span(raw, [h.text for h in hits])
        return words, ([quote.passage] if quote and quote.verified else []), 0, [quote] if quote else []
    if form == "plain":
        cited: list[int] = []
        dropped = 0
        if cite:
            found = parse_citations(raw, len(hits))
            raw, cited, dropped = found.text, found.cited, found.dropped
            if markers_only(raw):
                raw = model.complete(uncited, max_tokens=limit, temperature=temperature, seed=seed).text
        return (short_form(raw) if short else raw.strip()), cited, dropped, []
    body, said = split_answer(raw)
    quotes = read_quotes(body, [h.text for h in hits]) if form == "quote" else []
    found = parse_citations(said, len(hits))
    cited = sorted({q.passage for q in quotes if q.verified} | set(found.cited if cite or form == "quote" else []))
    text = short_form(found.text) if short else found.text.strip()
    return text, cited, found.dropped, quotes


def markers_only(text: str) -> bool:
    """True when a cited answer is nothing but its markers (``"[2]"``, ``"[1, 3]."``): small models, asked to cite
    after a short phrase, sometimes write only the marker. Such an answer is asked again with the uncited prompt
    (one more LLM call, cached like any other) and keeps the passages the first reply named; an empty answer is
    not markers-only (nothing was cited)."""
    stripped = strip_citations(text)
    return text.strip() != "" and not stripped.strip(" \t\n.,;:!?\"'*")
