"""A run's per-question records in the form a published record keeps them (``results/NAME.records.jsonl.gz``,
:mod:`gemrag.eval.publish`): :class:`RunAnnotator` reads the run directory (``index.jsonl``: which memory each
strategy was built in; the memories, opened read-only, each once) and adds to each record what re-scoring needs
without a model or a memory: the ranking with the dataset documents of every hit, the dialog turns each context node
covers (LoCoMo), the question's gold ids, and the run's scores (:func:`gemrag.eval.published.rescore_record`
recomputes them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from gemrag.errors import InputError
from gemrag.eval.datasets import Dataset
from gemrag.eval.evidence import ChunkSpans, gold_turn_spans, member_chunks
from gemrag.eval.published import SCORED_METRICS
from gemrag.eval.run_files import read_jsonl
from gemrag.store import open_store
from gemrag.types import Hit, NodeKind

__all__ = ["ANSWER_KEYS", "CHOICE_KEYS", "RunAnnotator"]

#: What a published per-question record keeps of an answer beside its text and scores: its cost (tokens, LLM calls,
#: seconds) and what the reading settings add (the reading used, its quotes, whether the context was dated).
ANSWER_KEYS = ("tokens", "llm_calls", "llm_cached", "answer_seconds", "reading", "quotes", "shown", "dated")
#: What a published multiple-choice record keeps besides the chosen option's text: the index of the option chosen and
#: of the gold option (0-based, in the options' order), so an analysis of option positions (the selection bias of
#: ``gemrag eval``'s report, ``benchmarks/letter_prior.py``) needs no dataset file.
CHOICE_KEYS = ("choice", "gold_index")


class RunAnnotator:
    """Adds to a run's records the dataset documents of each ranked hit and the turns each context node covers,
    reading each memory once (read-only).

    Args:
        run_dir: the run's ``--out`` directory (its ``index.jsonl`` names the memory of each group and strategy).
        dataset: the run's dataset (documents, questions and their gold ids).
        memory_root: where the run's memories are (default ``run_dir/memories``).

    Raises:
        InputError: (from :meth:`slim`) a record's group and strategy have no build in ``index.jsonl``, or its memory
            is missing.
    """

    def __init__(self, run_dir: Path, dataset: Dataset, memory_root: Path | None = None) -> None:
        self.run_dir, self.dataset = run_dir, dataset
        self.memory_root = memory_root or run_dir / "memories"
        self.docs = {d.id: d for d in dataset.documents}
        same_text: dict[str, list[str]] = {}
        for d in dataset.documents:
            same_text.setdefault(d.text, []).append(d.id)
        self.same_text = same_text
        self.questions = {q.id: q for q in dataset.questions}
        self.memory_of = {(e["group"], e["strategy"]): e["memory"] for e in read_jsonl(run_dir / "index.jsonl")}
        self.views: dict[str, tuple[dict[int, list[str]], dict[int, list[str]], dict[int, str]]] = {}

    def _view(self, name: str) -> tuple[dict[int, list[str]], dict[int, list[str]], dict[int, str]]:
        """``(chunk -> documents, node -> turns it covers, chunk -> text)`` of one memory."""
        if name in self.views:
            return self.views[name]
        directory = self.memory_root / name
        if not directory.is_dir():
            raise InputError(f"{directory}: no such memory (give the run's --memory directory)")
        store = open_store(directory, readonly=True)
        try:
            sources = {int(d["id"]): str(d["source"]) for d in store.documents()}
            texts = {sid: self.docs[src].text for sid, src in sources.items() if src in self.docs}
            spans = ChunkSpans(store, texts)
            chunk_docs: dict[int, list[str]] = {}
            chunk_turns: dict[int, list[str]] = {}
            kinds: dict[int, str] = {}
            texts_of: dict[int, str] = {}
            for node in store.nodes():
                kinds[node.id] = node.kind
            for node in store.nodes("chunk"):
                texts_of[node.id] = node.text
                src = sources.get(node.doc_id) if node.doc_id is not None else None
                chunk_docs[node.id] = self.same_text.get(self.docs[src].text, [src]) if src in self.docs else []
                located = spans.span(node.id)
                turns = self.docs[src].metadata.get("turns") if src in self.docs else None
                if located and turns:
                    _, start, end = located
                    chunk_turns[node.id] = [
                        t["dia_id"] for t in turns if int(t["start"]) < end and start < int(t["end"])
                    ]
            members = {
                nid: member_chunks(Hit(nid, cast(NodeKind, kind), 0.0, ""), store)
                for nid, kind in kinds.items()
                if kind != "chunk"
            }
            for nid, chunks in members.items():
                chunk_turns[nid] = list(dict.fromkeys(t for c in chunks for t in chunk_turns.get(c, [])))
        finally:
            store.close()
        self.views[name] = (chunk_docs, chunk_turns, texts_of)
        return self.views[name]

    def slim(self, record: dict[str, Any]) -> dict[str, Any]:
        """The published form of one run record (see the module docstring)."""
        name = self.memory_of.get((record["group"], record["strategy"]))
        if name is None:
            raise InputError(f"{self.run_dir}/index.jsonl: no build of {record['strategy']} in group {record['group']}")
        chunk_docs, chunk_turns, chunk_text = self._view(name)
        out: dict[str, Any] = {k: record.get(k) for k in ("question_id", "strategy", "group", "category", "run")}
        out["setting"] = record.get("setting") or {}
        out["error"] = record.get("error")
        out["retrieval_seconds"] = round(float(record.get("retrieval_seconds") or 0.0), 6)
        by_doc = not record.get("recall_from") and record.get("recall@5") is not None
        if by_doc:
            out["gold_documents"] = list(record.get("gold_passages") or [])
        out["retrieved"] = [
            {"id": h["id"], "kind": h["kind"], "docs": chunk_docs.get(int(h["id"]), []) if h["kind"] == "chunk" else []}
            for h in record.get("retrieved") or []
        ]
        out["context"] = list(record.get("context") or [])
        question = self.questions.get(str(record["question_id"]))
        if record.get("recall_from") == "answer span in chunk" and question is not None:  # COVID-QA: spans in texts
            out["gold_answers"] = list(question.answers)
            for hit in out["retrieved"]:
                hit["text"] = chunk_text.get(int(hit["id"]), "") if hit["kind"] == "chunk" else ""
        if record.get("evidence_recall") is not None and question is not None:
            gold: list[str] = []
            for doc_id in question.doc_ids:
                turns = self.docs[doc_id].metadata.get("turns") if doc_id in self.docs else None
                gold += [g for g in gold_turn_spans(turns or [], question.gold_passages) if g not in gold]
            out["gold_turns"] = gold
            out["context_turns"] = [chunk_turns.get(int(i), []) for i in out["context"]]
        out["scores"] = {
            m: record.get("correct" if m == "accuracy" else m)
            for m in SCORED_METRICS
            if record.get("correct" if m == "accuracy" else m) is not None
        }
        if record.get("answer") is not None:
            out["answer"] = record["answer"]
            if question is not None and "gold_answers" not in out:
                out["gold_answers"] = list(question.answers)
            out |= {k: record[k] for k in ANSWER_KEYS if record.get(k) is not None}
            out |= {k: record[k] for k in CHOICE_KEYS if record.get(k) is not None}
        return out
