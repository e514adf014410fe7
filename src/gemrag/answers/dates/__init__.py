"""Time-aware reading (``[answer] dates``): every chunk of a dated source carries its absolute date and its relative
time expressions resolved at index time (:mod:`~gemrag.answers.dates.expressions`: the rules;
:mod:`~gemrag.answers.dates.llm`: the optional LLM step; :mod:`~gemrag.answers.dates.chunks`: the chunks' dates, kept
as store artefacts), and a question with a time anchor (:mod:`~gemrag.answers.dates.questions`) is answered from the
dated context, oldest first (:mod:`~gemrag.answers.dates.context`), its answer's dates completed from it
(:mod:`~gemrag.answers.dates.completion`: the years, :mod:`~gemrag.answers.dates.years`, and the weeks,
:mod:`~gemrag.answers.dates.periods`).

Sources: LongMemEval (Wu et al., 2024), section 5, time-aware query expansion; REMem's temporal facts (seed
``remem-retrieval-strategies.txt``, "Temporal Strategy"). Docs: ``docs/reading.md``, "Time-aware reading"."""

from gemrag.answers.dates.chunks import ChunkDates, annotate_dates, chunk_dates
from gemrag.answers.dates.completion import complete_dates
from gemrag.answers.dates.context import DatesMode, HitDate, dated_context, hit_dates, reads_dates
from gemrag.answers.dates.expressions import TimeNote, format_period, resolve_expressions, vague_expressions
from gemrag.answers.dates.periods import context_periods, restore_periods
from gemrag.answers.dates.questions import TimeAnchor, time_anchor
from gemrag.answers.dates.years import complete_years, context_year

__all__ = [
    "ChunkDates",
    "DatesMode",
    "HitDate",
    "TimeAnchor",
    "TimeNote",
    "annotate_dates",
    "chunk_dates",
    "complete_dates",
    "complete_years",
    "context_periods",
    "context_year",
    "dated_context",
    "format_period",
    "hit_dates",
    "reads_dates",
    "resolve_expressions",
    "restore_periods",
    "time_anchor",
    "vague_expressions",
]
