"""How well the citation check flags unsupported answer sentences, against hand labels, and what it costs.

``benchmarks/verify_labels.jsonl`` holds 30 answers (134 sentences) to COVID-QA questions, one answer per line: the
question (with its dataset id), the cited passages (each with its provenance: the COVID-QA document and the character
span ``[start, end)`` of the passage in that document's context; passage ``[1]`` holds the dataset's gold answer,
``[2]`` is another passage of the same paper), and the answer's sentences, each with its ``[n]`` markers and a hand
label. The sentences were written for this set as a realistic mix of what a small model answers: sentences the cited
passage states (*supported*, 89), sentences with one wrong detail or an added claim (*partial*, 7), and sentences
the cited passage does not state or contradicts, including ones citing the wrong passage (*unsupported*, 38). Each
label was given by reading the cited passage (the ``note`` says why). COVID-QA (deepset) is Apache-2.0, so the
passages are stored in the file.

The verifier (:func:`gemrag.answers.verification.verify_answer`) checks each answer; the flag under test is "not
supported" (*partial* and *unsupported* are its positives). Four settings of ``[answer] verify_overlap_words`` and
``verify_overlap_first``:

* ``auto``: the defaults (6, overlap first): sentences of at most 6 words by token overlap; a longer one the cited
  passages' words do not cover is flagged by overlap, the others go to the LLM's entailment check;
* ``model``: 6 without overlap first: every sentence of more than 6 words by the LLM (the default before overlap
  first was measured);
* ``entailment``: 0, every sentence by the LLM;
* ``overlap``: every sentence by token overlap (no model call).

For each it prints the confusion counts, the precision and recall of the flag (with Wilson 95 % intervals), the
accuracy, and the extra LLM requests, prompt and completion tokens and seconds per sentence.

Uncited sentences (no marker, in an answer citing elsewhere) are in ``benchmarks/verify_uncited_labels.jsonl`` (11
answers, 44 sentences; the same format, ``--labels`` reads it): each answer's context is the question's two passages
and one or two passages of other COVID-QA papers (a distractor comes first in one answer); 12 sentences cite their
passage, 32 have no marker: 21 that a passage of the context states (``supported_by`` names it, by reading) and 11
that none states or that contradict one. The flag is then "not supported by the context". ``--uncited cite,flag``
runs each mode with ``[answer] verify_uncited`` as given: ``cite`` (post-hoc citation: the best-matching passage
checked, its marker added when it supports the sentence) or ``flag`` (every uncited sentence flagged unchecked); the
report adds how many sentences were cited after the answer and how many of those got a passage their label names.
``--embedder`` matches the uncited sentences checked by entailment with the configured embedder (the product's
choice; without it, by token overlap), and first prints how often each of the two picks a passage that states the
sentence (no LLM). The checks go through
the memory's cache and meter (a fresh cache in a temporary directory: ``auto`` runs first, so its cost is the
uncached one; ``entailment`` reuses its verdicts; ``--cache DIR`` keeps the cache, so that a run stopped early
resumes where it stopped). With a model, each answer's verdicts are printed as they come (``.`` agrees with the
label, ``x`` does not). ::

    python benchmarks/verify_citations.py                                   # overlap only (no model)
    python benchmarks/verify_citations.py --labels benchmarks/verify_uncited_labels.jsonl --uncited cite,flag
    python benchmarks/verify_citations.py --llm-model qwen2.5-coder-0.5b --set llm.n_ctx=2048 --cache verify-cache
    python benchmarks/verify_citations.py --llm-model qwen2.5-coder-0.5b --cache verify-cache --publish verify-05b

``benchmarks/verify_real_labels.jsonl`` (the same format, 62 answers, 130 sentences) holds what the model really
wrote: the 1.5B's cited answers to the 62 questions of ten COVID-QA papers, asked as a user asks (``Memory.ask``, the
default strategy and budget; collected by ``benchmarks/verify_collect.py``), each sentence labelled by reading the
passages it cites (an uncited one: the context; ``supported_by`` names the passages that state it, also for a
sentence citing the wrong one): *supported* (90), *partial* (14), *unsupported* (19), and *no claim* (7: "This is
stated in.", a list's heading; counted as supported, since flagging them tells the reader nothing). A reference
("This information is provided in [1].") is labelled by whether its passages state the claim before it, as it is
checked. The overlap rules were changed after
reading that set's errors (reading frames, list items, references, stems), so ``benchmarks/verify_held_labels.jsonl``
holds 28 more answers of the same kind (two other papers, 63 sentences), collected and labelled after the change.

``--publish NAME`` also writes the figures (each mode's confusion counts, intervals, costs and per-sentence verdicts)
as the record ``results/NAME.json`` (``kind`` ``verify-citations``), which the documentation's tables cite.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # results_record (benchmarks/ is no package)
from results_record import write_record  # noqa: E402

LABELS = Path(__file__).resolve().parent / "verify_labels.jsonl"
#: Each mode's ``(verify_overlap_words, verify_overlap_first)``.
MODES = {"auto": (6, True), "model": (6, False), "entailment": (0, False), "overlap": (10_000, True)}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion k / n (95 % by default); (0, 1) for n = 0."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _bare(text: str) -> str:
    """``text`` without white space (a sentence compared with its label)."""
    return "".join(text.split())


def run(
    items: list[dict[str, Any]],
    mode: str,
    llm: Any,
    meter: Any,
    store: Any,
    uncited: str = "cite",
    embedder: Any = None,
    miscited: str = "flag",
) -> dict[str, Any]:
    """Verify every answer with ``mode``'s overlap setting, ``uncited`` (``[answer] verify_uncited``) and ``miscited``
    (``[answer] verify_miscited``; ``"flag"`` by default here, so that each verdict is about the passages the labelled
    sentence cites, as its label is); the verdicts per sentence and the figures."""
    from gemrag.answers.answer import Answer
    from gemrag.answers.verification import verify_answer
    from gemrag.models.base import Usage
    from gemrag.prompting import parse_citations, strip_citations
    from gemrag.types import Hit

    before = meter.totals.get("query", Usage())
    start = time.perf_counter()
    rows = []
    for item in items:
        hits = [Hit(i, "chunk", 1.0, p["text"], i) for i, p in enumerate(item["passages"])]
        answer = Answer(item["answer"], None, hits, 0.0, 0.0, cited=parse_citations(item["answer"], len(hits)).cited)
        checked = verify_answer(
            lambda: llm,
            meter,
            store,
            item["question"],
            answer,
            "flag",
            overlap_words=MODES[mode][0],
            overlap_first=MODES[mode][1],
            uncited=uncited,  # type: ignore[arg-type]
            miscited=miscited,  # type: ignore[arg-type]
            embedder=embedder,
        )
        labelled = item["sentences"]
        if len(checked.verification) != len(labelled):
            raise SystemExit(f"{item['id']}: {len(checked.verification)} sentences split, {len(labelled)} labelled")
        for label, check in zip(labelled, checked.verification, strict=True):
            added = check.added_citation
            written = check.sentence if added is None else check.sentence.replace(f" [{added}]", "", 1)
            if check.recited_from and _bare(strip_citations(check.sentence)) == _bare(strip_citations(label["text"])):
                written = label["text"]  # its markers replaced: the same sentence without them
            # white space aside: a citation added before the final stop takes the space before it ("gene expression .")
            if _bare(written) != _bare(label["text"]):
                raise SystemExit(f"{item['id']}: split {written!r}, labelled {label['text']!r}")
            rows.append(
                {
                    "id": label["id"],
                    "label": label["label"],
                    "gold": label["supported"],
                    "supported": check.supported,
                    "method": check.method,
                    "added_citation": added,
                    "added_right": added in label.get("supported_by", []) if added is not None else None,
                    "uncited": check.uncited,
                    "recited_from": list(check.recited_from),
                }
            )
        if llm is not None:  # progress, so that an interrupted run shows what it did (its cache keeps it)
            marks = "".join("." if r["supported"] == r["gold"] else "x" for r in rows[-len(labelled) :])
            print(f"  {mode} {item['id']}: {marks}", flush=True)
    seconds = time.perf_counter() - start
    spent = meter.totals.get("query", Usage()) - before
    tp = sum(1 for r in rows if not r["gold"] and not r["supported"])  # flagged and truly unsupported
    fp = sum(1 for r in rows if r["gold"] and not r["supported"])
    fn = sum(1 for r in rows if not r["gold"] and r["supported"])
    tn = sum(1 for r in rows if r["gold"] and r["supported"])
    n = len(rows)
    figures: dict[str, Any] = {
        "mode": (mode if uncited == "cite" else f"{mode}, uncited={uncited}")
        + (f", miscited={miscited}" if miscited != "flag" else ""),
        "check": mode,
        "uncited_setting": uncited,
        "miscited_setting": miscited,
        "sentences": n,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": tp / (tp + fp) if tp + fp else None,
        "precision_ci": wilson(tp, tp + fp),
        "recall": tp / (tp + fn) if tp + fn else None,
        "recall_ci": wilson(tp, tp + fn),
        "accuracy": (tp + tn) / n,
        "by_method": {
            m: {
                "sentences": sum(1 for r in rows if r["method"] == m),
                "correct": sum(1 for r in rows if r["method"] == m and r["gold"] == r["supported"]),
            }
            for m in ("entailment", "overlap", "quote")
        },
        "partial_flagged": sum(1 for r in rows if r["label"] == "partial" and not r["supported"]),
        "partial": sum(1 for r in rows if r["label"] == "partial"),
        "recited": sum(1 for r in rows if r["recited_from"]),
        "recited_labelled_supported": sum(1 for r in rows if r["recited_from"] and r["gold"]),
        "recited_labelled_unsupported": sum(1 for r in rows if r["recited_from"] and not r["gold"]),
        "recited_right": sum(1 for r in rows if r["recited_from"] and r["added_right"]),
        "cited_after": sum(1 for r in rows if r["added_citation"] is not None and not r["recited_from"]),
        "cited_after_right": sum(1 for r in rows if r["added_right"] and not r["recited_from"]),
        "cited_after_wrong": sum(
            1 for r in rows if r["added_citation"] is not None and not r["gold"] and not r["recited_from"]
        ),
        "uncited": sum(1 for r in rows if r["uncited"]),
        "requests_per_sentence": (spent.calls + spent.cached) / n,
        "calls_per_sentence": spent.calls / n,
        "prompt_tokens_per_sentence": spent.prompt_tokens / n,
        "completion_tokens_per_sentence": spent.completion_tokens / n,
        "seconds_per_sentence": seconds / n,
        "rows": rows,
    }
    return figures


def picks(items: list[dict[str, Any]], embedder: Any) -> dict[str, int]:
    """How often the post-hoc citation of a long uncited sentence (checked by entailment) picks a passage that states
    it, matched by the embedder and by token overlap (no LLM): over the uncited sentences labelled supported."""
    from gemrag.answers.verification import post_hoc_citations
    from gemrag.prompting import parse_citations

    counts = {"sentences": 0, "embedder": 0, "overlap": 0}
    for item in items:
        texts = [p["text"] for p in item["passages"]]
        bare = [s for s in item["sentences"] if s["supported"] and not parse_citations(s["text"], len(texts)).cited]
        if not bare:
            continue
        sentences, methods = [s["text"] for s in bare], ["entailment"] * len(bare)
        by_embedder = post_hoc_citations(item["question"], sentences, texts, methods, embedder)  # type: ignore[arg-type]
        by_overlap = post_hoc_citations(item["question"], sentences, texts, methods)  # type: ignore[arg-type]
        for s, e, o in zip(bare, by_embedder, by_overlap, strict=True):
            counts["sentences"] += 1
            counts["embedder"] += e in s.get("supported_by", [])
            counts["overlap"] += o in s.get("supported_by", [])
    return counts


def report(f: dict[str, Any]) -> None:
    """Print one mode's figures."""

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.1f}"

    lo, hi = f["precision_ci"]
    rlo, rhi = f["recall_ci"]
    print(f"\n== {f['mode']}: {f['sentences']} sentences")
    print(f"flagged unsupported: tp={f['tp']} fp={f['fp']}   missed: fn={f['fn']}   kept: tn={f['tn']}")
    print(
        f"precision {pct(f['precision'])} % [{100 * lo:.1f}, {100 * hi:.1f}]   "
        f"recall {pct(f['recall'])} % [{100 * rlo:.1f}, {100 * rhi:.1f}]   accuracy {pct(f['accuracy'])} %"
    )
    print(f"partially supported flagged: {f['partial_flagged']} of {f['partial']}")
    if f["cited_after"] or f["uncited"]:
        print(
            f"cited after the answer: {f['cited_after']} ({f['cited_after_right']} with a passage its label names, "
            f"{f['cited_after_wrong']} labelled not supported)   left uncited: {f['uncited']}"
        )
    if f.get("recited"):
        print(
            f"re-cited: {f['recited']} ({f['recited_labelled_supported']} labelled supported by the passage they "
            f"cited, {f['recited_labelled_unsupported']} labelled not supported by it; {f['recited_right']} now cite a "
            "passage their label names)"
        )
    for m, c in f["by_method"].items():
        if c["sentences"]:
            print(f"  by {m}: {c['correct']} of {c['sentences']} right")
    print(
        f"per sentence: {f['requests_per_sentence']:.2f} LLM requests ({f['calls_per_sentence']:.2f} uncached), "
        f"{f['prompt_tokens_per_sentence']:.0f} prompt + {f['completion_tokens_per_sentence']:.1f} completion tokens, "
        f"{f['seconds_per_sentence']:.2f} s"
    )


def main() -> int:
    """Verify every labelled answer in each mode and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument("--llm-model", help="embedded model (default: none, overlap only)")
    ap.add_argument("--set", action="append", default=[], help="section.key=value config override (repeatable)")
    ap.add_argument("--limit", type=int, help="only the first N answers")
    ap.add_argument("--json", type=Path, help="also write the verdicts and figures to this file")
    ap.add_argument("--modes", default="auto,model,entailment,overlap", help="comma-separated, of: " + ", ".join(MODES))
    ap.add_argument(
        "--uncited", default="cite", help="comma-separated [answer] verify_uncited settings to run: cite, flag"
    )
    ap.add_argument(
        "--miscited",
        default="flag",
        help="comma-separated [answer] verify_miscited settings to run: flag (default here: the verdict is about the "
        "cited passages, as the labels are), recite",
    )
    ap.add_argument(
        "--embedder", action="store_true", help="match uncited sentences with the configured embedder (no LLM)"
    )
    ap.add_argument(
        "--cache", type=Path, help="a memory directory holding the LLM cache: a run stopped early resumes from it"
    )
    ap.add_argument("--publish", metavar="NAME", help="also write the figures as the record results/NAME.json")
    args = ap.parse_args()
    started, load0 = time.perf_counter(), os.getloadavg()[0]
    if args.publish and not re.fullmatch(r"[A-Za-z0-9_.-]+", args.publish):
        ap.error(f"--publish {args.publish!r}: use letters, digits, '-', '_' and '.' only")

    from gemrag.config import load_config
    from gemrag.models.cache import CachedLLM
    from gemrag.models.factory import build_llm
    from gemrag.models.meter import UsageMeter
    from gemrag.store import open_store

    items = [json.loads(line) for line in args.labels.read_text(encoding="utf-8").splitlines() if line.strip()]
    items = items[: args.limit] if args.limit else items
    modes = [m for m in args.modes.split(",") if args.llm_model or m == "overlap"]
    if unknown := [m for m in modes if m not in MODES]:
        ap.error(f"unknown mode(s): {', '.join(unknown)}")
    settings = args.uncited.split(",")
    if unknown := [u for u in settings if u not in ("cite", "flag")]:
        ap.error(f"unknown --uncited setting(s): {', '.join(unknown)}")
    recitings = args.miscited.split(",")
    if unknown := [u for u in recitings if u not in ("recite", "flag")]:
        ap.error(f"unknown --miscited setting(s): {', '.join(unknown)}")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(args.cache or Path(tmp) / "cache")
        meter = UsageMeter(None, "query")
        llm = embedder = None
        if args.embedder:
            from gemrag.models.cache import CachedEmbedder
            from gemrag.models.factory import build_embedder

            config = load_config(None, {}, args.set)
            embedder = CachedEmbedder(build_embedder(config.embedder), store, meter)
        if args.llm_model:
            config = load_config(None, {"llm": {"model": args.llm_model}}, args.set)
            llm = CachedLLM(build_llm(config.llm, config.cache_dir), store, meter)
            print(f"judge {config.llm.provider}:{config.llm.model}")
        n = sum(len(i["sentences"]) for i in items)
        bad = sum(1 for i in items for s in i["sentences"] if not s["supported"])
        print(f"{len(items)} answers, {n} sentences, {bad} labelled not supported")
        if embedder is not None:
            c = picks(items, embedder)
            print(
                f"post-hoc pick for {c['sentences']} supported uncited sentences, as checked by entailment: a passage "
                f"their label names for {c['embedder']} by the embedder, {c['overlap']} by token overlap"
            )
        for mode in modes:
            for uncited in settings:
                for miscited in recitings:
                    figures = run(items, mode, llm, meter, store, uncited, embedder, miscited)
                    report(figures)
                    results.append(figures)
        store.close()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    if args.publish:
        figures = {"model": args.llm_model, "labels": args.labels.name, "answers": len(items), "results": results}
        load = (load0, os.getloadavg()[0])
        path = write_record(
            args.publish, "verify-citations", figures, argv=None, seconds=time.perf_counter() - started, load=load
        )
        print(f"published: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
