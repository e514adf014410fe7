"""Where REMem's two entity-seed rules differ, replayed on a finished ``gemrag eval`` run (issue 38, item 7).

    python benchmarks/remem_seed_rules.py RUN_DIR [--strategy remem] [--json OUT.json]

REMem's default strategy (HippoRAG 2, Gutiérrez et al. 2025, section 3, "Online Retrieval") seeds Personalized
PageRank with the ``linking_top_k`` entities of the facts the recognition filter kept; ``remem.seed_rank`` says
which: ``"weight"`` (HippoRAG 2's ``get_top_k_weights``: mean fact score / passages naming the entity) or
``"score"`` (gemrag's earlier rule: the mean fact score). R@k alone does not say whether the rules ever disagreed,
so this replays each question's retrieval on the run's own memory (``RUN_DIR/memories/<dataset>-<group>``) with the
run's configuration (``RUN_DIR/results.json``) and records both rules' seeds at the one call of
:func:`gemrag.strategies.remem.fact_seeds.entity_seed_weights` (the strategy module's name is wrapped for the
replay). The recognition filter's answers come from the memory's LLM cache, so a finished run makes no new LLM
call (a question whose filter call is missing from the cache would call the configured model).

Prints one line per question (facts kept, distinct entities they name, whether the two rules seed different
entity sets, the share of entity reset mass that moves between the rules: half the L1 distance of the two
normalized weight vectors, 0..1, and the largest passage count among those entities), then a summary.
Limits: SQLite memories only (the run's ``memories`` directory); the question texts are read from the dataset file
named in ``results.json``.
"""

from __future__ import annotations

import argparse
import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

import gemrag.strategies.remem.strategy as remem_strategy
from gemrag.config import load_config
from gemrag.eval.loading import load_dataset
from gemrag.memory import Memory
from gemrag.strategies.remem.fact_seeds import entity_seed_weights


class SeedRecorder:
    """Stands in for ``entity_seed_weights`` in REMem's strategy module: returns the configured rule's weights
    ((E,) float64, unchanged) and appends both rules' comparison to :attr:`rows`."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def __call__(
        self,
        kept: Sequence[int],
        scores: NDArray[np.floating],
        subj: NDArray[np.integer],
        obj: NDArray[np.integer],
        counts: NDArray[np.integer],
        k: int,
        rank: Literal["weight", "score"] = "weight",
    ) -> NDArray[np.float64]:
        """Both rules' seeds for one retrieval (arguments as :func:`entity_seed_weights`'s)."""
        by_weight = entity_seed_weights(kept, scores, subj, obj, counts, k, "weight")
        by_score = entity_seed_weights(kept, scores, subj, obj, counts, k, "score")
        entities = {int(e) for f in kept for e in (subj[f], obj[f])}

        def share(w: NDArray[np.float64]) -> NDArray[np.float64]:
            return w / w.sum() if w.sum() > 0 else w

        self.rows.append(
            {
                "kept": len(kept),
                "entities": len(entities),
                "differ": set(np.flatnonzero(by_weight)) != set(np.flatnonzero(by_score)),
                "mass_moved": float(0.5 * np.abs(share(by_weight) - share(by_score)).sum()),
                "max_passages": int(max(counts[e] for e in entities)) if entities else 0,
            }
        )
        return by_weight if rank == "weight" else by_score


def replay(run_dir: Path, strategy: str = "remem") -> list[dict[str, Any]]:
    """One row per question of ``strategy``'s records in ``run_dir`` (see the module docstring); a question where
    the filter kept no fact (REMem falls back to dense passages) gets ``kept = 0`` and no seeds.

    Raises:
        FileNotFoundError: ``results.json``, ``records.jsonl``, a memory or the dataset file is missing.
    """
    meta = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    config = load_config(overrides=meta["config"])
    dataset = load_dataset(meta["dataset"]["kind"], meta["dataset"]["path"])
    questions = {q.id: q.question for q in dataset.questions}
    groups: dict[str, str] = {}
    with (run_dir / "records.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if rec["strategy"] == strategy:
                groups[rec["question_id"]] = rec["group"]
    recorder = SeedRecorder()
    original = remem_strategy.entity_seed_weights
    remem_strategy.entity_seed_weights = recorder  # type: ignore[assignment]
    rows = []
    try:
        for qid, group in groups.items():
            location = run_dir / "memories" / f"{meta['dataset']['name']}-{group}"
            if not location.is_dir():
                raise FileNotFoundError(f"no memory {location}")
            before = len(recorder.rows)
            with Memory.open(location, config) as memory:
                memory.retrieve(questions[qid], budget=5, strategy=strategy)
            row = recorder.rows[before] if len(recorder.rows) > before else {"kept": 0}
            rows.append({"question": qid, **row})
    finally:
        remem_strategy.entity_seed_weights = original
    return rows


def main() -> None:
    """Command line: replay, print per question and the summary, optionally write the rows as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--strategy", default="remem", help="the run name of the REMem records (default remem)")
    parser.add_argument("--json", type=Path, help="write the per-question rows here")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # stale-strategy notices of the evaluation memories
    rows = replay(args.run_dir, args.strategy)
    for row in rows:
        print(json.dumps(row))
    seeded = [r for r in rows if r["kept"]]
    differ = [r for r in seeded if r["differ"]]
    print(
        f"{len(rows)} questions; no fact kept {len(rows) - len(seeded)}; seeds differ {len(differ)}; "
        f"entities of the kept facts mean {np.mean([r['entities'] for r in seeded]) if seeded else 0:.1f} "
        f"({min((r['entities'] for r in seeded), default=0)}-{max((r['entities'] for r in seeded), default=0)}); "
        f"reset mass moved where they differ mean {np.mean([r['mass_moved'] for r in differ]) if differ else 0:.3f}"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
