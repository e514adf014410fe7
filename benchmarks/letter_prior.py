"""PriDe on a recorded multiple-choice run: the letter prior a model shows, and what dividing it out would change.

Reads a published run (``results/NAME.json`` and its records) answered with ``[answer] choice_scoring =
"letter_probability"`` under every cyclic order of the options (``option_orders`` = the number of options), whose
records keep each order's letter distribution (``reading.order_letter_logprobs``), and prints, with no model call:

* the prior over the letters PriDe estimates from all questions (Zheng et al., ICLR 2024, "Large Language Models Are
  Not Robust Multiple Choice Selectors", section 3; :func:`gemrag.answers.letter_probability.letter_prior`): the
  model's lean to a letter whatever option it shows, as probabilities;
* accuracy (%, questions right / questions) of the original order's most probable letter, of the orders averaged
  (:func:`~gemrag.answers.letter_probability.average_over_orders`), and of the original order debiased by PriDe
  (:func:`~gemrag.answers.letter_probability.debiased`) with the prior estimated, label-free, from the questions of
  the *other* groups (stories), so no question's own orders enter its prior;
* PriDe's own protocol: the prior from the first group's questions, applied to the others' original order.

    python benchmarks/letter_prior.py quality62-fused-each-b8-lp4 --data $DATA/quality/quality_dev5.jsonl

The gold option of each question is read from its published record (``gold_index``, kept by records published since
it was added) or, with ``--data``, from the QuALITY file (for older records, which keep the gold answer's text, not
its position). Exits 1 with a message when the run's records hold no letter distributions under every order.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gemrag.answers.choices import LETTERS
from gemrag.answers.letter_probability import average_over_orders, debiased, letter_prior
from gemrag.errors import GemragError
from gemrag.eval.loaders.quality import load_quality
from gemrag.eval.published import load_published, load_records


def _best(values: Sequence[float]) -> int:
    return values.index(max(values))


def _percent(right: int, n: int) -> str:
    return f"{right}/{n} = {100 * right / n:.1f} %" if n else "no questions"


def _probabilities(logprobs: Sequence[float]) -> str:
    return ", ".join(f"{LETTERS[d]} {math.exp(lp):.3f}" for d, lp in enumerate(logprobs))


def _every_order(record: dict[str, Any]) -> bool:
    orders = (record.get("reading") or {}).get("order_letter_logprobs") or []
    return len(orders) > 1 and all(len(o) == len(orders) for o in orders)


def report(records: Sequence[dict[str, Any]], gold_of: dict[str, int]) -> list[str]:
    """The report's lines for ``records`` (published records with ``question_id``, ``group`` and
    ``reading.order_letter_logprobs`` under every cyclic order); ``gold_of``: each question's gold option (0-based).

    Raises:
        ValueError: no record has a letter distribution under every cyclic order and a gold option.
    """
    asked = [r for r in records if _every_order(r) and r.get("question_id") in gold_of]
    if not asked:
        raise ValueError("no record holds its letter distributions under every cyclic order and a gold option")
    orders = [r["reading"]["order_letter_logprobs"] for r in asked]
    gold = [gold_of[r["question_id"]] for r in asked]
    groups = [str(r.get("group")) for r in asked]
    n = len(asked)
    one = sum(_best(o[0]) == g for o, g in zip(orders, gold, strict=True))
    averaged = sum(_best(average_over_orders(o)) == g for o, g in zip(orders, gold, strict=True))
    crossed = 0
    for group in sorted(set(groups)):
        others = [o for o, gr in zip(orders, groups, strict=True) if gr != group]
        prior = letter_prior(others) if others else None
        for o, g, gr in zip(orders, gold, groups, strict=True):
            if gr == group:
                crossed += _best(debiased(o[0], prior) if prior else o[0]) == g
    first = sorted(set(groups))[0]
    first_prior = letter_prior([o for o, gr in zip(orders, groups, strict=True) if gr == first])
    rest = [(o, g) for o, g, gr in zip(orders, gold, groups, strict=True) if gr != first]
    lines = [
        f"{n} questions in {len(set(groups))} groups, {len(orders[0])} orders each",
        f"letter prior (all questions): {_probabilities(letter_prior(orders))}",
        f"most probable letter, original order: {_percent(one, n)}",
        f"orders averaged: {_percent(averaged, n)}",
        f"original order debiased, prior of the other groups: {_percent(crossed, n)}",
        f"chosen letters, original order: {dict(sorted(Counter(LETTERS[_best(o[0])] for o in orders).items()))}; "
        f"gold: {dict(sorted(Counter(LETTERS[g] for g in gold).items()))}",
        f"PriDe's protocol, prior from {first} ({_probabilities(first_prior)}) on the other {len(rest)}: original "
        f"{_percent(sum(_best(o[0]) == g for o, g in rest), len(rest))}, debiased "
        f"{_percent(sum(_best(debiased(o[0], first_prior)) == g for o, g in rest), len(rest))}, orders averaged "
        f"{_percent(sum(_best(average_over_orders(o)) == g for o, g in rest), len(rest))}",
    ]
    return lines


def gold_options(records: Sequence[dict[str, Any]], data: Path | None) -> dict[str, int]:
    """Each question's gold option (0-based): from the QuALITY file ``data`` when given, else from the records'
    ``gold_index``.

    Raises:
        ValueError: no ``data`` and a record without ``gold_index`` (a record published before it was kept).
    """
    if data is not None:
        return {q.id: q.gold_index for q in load_quality(data).questions if q.gold_index is not None}
    if any(r.get("gold_index") is None for r in records):
        raise ValueError("these records do not keep gold_index (published before it was kept): give --data")
    return {str(r["question_id"]): int(r["gold_index"]) for r in records}


def main(argv: Sequence[str] | None = None) -> int:
    """Print the report for a published run (module docstring); 1 with a message on bad input."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="a published run (results/NAME.json)")
    parser.add_argument("--data", type=Path, help="the QuALITY file of the run (for records without gold_index)")
    parser.add_argument("--results", type=Path, default=Path("results"), help="the published results directory")
    args = parser.parse_args(argv)
    try:
        records = load_records(load_published(args.name, args.results), args.results)
        gold_of = gold_options(records, args.data)
        lines = report(records, gold_of)
    except (OSError, ValueError, GemragError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
