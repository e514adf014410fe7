"""``gemrag ask``: answer a question from a memory, citing the passages used (registered in :mod:`gemrag.cli.main`).

A strategy's own retrieval settings are ``--set`` items like every other setting (``--set gem.search=rank``); the flag
``--search`` of earlier releases is hidden and deprecated: it becomes ``--set gem.search=...``, with a warning.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Generator
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gemrag.answers.answer import Answer, ScoredOption, SentenceCheck
from gemrag.answers.choices import LETTERS
from gemrag.answers.provenance import cited_sources, describe_answer, describe_hits, source_label
from gemrag.answers.repair import Repair
from gemrag.cli.options import (
    NO_MODEL_FLAGS,
    ConfigFile,
    MemoryOpt,
    ModelOptions,
    SetOpt,
    StrategyOpt,
    build_config,
    deprecated_sets,
    memory_target,
    model_options,
    open_memory,
)
from gemrag.console import cli_errors, err
from gemrag.errors import GemragError
from gemrag.progress import rich_progress

__all__ = ["UNSUPPORTED_MARK", "ask_command", "marked", "question_form_lines", "streams", "verification_lines"]

#: The mark after an answer sentence its citations do not support (``[answer] verify``).
UNSUPPORTED_MARK = "⚠"

out = Console()


@model_options()
def ask_command(
    question: Annotated[str, typer.Argument(help="The question.")],
    memory: MemoryOpt = None,
    budget: Annotated[
        int | None,
        typer.Option(
            min=1, help="B: context nodes to retrieve (default: memory.budget, 4; for remem: remem.qa_top_k, 5)."
        ),
    ] = None,
    choices: Annotated[str | None, typer.Option(help="Multiple-choice options separated by '|'.")] = None,
    show_context: Annotated[bool, typer.Option("--show-context", help="Print the full context texts.")] = False,
    retrieve_only: Annotated[
        bool,
        typer.Option(
            "--retrieve-only",
            help="Only retrieve, no answer: no LLM call with dense, bm25, fused, full, gem, raptor or "
            "unweaver (remem, remem_gist, remem_temporal, hlgraph and iterative call it to retrieve).",
        ),
    ] = False,
    # Deprecated, hidden (and without a help text, as the help shows none): --set gem.search=best_first|rank|fused.
    search: Annotated[str | None, typer.Option(hidden=True)] = None,
    strategy: StrategyOpt = None,
    build_missing: Annotated[
        bool, typer.Option("--build-missing", help="Build the strategy first if it was never built in this memory.")
    ] = False,
    set_: SetOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (never streamed).")] = False,
    stream: Annotated[
        bool | None,
        typer.Option(
            "--stream/--no-stream",
            help="Print the answer as the model writes it (default: when standard output is a terminal). "
            "A multiple-choice answer is printed whole.",
        ),
    ] = None,
    config: ConfigFile = None,
    models: ModelOptions = NO_MODEL_FLAGS,
) -> None:
    """Retrieve a context for QUESTION (GEM-RAG section III.B.2, Algorithm 1) and answer it, citing the context
    passages the answer rests on ([n] markers; the sources are listed under the answer; `--set answer.cite=false`
    turns citing off). The context table's source column names where each node comes from: document, chunk number
    and character span [start:end). The memory must exist (`gemrag index` makes it); asking changes nothing but the
    model caches and the usage log.

    On a terminal the answer is printed as the model writes it (--no-stream waits for the whole answer), after the
    retrieval and any build (--build-missing shows its progress bars on standard error first), so a progress bar
    and the answer never share the screen at once. A streamed answer shows its [n] markers as the model writes
    them, also one naming no context passage; the sources under it count such markers as dropped, as they are
    under a whole answer (whose text has them removed). Each answer sentence is checked against the passages it
    cites (`--set answer.verify=flag|drop|off`, default flag): a sentence they do not support is printed in red
    and marked ⚠ (under a streamed answer, listed after it); with `drop` it is removed and listed as dropped; --json
    gives the checks as "verification". A sentence written without a marker is cited after the answer with the
    context passage found to support it (its marker added, in cyan, and counted under the answer), or marked ⚠
    uncited when none does (`--set answer.verify_uncited=flag`: marked uncited without looking). A sentence its own
    markers do not support is re-cited with another context passage found to support it (that marker replaces its
    own, in cyan, and is counted under the answer; `--set answer.verify_miscited=flag`: marked ⚠ as written). A
    question read by its form (`--set answer.lists=auto`, `--set answer.hypotheticals=auto`) says so under the
    answer, as does an answer asked again because it only restated the question or said yes or no to alternatives
    (`--set answer.repair=auto`). A strategy's own settings are `--set` items: `--set gem.search=rank` gives GEM's
    literal Algorithm 1."""
    with cli_errors("ask again", also=(ValueError,)), deprecated_sets("gem", {"search": search}) as old_sets:
        cfg = build_config(
            config,
            strategy=strategy,
            sets=old_sets + (set_ or []),
            models=models,
            memory={"budget": budget},
        )
        opts = [c.strip() for c in choices.split("|")] if choices is not None else None
        if opts is not None and not 2 <= len(opts) <= len(LETTERS):
            raise ValueError(
                f"--choices {choices!r} gives {len(opts)} option(s); give 2 to {len(LETTERS)} separated by '|'"
            )
        if as_json and stream:
            raise ValueError("--json prints one JSON document and never streams: give --json or --stream, not both")
        streamed = streams(stream, as_json, out.is_terminal) and opts is None and not retrieve_only
        location = memory_target(memory, cfg, existing=True)
        with open_memory(location, cfg, rich_progress(err) if build_missing else None) as mem:
            if retrieve_only:
                hits, answer = mem.retrieve(question, budget, build=build_missing), None
            elif streamed:
                answer = _print_stream(mem.ask_stream(question, None, budget, build=build_missing))
                hits = answer.hits
            else:
                answer = mem.ask(question, opts, budget, build=build_missing)
                hits = answer.hits
            if as_json:
                name = mem.strategy.name
                payload: dict[str, Any] = (
                    describe_answer(mem.store, answer, name).model_dump(mode="json")
                    if answer is not None
                    else {
                        "answer": None,
                        "choice": None,
                        "retrieval_seconds": None,
                        "strategy": name,
                        "context": [n.model_dump(mode="json") for n in describe_hits(mem.store, hits, name)],
                    }
                )
                out.print_json(json.dumps(payload))
                return
    if answer is not None:
        if not streamed:
            letter = f"({'ABCDEFGHIJ'[answer.choice]}) " if answer.choice is not None else ""
            out.print(Text.assemble(("answer: ", "bold"), letter, marked(answer)))
        for line in [*question_form_lines(answer), *verification_lines(answer, listed=streamed)]:
            out.print(line)
        sources = cited_sources(answer)
        if sources:
            out.print("[bold]sources:[/]")
            for source in sources:
                out.print(f"  {escape(source)}")
    table = Table("rank", "id", "kind", "score", "source", "text", title="context")
    for h in hits:
        text = h.text if show_context else (h.text[:100] + ("…" if len(h.text) > 100 else ""))
        table.add_row(
            str(h.rank + 1), str(h.node_id), h.kind, f"{h.score:.3f}", escape(source_label(h.provenance)), escape(text)
        )
    out.print(table)


def marked(answer: Answer) -> Text:
    """The answer's text with each unsupported sentence (``answer.verification``) in red and followed by
    :data:`UNSUPPORTED_MARK` (and ``uncited`` for a sentence that names no passage and none was found to support), so
    the mark shows also without colours; the marker of a citation added after the answer (``added_citation``) in
    italic cyan (:func:`verification_lines` says what it is)."""
    text = Text()
    pos = 0
    for check in answer.verification:
        if check.supported and check.added_citation is None:
            continue
        text.append(answer.text[pos : check.end], style=None)
        begin = len(text) - (check.end - check.start)
        if check.supported:  # cited after the answer: its marker is the sentence's last
            at = check.sentence.rfind(f"[{check.added_citation}]")
            text.stylize("italic cyan", begin + at, begin + at + len(f"[{check.added_citation}]"))
        else:
            text.stylize("red", begin, len(text))
            text.append(f" {UNSUPPORTED_MARK}" + (" uncited" if check.uncited else ""), style="bold red")
        pos = check.end
    text.append(answer.text[pos:])
    return text


def question_form_lines(answer: Answer) -> list[Text]:
    """What ``gemrag ask`` prints under the answer about how the question's form was read (``Answer.reading``): a
    list question (``[answer] lists``, its ``list_cue``) was asked for every item the context names; a hypothetical
    question (``[answer] hypotheticals``, its ``hypothetical_cue``) was asked for what the context points to, so its
    answer is an inference the context need not state (and verification may flag it as unsupported). No line for a
    question read as written. A multiple-choice answer chosen by its options' likelihood (``[answer]
    choice_scoring``) gets one line with each option's score (:class:`~gemrag.answers.answer.ScoredOption`); one
    chosen by its letter's probability, each option's probability (averaged over the option orders asked). An answer
    asked again because its form did not fit the question (``[answer] repair``) gets a line with its fault and first
    answer; one asked again because the first named a worked example's name (``[answer] demonstrations``), a line
    with that name. An answer whose dates were completed from a dated context (``[answer] dates``: a year put in,
    the day a turn was said on replaced by the time it tells, a day put back as its week;
    :func:`gemrag.answers.dates.completion.complete_dates`) gets a line listing them as they now read."""
    lines: list[Text] = []
    options = ScoredOption.listed(answer.reading)
    if options and answer.reading.get("choice_scoring") == "letter_probability":
        orders = int(answer.reading.get("option_orders") or 1)
        over = f", averaged over {orders} orders of the options" if orders > 1 else ""
        scores = ", ".join(f"{LETTERS[i]} {math.exp(o.score):.2f}" for i, o in enumerate(options))
        lines.append(Text(f"· chosen by the letters' probabilities{over}: {scores}", style="dim"))
    elif options:
        how = {
            "likelihood": "the mean log-probability per token",
            "calibrated": "the log-probability minus that without the context",
        }.get(str(answer.reading.get("choice_scoring")), "score")
        scores = ", ".join(f"{LETTERS[i]} {o.score:.2f}" for i, o in enumerate(options))
        lines.append(Text(f"· chosen by likelihood, the options not shown ({how}): {scores}", style="dim"))
    cue = answer.reading.get("list_cue")
    if cue:
        lines.append(Text(f'· read as a list question ("{cue}"): asked for every item the context names', style="dim"))
    cue = answer.reading.get("hypothetical_cue")
    if cue:
        lines.append(
            Text(
                f'· read as a hypothetical question ("{cue}"): asked for what the context points to; the answer is '
                "an inference the context need not state",
                style="dim",
            )
        )
    repair = Repair.of(answer.reading)
    if repair is not None:
        fault = REPAIR_FAULTS[repair.fault]
        kept = "the second answer kept" if repair.kept == "second" else "the second had the same fault; the first kept"
        lines.append(Text(f'· the first answer, "{repair.first_answer}", {fault}: asked again, {kept}', style="dim"))
    completed = answer.reading.get("dates_completed")
    if isinstance(completed, list) and completed:
        said = ", ".join(str(d) for d in completed)
        lines.append(Text(f"· dates completed from the dated context (no model call): {said}", style="dim"))
    copied = answer.reading.get("example_copied")
    if copied:
        lines.append(
            Text(
                f'· the first answer named "{copied}", from the worked examples, not the context: asked again '
                "without the examples",
                style="dim",
            )
        )
    return lines


#: How ``gemrag ask`` names an answer's fault (:data:`gemrag.answers.repair.Fault`) on the line under the answer.
REPAIR_FAULTS = {
    "restated": "only restated the question",
    "yes_no_to_alternatives": "said yes or no to a question offering alternatives",
}


def verification_lines(answer: Answer, *, listed: bool) -> list[Text]:
    """What ``gemrag ask`` prints under the answer about its checked sentences: how many of them their citations do
    not support (the context does not, for an answer that cites no passage and was checked against the whole
    context), how many are uncited (no marker, and no passage found to support them), how many were cited after
    the answer (no marker, and the passage found to support them cited: ``[answer] verify_uncited = "cite"``), how
    many were re-cited (their own markers did not support them, another passage did: ``verify_miscited``), those
    flagged for quoting text their passages do not hold (``method == "quote"``) on a line of their own, each
    of them quoted when ``listed`` (a streamed answer, printed before it was checked and without the added markers),
    and the sentences ``verify = "drop"`` removed. No line when every sentence is supported by its own citations or
    nothing was checked."""
    lines: list[Text] = []
    total = len(answer.verification)
    of = f" of {total} sentence{'s' if total != 1 else ''}"

    def group(checks: list[SentenceCheck], mark: str, style: str, says: str) -> None:
        """A line counting ``checks`` (``mark`` and what ``says``), then each of them quoted when ``listed``."""
        if checks:
            lines.append(Text.assemble((f"{mark} ", f"bold {style}"), f"{len(checks)}{of} {says}"))
            lines.extend(Text.assemble(("  - ", style), (c.sentence, style)) for c in checks if listed)

    bad = [c for c in answer.unsupported if not c.uncited and c.method != "quote"]
    misquoted = [c for c in answer.unsupported if not c.uncited and c.method == "quote"]
    if (bad or misquoted) and not any(c.cited for c in bad + misquoted):
        # the answer cites no passage: each sentence was checked against the whole context
        group(bad, UNSUPPORTED_MARK, "red", "not supported by the context (the answer cites no passage)")
        group(misquoted, UNSUPPORTED_MARK, "red", "quoting text the context does not hold")
    else:
        one = len(bad) == 1
        group(bad, UNSUPPORTED_MARK, "red", f"not supported by the passages {'it cites' if one else 'they cite'}")
        one = len(misquoted) == 1
        group(
            misquoted,
            UNSUPPORTED_MARK,
            "red",
            f"quoting text the passages {'it cites' if one else 'they cite'} do not hold",
        )
    uncited = [c for c in answer.unsupported if c.uncited]
    one = len(uncited) == 1
    group(
        uncited,
        UNSUPPORTED_MARK,
        "red",
        f"uncited: {'it names' if one else 'they name'} no passage, and none was found to support "
        f"{'it' if one else 'them'}",
    )
    recited = [c for c in answer.verification if c.added_citation is not None and c.recited_from]
    changes = ", ".join(f"{''.join(f'[{n}]' for n in c.recited_from)} -> [{c.added_citation}]" for c in recited)
    group(
        recited,
        "+",
        "cyan",
        f"re-cited ({changes}): not supported by the passage {'it' if len(recited) == 1 else 'they'} named, found "
        "supported by another",
    )
    after = [c for c in answer.verification if c.added_citation is not None and not c.recited_from]
    markers = ", ".join(f"[{c.added_citation}]" for c in after)
    group(
        after,
        "+",
        "cyan",
        f"cited after the answer ({markers}): written without a marker, found supported by "
        f"{'that passage' if len(after) == 1 else 'those passages'}",
    )
    if answer.dropped_sentences:
        k = len(answer.dropped_sentences)
        lines.append(
            Text(f"{UNSUPPORTED_MARK} {k} unsupported sentence{'s' if k != 1 else ''} dropped:", style="bold red")
        )
        lines += [Text.assemble(("  - ", "red"), (s, "red")) for s in answer.dropped_sentences]
    return lines


def streams(flag: bool | None, as_json: bool, terminal: bool) -> bool:
    """Whether ``gemrag ask`` prints its answer as the model writes it: never with ``--json``; else as ``--stream`` /
    ``--no-stream`` say, and without either when standard output is a terminal (``terminal``)."""
    if as_json:
        return False
    return terminal if flag is None else flag


def _print_stream(stream: Generator[str | Answer, None, None]) -> Answer:
    """Print ``answer: `` and each piece of ``stream`` (:meth:`Memory.ask_stream`) on standard output as it comes
    (as plain text: no markup, no highlighting, no wrapping inserted), then a newline; closes the stream (Ctrl-C
    stops the generation). Returns the final Answer.

    Raises:
        GemragError: the LLM failed.
    """
    answer: Answer | None = None
    with contextlib.closing(stream):
        out.print("[bold]answer:[/] ", end="")
        try:
            for item in stream:
                if isinstance(item, str):
                    out.print(item, end="", markup=False, highlight=False, soft_wrap=True)
                else:
                    answer = item
        finally:
            out.print()  # the answer's line ends, also before an error or an interruption is reported
    if answer is None:
        raise GemragError("the answer stream ended without its answer")
    return answer
