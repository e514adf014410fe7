"""Write the questions of a LoCoMo file that have a time anchor, as a LoCoMo file of their own.

Time-aware reading (``[answer] dates = "auto"``) changes the prompt only for a question with a time anchor
(:func:`gemrag.answers.dates.time_anchor`: "when", "before", "in March", "the first time" ...) whose passages are
dated; every other question is answered from the very prompt of the plain reading. Pairing the two readings on the
anchored questions alone measures everything the setting changes, at a fraction of the calls of the whole set. The
output keeps each conversation (so the memories are the same) and only its anchored questions, optionally of some
categories only.

Usage::

    python benchmarks/anchored_questions.py $DATA/locomo/locomo_dev3.json anchored.json --categories 1,3,4,5
    gemrag eval locomo anchored.json --strategies fused ...              # plain, then --set answer.dates=auto

Prints per category how many questions were kept of how many. Raises ``SystemExit`` (exit 2) on a file that is not
LoCoMo's layout (a list of conversations, each with a ``qa`` list).
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

from gemrag.answers.dates import time_anchor


def anchored(conversations: list[dict], categories: set[int] | None) -> tuple[list[dict], dict[int, tuple[int, int]]]:
    """The conversations with only their anchored questions (of ``categories``; None: all), and per category
    (kept, total). Conversations keep every other field (the memories built from them are the same)."""
    kept: collections.Counter[int] = collections.Counter()
    total: collections.Counter[int] = collections.Counter()
    out = []
    for conversation in conversations:
        questions = []
        for qa in conversation["qa"]:
            category = int(qa["category"])
            total[category] += 1
            if (categories is None or category in categories) and time_anchor(qa["question"]) is not None:
                kept[category] += 1
                questions.append(qa)
        out.append({**conversation, "qa": questions})
    return out, {c: (kept[c], total[c]) for c in sorted(total)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="a LoCoMo JSON file (e.g. locomo_dev3.json)")
    parser.add_argument("out", type=Path, help="where to write the anchored questions' file")
    parser.add_argument("--categories", default="", help="comma-separated categories to keep (default: all)")
    args = parser.parse_args()
    data = json.loads(args.source.read_text(encoding="utf-8"))
    if not isinstance(data, list) or not all(isinstance(c, dict) and isinstance(c.get("qa"), list) for c in data):
        raise SystemExit(f"error: {args.source} is not a LoCoMo file (a list of conversations with 'qa')")
    categories = {int(c) for c in args.categories.split(",") if c.strip()} or None
    out, counts = anchored(data, categories)
    args.out.write_text(json.dumps(out), encoding="utf-8")
    print("| category | anchored kept | questions |\n|---|---|---|")
    for category, (kept, total) in counts.items():
        print(f"| {category} | {kept} | {total} |")
    print(f"{sum(k for k, _ in counts.values())} questions written to {args.out}")


if __name__ == "__main__":
    main()
