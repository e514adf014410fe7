"""GEM's first eigenvector: what ``gem.skip_trivial`` changes, and how often a negative eigenvalue is selected.

λ1 = 1 always, and its eigenvector is the Perron vector D^1/2 1 (the most central chunks, not a theme); the
paper (section III.B.1, "Building the Summary Nodes") takes the top k eigenvectors by |λ| all the same. This
script prints, for a memory built with real utility questions (e.g. a COPY of the demo memory):

* the top eigenvalues of the chunk graph's L, the eigenvalues selected with skip_trivial False and True, and
  whether a negative eigenvalue is among the top k by |λ| (no LLM: questions and embeddings come from the
  memory and its embedding cache);
* the summary members of each eigentheme under both settings and their Jaccard similarity;
* with ``--answer``: both settings are built on ONE copy of the memory (``--work``; rebuilding costs LLM calls
  only for summaries whose members changed, and their utility questions), each demo question's retrieved context
  is compared, and the questions whose context changed are answered under both settings (the only ones whose
  answer can change: the model is greedy and identical prompts come from the LLM cache); ``--all`` answers the
  other questions once too, giving both accuracies on all 16.

``--dev-stories`` adds the 5 QuALITY dev stories (``../shared/data/quality/quality_dev5.jsonl``). They have no
utility questions (generating them costs ~11 s per chunk with the 1.5B model), so their spectra are the m = 0
ablation (S from chunk embeddings alone, Figure 2 of the paper), labelled as such — not the paper's graph.

    python benchmarks/first_eigenvector.py --memory /tmp/b/demo-copy            # spectra and members only
    python benchmarks/first_eigenvector.py --memory /tmp/b/demo-copy --answer --all   # + accuracy (LLM)
    python benchmarks/first_eigenvector.py --memory /tmp/b/demo-copy --dev-stories

Never point ``--memory`` at a memory you want to keep unchanged: it is opened for writing (the embedding cache).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from gemrag import Memory, load_config
from gemrag.config import Config
from gemrag.graph.similarity import utility_question_vectors
from gemrag.strategies.gem.graph import chunk_graph, eigen_selection
from gemrag.strategies.gem.settings import GemConfig, gem_config
from gemrag.strategies.gem.summaries import summary_members

REPO = Path(__file__).resolve().parents[1]
DEV = REPO.parent / "shared" / "data" / "quality" / "quality_dev5.jsonl"


def jaccard(a: set[int], b: set[int]) -> float:
    """|a ∩ b| / |a ∪ b| (1.0 for two empty sets)."""
    return len(a & b) / len(a | b) if a | b else 1.0


def spectra(vectors: np.ndarray, qvectors: np.ndarray, owner: np.ndarray, cfg: GemConfig) -> dict[str, Any]:
    """Eigenvalues, selections and theme members (chunk indices) for skip_trivial False and True."""
    _, _, eigen, report = chunk_graph(vectors, qvectors, owner, "dense", cfg)
    out: dict[str, Any] = {"n": int(vectors.shape[0]), "top_eigenvalues": [round(float(v), 4) for v in eigen[0][:6]]}
    for skip in (False, True):
        c = cfg.model_copy(update={"skip_trivial": skip})
        themes = summary_members(None, None, c.eigen, c.eigen_top, eigen=eigen, skip_trivial=skip)
        out[f"skip={skip}"] = {
            "selection": eigen_selection(eigen[0], c),
            "members": [sorted(int(i) for i in idx) for idx, _ in themes],
        }
    return out


def memory_spectra(mem: Memory, cfg: GemConfig) -> dict[str, Any]:
    """:func:`spectra` of a memory's chunk graph with its stored utility questions (no LLM)."""
    chunks = mem.store.nodes("chunk")
    index = {n.id: i for i, n in enumerate(chunks)}
    vectors = mem.embedder.embed([n.text for n in chunks])
    rows = [(index[nid], text) for _, nid, text in mem.store.questions() if nid in index]
    owner = np.array([r[0] for r in rows], dtype=np.int64)
    q_emb = mem.embedder.embed([r[1] for r in rows])
    out = spectra(vectors, utility_question_vectors(q_emb, vectors, owner), owner, cfg)
    out["questions"] = len(rows)
    out["chunk_ids"] = [n.id for n in chunks]
    return out


def dev_story_spectra(config: Config) -> list[dict[str, Any]]:
    """m = 0 spectra (no utility questions) of the 5 QuALITY dev stories, chunked like the memory."""
    from gemrag.ingest.chunker import chunk_text
    from gemrag.ingest.tokenizer import minilm_tokenizer

    tokenizer = minilm_tokenizer()
    out = []
    with Memory.open(Path("/tmp/b/dev-embed-cache"), config) as mem:  # only for its embedding cache
        for line in DEV.read_text(encoding="utf-8").splitlines():
            story = json.loads(line)
            texts = [
                " ".join(c.text.split()) for c in chunk_text(story["article"], tokenizer, config.memory.chunk_tokens)
            ]
            vectors = mem.embedder.embed(texts)
            empty = np.zeros((0, vectors.shape[1]), np.float32)
            row = spectra(vectors, empty, np.zeros(0, np.int64), gem_config(config))
            row["title"] = story.get("title_guess", "")[:40]
            out.append(row)
    return out


def with_skip(config: Config, skip: bool) -> Config:
    """``config`` with ``gem.skip_trivial = skip``."""
    return config.model_copy(update={"gem": gem_config(config).model_copy(update={"skip_trivial": skip})})


def contexts(copy: Path, config: Config, skip: bool) -> dict[str, Any]:
    """Rebuild ``copy`` with ``gem.skip_trivial = skip``: the summary members and each demo question's retrieved
    context (node ids; summaries by their members). Costs LLM calls only for summaries not in the cache."""
    from gemrag.cli.demo import load_example

    story, questions = load_example()
    with Memory.open(copy, with_skip(config, skip), progress=None) as mem:
        mem.add([story])  # a no-op for a copy of the demo memory
        report = mem.index()
        members = [sorted(n.meta.get("members", [])) for n in mem.store.nodes("summary")]
        ctx = [
            [h.node_id if h.kind == "chunk" else f"summary{h.meta.get('members')}" for h in mem.retrieve(q["question"])]
            for q in questions
        ]
    return {"skip_trivial": skip, "index_llm_calls": report.usage.calls, "summary_members": members, "contexts": ctx}


def answers(copy: Path, config: Config, skip: bool, which: list[int]) -> dict[int, bool]:
    """Rebuild ``copy`` with ``gem.skip_trivial = skip`` (cached) and answer the demo questions ``which``
    (0-based); True where the answer is the gold option. Identical prompts are answered from the LLM cache."""
    from gemrag.cli.demo import load_example

    _, questions = load_example()
    with Memory.open(copy, with_skip(config, skip), progress=None) as mem:
        mem.index()
        out = {}
        for i in which:
            q = questions[i]
            out[i] = mem.ask(q["question"], q["options"]).choice == int(q["gold_label"]) - 1
            print(f"    skip_trivial={skip} Q{i + 1}: {'correct' if out[i] else 'wrong'}", flush=True)
        return out


def compare_answers(memory: Path, work: Path, config: Config, all_questions: bool) -> dict[str, Any]:
    """Both settings on ONE copy of ``memory`` (shared LLM cache). Only the questions whose retrieved context
    differs between the settings can be answered differently (the model is greedy and its answers cached), so
    those are answered under both settings; with ``all_questions`` the others are answered once too, giving
    both accuracies on all 16."""
    copy = work / "copy"
    if not copy.exists():
        shutil.copytree(memory, copy, ignore=shutil.ignore_patterns("build.lock"))
    runs = [contexts(copy, config, skip) for skip in (False, True)]
    changed = [i for i, (a, b) in enumerate(zip(runs[0]["contexts"], runs[1]["contexts"], strict=True)) if a != b]
    print(f"  questions whose retrieved context changed: {len(changed)}/16 {[i + 1 for i in changed]}", flush=True)
    result: dict[str, Any] = {"runs": runs, "changed": changed}
    for run in runs:
        run["correct_on_changed"] = answers(copy, config, run["skip_trivial"], changed)
    if all_questions:
        same = answers(copy, config, False, [i for i in range(16) if i not in changed])
        for run in runs:
            run["accuracy"] = sum(same.values()) + sum(run["correct_on_changed"].values())
    return result


def main() -> None:
    """Parse the arguments and print the figures (a JSON document at the end with ``--json``)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--memory", type=Path, required=True, help="a COPY of a GEM memory with utility questions")
    ap.add_argument("--answer", action="store_true", help="also rebuild and answer the demo questions (LLM)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/b/first-eigenvector"), help="where --answer's copy goes")
    ap.add_argument("--all", action="store_true", help="with --answer: also the questions whose context is the same")
    ap.add_argument("--questions", type=int, default=5, help="gem.questions m of the memory (default 5)")
    ap.add_argument("--dev-stories", action="store_true", help="also the 5 QuALITY dev stories (m = 0 ablation)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = ap.parse_args()
    config = load_config(None, {"progress": False, "gem": {"questions": args.questions}})
    figures: dict[str, Any] = {}

    with Memory.open(args.memory, config, progress=None) as mem:
        demo = memory_spectra(mem, gem_config(config))
    figures["demo"] = demo
    print(f"demo story: {demo['n']} chunks, {demo['questions']} utility questions; top |λ|: {demo['top_eigenvalues']}")
    ids = demo["chunk_ids"]
    plain, skipped = demo["skip=False"], demo["skip=True"]
    for name, row in (("skip_trivial=False (paper)", plain), ("skip_trivial=True", skipped)):
        sel = row["selection"]
        print(
            f"  {name}: selected λ {[round(v, 4) for v in sel['selected_eigenvalues']]}, negative selected "
            f"{sel['negative_selected']}, negative in top k {sel['negative_in_top_k']}"
        )
        print(f"    members (chunk ids): {[[ids[i] for i in m] for m in row['members']]}")
    sets = [{i for m in row["members"] for i in m} for row in (plain, skipped)]
    best = [max((jaccard(set(a), set(b)) for a in plain["members"]), default=0.0) for b in skipped["members"]]
    figures["jaccard"] = {"all_members": jaccard(*sets), "best_match_per_skip_theme": best}
    print(
        f"  Jaccard of all summary members: {jaccard(*sets):.2f}; each skip_trivial theme vs its best-matching "
        f"paper theme: {[round(b, 2) for b in best]}"
    )

    if args.dev_stories:
        rows = dev_story_spectra(config)
        figures["dev_stories_m0"] = rows
        neg = sum(bool(r["skip=False"]["selection"]["negative_in_top_k"]) for r in rows)
        neg_skip = sum(bool(r["skip=True"]["selection"]["negative_selected"]) for r in rows)
        print(
            f"5 QuALITY dev stories, m = 0 ABLATION (no utility questions): negative λ among the top k=2 by |λ| in "
            f"{neg}/5; among the 2 selected with skip_trivial in {neg_skip}/5"
        )
        for r in rows:
            print(
                f"  {r['title']:<40} n={r['n']:>3} top λ {r['top_eigenvalues']}, Jaccard(members) "
                f"{jaccard(*({i for m in r[k]['members'] for i in m} for k in ('skip=False', 'skip=True'))):.2f}"
            )

    if args.answer:
        result = compare_answers(args.memory, args.work, config, args.all)
        for run in result["runs"]:
            correct = sum(run["correct_on_changed"].values())
            acc = f"; accuracy on all 16: {run['accuracy']}/16" if "accuracy" in run else ""
            print(
                f"  skip_trivial={run['skip_trivial']}: {run['index_llm_calls']} index LLM calls, members "
                f"{run['summary_members']}, correct on the changed questions {correct}/{len(result['changed'])}{acc}"
            )
        figures["answers"] = result
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
