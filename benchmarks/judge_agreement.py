"""Agreement of the acceptance test's judge with hand labels (HLGraphRAG section 4, Figure 4.1).

``benchmarks/judge_labels.jsonl`` holds 34 candidate replies to real CMU DoG turns, each labelled choke / inaccurate
/ correct by hand (12 correct, 11 inaccurate, 11 choke; the ``note`` says why). The candidates were written for
gemrag; the conversation text is NOT copied into the repository (CMU DoG states no license): each item names its
``conversation_id`` and ``turn`` in ``valid.jsonl``, and this script reads the real reply, the other speaker's
message and the document section the speaker was reading from ``../shared/data/cmu_dog/`` (``real_starts``, the
real reply's first words, guards against a different file). Labelling rule: *correct* keeps every fact of the real
reply that the document supports; *inaccurate* keeps its meaning but loses or blurs a detail (a name, a number);
*choke* contradicts the document or the real reply, or names the wrong movie, person or opinion.

The judge (:class:`gemrag.eval.judging.judge.Judge`) classifies each candidate against the real reply; the script prints
each verdict, the accuracy, Cohen's kappa (``sklearn.metrics.cohen_kappa_score``) and the confusion matrix (rows:
hand label, columns: judge, ``unjudged`` = malformed after the retries). No cache: every run asks the model. ::

    HOME=/tmp/demohome python benchmarks/judge_agreement.py --llm-model qwen2.5-coder-0.5b
    python benchmarks/judge_agreement.py --judge-base-url http://127.0.0.1:8080/v1 --judge-model NAME

A judge outside gemrag (a person, another tool) is measured through a blind sheet, the same format as
``gemrag eval cmu_dog --sheet`` (:mod:`gemrag.eval.judging.sheet`; the hand labels are not in it)::

    python benchmarks/judge_agreement.py --sheet labels-sheet.jsonl      # write it; fill in each "verdict"
    python benchmarks/judge_agreement.py --verdicts labels-sheet.jsonl   # agreement of the filled verdicts
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "cmu_dog" / "valid.jsonl"
LABELS = Path(__file__).resolve().parent / "judge_labels.jsonl"
CLASSES = ["choke", "inaccurate", "correct"]


def resolve(labels: Path, data: Path) -> list[dict[str, Any]]:
    """The labelled items joined with the dataset: ``content`` (the section read at that turn), ``dialogue1``
    (the other speaker's last message) and ``real`` (the real reply).

    Raises:
        SystemExit: an item names a missing conversation or turn, or the real reply does not start as recorded.
    """
    from gemrag.eval.acceptance.runner import reply_turns
    from gemrag.eval.loaders.cmu_dog import load_cmu_dog

    corpus = load_cmu_dog(data)
    convs = {c.id: c for c in corpus.conversations}
    items = []
    for line in labels.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        conv = convs.get(item["conversation_id"])
        if conv is None or item["turn"] not in reply_turns(conv):
            raise SystemExit(
                f"{item['id']}: no generated turn {item['turn']} in conversation {item['conversation_id']}"
            )
        turn = conv.turns[item["turn"]]
        if not turn.text.startswith(item["real_starts"]):
            raise SystemExit(f"{item['id']}: the real reply does not start with {item['real_starts']!r}")
        sections = corpus.document(conv.doc_id).metadata["sections"]
        other = next((t.text for t in reversed(conv.turns[: item["turn"]]) if t.speaker != turn.speaker), "")
        items.append({**item, "content": sections[turn.doc_idx], "dialogue1": other, "real": turn.text})
    return items


def main() -> int:
    """Judge every labelled item and print the agreement (exit 2 without the dataset)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from agreement import report_agreement

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA, help="CMU DoG valid.jsonl (wikidata.json beside it)")
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument("--llm-model", help="embedded judge model (default: the configured LLM)")
    ap.add_argument("--judge-model", help="served model name (with --judge-base-url)")
    ap.add_argument("--judge-base-url", help="OpenAI-compatible endpoint of the judge")
    ap.add_argument("--json", type=Path, help="also write the verdicts and figures to this file")
    ap.add_argument("--sheet", type=Path, help="write a blind judging sheet of the labelled items and exit")
    ap.add_argument("--verdicts", type=Path, help="measure the verdicts of this filled sheet instead of a model")
    args = ap.parse_args()
    if not args.data.is_file():
        print(f"{args.data} not found (see ../shared/data/README.md)", file=sys.stderr)
        return 2

    from gemrag.config import load_config
    from gemrag.eval.judging.judge import Judge, judge_settings
    from gemrag.eval.judging.sheet import read_verdicts
    from gemrag.models.factory import build_llm

    items = resolve(args.labels, args.data)
    if args.sheet:
        fields = ("content", "dialogue1", "candidate")
        rows = [{"item": i["id"], "movie": "", **{f: i[f] for f in fields}, "correct": i["real"], "verdict": None}
                for i in items]  # fmt: skip
        args.sheet.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        print(f"{len(rows)} items written to {args.sheet}")
        return 0
    if args.verdicts:
        outside = read_verdicts(args.verdicts)
        name = f"external verdicts ({args.verdicts.name})"
    else:
        config = load_config(None, {"llm": {"model": args.llm_model}} if args.llm_model else None)
        settings = judge_settings(config, args.judge_model, args.judge_base_url) or config.llm
        judge = Judge(build_llm(settings, config.cache_dir))
        name = f"{settings.provider}:{settings.model}"
    print(f"judge {name}, {len(items)} labelled replies")
    start = time.perf_counter()
    for item in items:
        if args.verdicts:
            item["judge"] = outside.get(item["id"]) or "unjudged"
        else:
            verdict = judge.classify(item["content"], item["dialogue1"], item["candidate"], item["real"])
            item["judge"] = verdict.verdict or "unjudged"
        print(f"{item['id']} label={item['label']:<10} judge={item['judge']:<10} {item['candidate'][:70]}")
    seconds = time.perf_counter() - start
    accuracy, kappa, matrix, labels = report_agreement(items, CLASSES, seconds, "reply")
    if args.json:
        figures = {"judge": name, "accuracy": accuracy, "kappa": kappa,
                   "confusion": matrix.tolist(), "labels": labels, "seconds": seconds, "items": items}  # fmt: skip
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
