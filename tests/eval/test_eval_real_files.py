"""Loaders on the real evaluation files in ``../shared/data`` (skipped when the files are absent; under
``CI=true`` they fail instead).

The data folder is ``$GEMRAG_EVAL_DATA`` if set, else ``<repo>/../shared/data``. Counts asserted here were
checked by hand against the raw files.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path

from gemrag.eval.datasets import Dataset
from gemrag.eval.loaders.locomo import NOT_MENTIONED
from gemrag.eval.loading import load_dataset
from paths import REPO
from realparts import require_real

DATA = Path(os.environ.get("GEMRAG_EVAL_DATA", REPO.parent / "shared" / "data"))


def _load(kind: str, relative: str, **options: object) -> Dataset:
    path = DATA / relative
    if not path.is_file():
        require_real(f"{path} not available (../shared/data beside the repository)")
    return load_dataset(kind, path, **options)


def test_quality_dev5() -> None:
    ds = _load("quality", "quality/quality_dev5.jsonl")
    assert len(ds.documents) == 5
    assert len(ds.questions) == 62
    assert all(q.choices is not None and len(q.choices) == 4 for q in ds.questions)
    assert all(q.choices and q.gold_index is not None and q.answer == q.choices[q.gold_index] for q in ds.questions)
    assert all(q.difficult is None for q in ds.questions)  # the L-Eval packaging has no HARD flag
    assert [len(g.questions) for g in ds.groups()] == [len(v) for v in ds.questions_by_document().values()]
    assert all(len(d.text) > 10_000 for d in ds.documents)


def test_quality_v0_example() -> None:
    ds = _load("quality", "quality/quality_repo_example.v0_format.jsonl")
    # two identical records of article 52845 -> one document, five questions
    assert [d.id for d in ds.documents] == ["52845"]
    assert ds.documents[0].title == "The Girl in His Mind"
    assert "<p>" not in ds.documents[0].text and ds.documents[0].text.startswith("THE GIRL IN HIS MIND")
    assert [q.gold_index for q in ds.questions] == [1, 2, 3, 0, 3]
    # speed answers vs gold: 1/5, 1/5, 2/5, 1/5, 3/5 correct -> HARD iff fewer than 50%
    assert [q.difficult for q in ds.questions] == [True, True, True, True, False]


def test_qasper_leval_dev8() -> None:
    ds = _load("qasper", "qasper/qasper_leval_dev8.jsonl")
    assert len(ds.documents) == 8
    assert len(ds.questions) == 64
    assert all(q.answer for q in ds.questions)
    assert all(d.text.startswith("Introduction") for d in ds.documents)


def test_musique_train_with_corpus() -> None:
    ds = _load("musique", "multihop/musique_train.json")
    assert len(ds.questions) == 100
    assert len(ds.documents) == 1890  # the sibling musique_train_corpus.json
    assert sum(len(q.gold_passages) for q in ds.questions) == 237
    assert all(q.doc_ids == [ds.corpus_id] for q in ds.questions)
    assert Counter(q.category for q in ds.questions).keys() <= {"2hop", "3hop", "4hop"}
    assert ds.questions[0].answers == ["G. Stanley Hall", "Stanley Hall"]


def test_musique_train_per_question_and_without_corpus(tmp_path: Path) -> None:
    ds = _load("musique", "multihop/musique_train.json", per_question_corpus=True)
    assert all(len(q.doc_ids) == 20 for q in ds.questions)
    assert all(set(q.gold_passages) <= set(q.doc_ids) for q in ds.questions)
    assert len(ds.limit(2).documents) == len({d for q in ds.questions[:2] for d in q.doc_ids})
    copy = shutil.copy(DATA / "multihop/musique_train.json", tmp_path / "musique_only.json")
    rebuilt = load_dataset("musique", copy)  # no corpus beside it: built from the paragraphs
    assert len(rebuilt.documents) == 1890
    assert sum(len(q.gold_passages) for q in rebuilt.questions) == 237


def test_hotpotqa_train_with_corpus() -> None:
    ds = _load("hotpotqa", "multihop/hotpotqa_train.json")
    assert len(ds.questions) == 100
    assert len(ds.documents) == 994
    assert all(len(q.gold_passages) == 2 for q in ds.questions)
    assert {q.category for q in ds.questions} <= {"bridge", "comparison"}


def test_covid_qa_dev30() -> None:
    ds = _load("covid_qa", "covid_qa/covid_qa_dev30.json")
    assert len(ds.documents) == 30
    assert len(ds.questions) == 213
    docs = ds.document_map()
    assert all(q.answer is not None and q.answer in docs[q.doc_ids[0]].text for q in ds.questions)


def test_locomo_dev3() -> None:
    ds = _load("locomo", "locomo/locomo_dev3.json")
    assert [d.id for d in ds.documents] == ["conv-26", "conv-30", "conv-41"]
    assert len(ds.questions) == 497
    assert [len(d.metadata["turns"]) for d in ds.documents] == [419, 369, 663]
    categories = Counter(q.category for q in ds.questions)
    assert categories["5"] == 112
    assert all(q.answer == NOT_MENTIONED for q in ds.questions if q.category == "5")
    turn_ids = {t["dia_id"] for d in ds.documents for t in d.metadata["turns"]}
    assert all(set(q.gold_passages) <= turn_ids for q in ds.questions)
