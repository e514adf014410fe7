"""Agreement of the factual-correctness judge with hand labels (UnWeaver section 3: RAGAS Factual Correctness).

``benchmarks/factual_labels.jsonl`` holds 30 real answers (8 labelled correct, 22 incorrect) of the run ::

    gemrag eval covid_qa ../shared/data/covid_qa/covid_qa_dev30.json --documents 1546,1547,1549,1545 \
        --strategies dense,bm25 --judge-model none --llm-model qwen2.5-coder-0.5b --out eval-out/covid-labels

(the 19 questions of docs/results.md's COVID-QA dev set, B = 4, short answers; each distinct (question, answer) pair
once), each labelled *correct* or *incorrect* by hand against the reference answer (the ``note`` says why).
COVID-QA (deepset) is Apache-2.0, so question, reference and answer are stored in the file. Labelling rule:
*correct* states the reference's key fact (the same number, name or finding; extra words that do not contradict it
are allowed); *incorrect* contradicts it, misses it, gives only part of a list or range as if it were the whole, or
is a fragment that does not answer the question.

The judge (:class:`gemrag.eval.judging.factual.FactualJudge`) scores each answer's claim F1 against the reference; an
answer counts as judged correct when F1 >= :data:`gemrag.eval.judging.factual.CORRECT_AT` (0.5). The script prints each
verdict, the accuracy, Cohen's kappa (``sklearn.metrics.cohen_kappa_score``), the confusion matrix (rows: hand label,
columns: judge; ``unjudged`` = malformed after the retries) and the mean F1 of the hand-correct and hand-incorrect
answers (a view that does not depend on the threshold). No cache: every run asks the model (4 calls per answer). ::

    python benchmarks/factual_agreement.py --llm-model qwen2.5-coder-0.5b --set llm.n_threads=1
    python benchmarks/factual_agreement.py --judge-base-url http://127.0.0.1:8080/v1 --judge-model NAME

A judge outside gemrag (a person, another tool) is measured through a blind sheet (the format of
:mod:`gemrag.eval.judging.sheet`, labels ``correct`` / ``incorrect``; the hand labels are not in it)::

    python benchmarks/factual_agreement.py --sheet sheet.jsonl      # write it; fill in each "verdict"
    python benchmarks/factual_agreement.py --verdicts sheet.jsonl   # agreement of the filled verdicts
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

LABELS = Path(__file__).resolve().parent / "factual_labels.jsonl"
CLASSES = ["correct", "incorrect"]


def main() -> int:
    """Judge every labelled answer and print the agreement."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from agreement import report_agreement

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument("--llm-model", help="embedded judge model (default: the configured LLM)")
    ap.add_argument("--set", action="append", default=[], help="section.key=value config override (repeatable)")
    ap.add_argument("--judge-model", help="served model name (with --judge-base-url)")
    ap.add_argument("--judge-base-url", help="OpenAI-compatible endpoint of the judge")
    ap.add_argument("--limit", type=int, help="judge only the first N items")
    ap.add_argument("--json", type=Path, help="also write the verdicts and figures to this file")
    ap.add_argument("--sheet", type=Path, help="write a blind judging sheet of the labelled answers and exit")
    ap.add_argument("--verdicts", type=Path, help="measure the verdicts of this filled sheet instead of a model")
    args = ap.parse_args()

    from gemrag.config import load_config
    from gemrag.eval.judging.factual import CORRECT_AT, FactualJudge
    from gemrag.eval.judging.judge import judge_settings
    from gemrag.eval.judging.sheet import read_verdicts
    from gemrag.models.factory import build_llm

    items: list[dict[str, Any]] = [json.loads(line) for line in args.labels.read_text(encoding="utf-8").splitlines()]
    items = items[: args.limit] if args.limit else items
    if args.sheet:
        fields = ("question", "reference", "answer")
        rows = [{"item": i["id"], **{f: i[f] for f in fields}, "verdict": None} for i in items]
        args.sheet.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        print(f"{len(rows)} items written to {args.sheet}")
        return 0
    judge: FactualJudge | None = None
    if args.verdicts:
        outside = read_verdicts(args.verdicts, CLASSES)
        name = f"external verdicts ({args.verdicts.name})"
    else:
        overrides = {"llm": {"model": args.llm_model}} if args.llm_model else None
        config = load_config(None, overrides, args.set)
        settings = judge_settings(config, args.judge_model, args.judge_base_url) or config.llm
        judge = FactualJudge(build_llm(settings, config.cache_dir))
        name = f"{settings.provider}:{settings.model}"
    print(f"judge {name}, {len(items)} labelled answers, correct iff claim F1 >= {CORRECT_AT}")
    start = time.perf_counter()
    for item in items:
        if judge is None:
            item["judge"] = outside.get(item["id"]) or "unjudged"
        else:
            judgement = judge.score(item["question"], item["answer"], item["reference"])
            item["f1"], item["error"] = judgement.f1, judgement.error
            verdict = None if judgement.f1 is None else "correct" if judgement.f1 >= CORRECT_AT else "incorrect"
            item["judge"] = verdict or "unjudged"
        f1 = "" if item.get("f1") is None else f"F1={item['f1']:.2f}"
        print(f"{item['id']} label={item['label']:<9} judge={item['judge']:<9} {f1:<7} {item['answer'][:60]!r}")
    seconds = time.perf_counter() - start
    accuracy, kappa, matrix, labels = report_agreement(items, CLASSES, seconds, "answer")
    means = {}
    for label in CLASSES:
        scores = [i["f1"] for i in items if i["label"] == label and i.get("f1") is not None]
        means[label] = sum(scores) / len(scores) if scores else None
        if scores:
            print(f"mean judged F1 of the hand-{label} answers: {means[label]:.3f} (n = {len(scores)})")
    if args.json:
        figures = {"judge": name, "accuracy": accuracy, "kappa": kappa, "confusion": matrix.tolist(),
                   "labels": labels, "mean_f1": means, "seconds": seconds, "items": items}  # fmt: skip
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
