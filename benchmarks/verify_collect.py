"""Collect real cited answers to COVID-QA questions for hand-labelling the citation check on what a model writes.

``benchmarks/verify_labels.jsonl`` holds answers written for that set; this script asks the model instead, as a user
asks (``Memory.ask``: the memory's default strategy and budget, ``[answer] cite`` on), over evaluation memories of
COVID-QA papers (one memory per paper, as ``gemrag eval covid_qa ... --memory DIR`` builds them), and writes each
answer in the labels file's format: the question (with its dataset id), the passages of its context (each with the
COVID-QA document and its character span ``[start, end)``), the answer with its ``[n]`` markers, and its sentences
(split as the verifier splits them: :func:`gemrag.answers.sentences.answer_sentences`), each with ``label`` and
``supported`` set to ``null`` for a person to fill in by reading the passages the sentence cites (``supported_by``:
the passages that state it, for a sentence without a marker). The answers are asked with ``[answer] verify = "off"``
(the benchmark verifies them) and ``verify_miscited`` is irrelevant here.

The model calls go through each memory's cache, so a run stopped early resumes. ::

    python benchmarks/verify_collect.py $DATA/covid_qa/covid_qa_dev30.json eval-out/mem-covid \\
        --llm-model qwen2.5-coder-1.5b --out benchmarks/verify_real_labels.jsonl

Then label every sentence (``label``: ``supported``, ``partial`` or ``unsupported``; ``supported``: true only for
``supported``; a ``note`` saying why) and run ``benchmarks/verify_citations.py --labels`` on the file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def questions(data: Path, documents: set[int] | None) -> list[dict[str, Any]]:
    """The COVID-QA questions of ``data`` (SQuAD format) with their document id, qa id and first gold answer, in file
    order; only those of ``documents`` when given."""
    out = []
    for article in json.loads(data.read_text(encoding="utf-8"))["data"]:
        for paragraph in article["paragraphs"]:
            doc = int(paragraph["document_id"])
            if documents is not None and doc not in documents:
                continue
            for qa in paragraph["qas"]:
                gold = qa["answers"][0]["text"] if qa.get("answers") else ""
                out.append({"document_id": doc, "qa_id": str(qa["id"]), "question": qa["question"], "gold": gold})
    return out


def main() -> int:
    """Ask every question of the memories' papers and write one answer per line, unlabelled."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path, help="the COVID-QA file (SQuAD format)")
    ap.add_argument("memories", type=Path, help="a directory of per-paper memories named <file stem>-<document id>")
    ap.add_argument("--llm-model", required=True, help="the embedded model that answers")
    ap.add_argument("--set", action="append", default=[], help="section.key=value config override (repeatable)")
    ap.add_argument("--limit", type=int, help="only the first N questions")
    ap.add_argument("--out", type=Path, required=True, help="the JSONL file to write (replaced)")
    args = ap.parse_args()

    from gemrag.answers.provenance import describe_hits
    from gemrag.answers.sentences import answer_sentences
    from gemrag.config import load_config
    from gemrag.memory import Memory

    overrides = {"llm": {"model": args.llm_model}, "answer": {"verify": "off"}}
    config = load_config(None, overrides, args.set)
    dirs = {int(p.name.rsplit("-", 1)[1]): p for p in sorted(args.memories.iterdir()) if p.is_dir()}
    if not dirs:
        raise SystemExit(f"{args.memories}: no per-paper memories (<file stem>-<document id>) in it")
    qs = questions(args.data, set(dirs))
    qs = qs[: args.limit] if args.limit else qs
    lines = []
    start = time.perf_counter()
    for k, q in enumerate(qs, 1):
        memory = Memory.open(dirs[q["document_id"]], config)
        try:
            answer = memory.ask(q["question"])
            nodes = describe_hits(memory.store, answer.hits, memory.strategy.name)
        finally:
            memory.close()
        passages = []
        for node in nodes:
            spans = [{"start": p.start, "end": p.end} for p in node.passages]
            passages.append(
                {
                    "text": node.text,
                    "source": {
                        "dataset": "covid_qa",
                        "file": args.data.name,
                        "document_id": q["document_id"],
                        "spans": spans,
                    },
                }
            )
        sentences = [
            {"id": f"r{k:03d}-{i + 1}", "text": s.text, "label": None, "supported": None, "note": ""}
            for i, s in enumerate(answer_sentences(answer.text, len(passages)))
        ]
        lines.append(
            {
                "id": f"covid_qa-{q['document_id']}-{q['qa_id']}",
                "question": q["question"],
                "question_source": {
                    "dataset": "covid_qa",
                    "file": args.data.name,
                    "document_id": q["document_id"],
                    "qa_id": q["qa_id"],
                    "gold_answer": q["gold"],
                },
                "passages": passages,
                "answer": answer.text,
                "sentences": sentences,
            }
        )
        print(f"[{k}/{len(qs)}] {time.perf_counter() - start:.0f} s  {len(sentences)} sentences", flush=True)
        args.out.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
