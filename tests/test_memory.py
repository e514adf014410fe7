"""Memory end to end with test doubles: index, retrieve, ask, resume, failures, incremental re-index."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.errors import IncompatibleMemoryError, InputError, MemoryNotIndexedError
from gemrag.strategies.gem.settings import gem_config

DOC_A = (
    "The lighthouse keeper Amos Reed lived on Gull Island. He lit the great lamp every evening at dusk. "
    "Storms battered the island each winter and the keeper mended the shutters. "
    "Ships passing the island relied on the lamp to avoid the reef. "
    "Amos kept a logbook of every ship he saw from the tower. "
    "In spring the puffins returned to nest on the cliffs below the lighthouse. "
    "The supply boat came from Port Hollow once a month with oil and bread. "
    "One night the lamp failed and Amos climbed the tower with a lantern. "
    "He signalled to a schooner until dawn and the schooner avoided the reef. "
    "The harbour master of Port Hollow later gave Amos a silver medal for his courage."
)
DOC_B = (
    "Marta Silva grew tomatoes and peppers in her greenhouse in the valley. "
    "She watered the seedlings at six every morning. Aphids attacked the pepper plants in June. "
    "Marta released ladybirds into the greenhouse to eat the aphids. "
    "By August the tomatoes were ripe and she sold them at the Saturday market in Oakford. "
    "Her neighbour Tom helped her build a rain barrel to collect water from the roof."
)


def open_memory(path: Path, config: Config, llm: ScriptedLLM, emb: HashEmbedder | None = None) -> Memory:
    return Memory.open(path, config, llm=llm, embedder=emb or HashEmbedder())


def test_index_retrieve_ask(tmp_path: Path, config: Config) -> None:
    llm = ScriptedLLM()
    with open_memory(tmp_path / "m", config, llm) as mem:
        mem.add_text(DOC_A, "lighthouse")
        report = mem.index()
        assert report.chunks >= 4 and report.summary_nodes == 2
        assert llm.calls > 0 and report.usage.prompt_tokens == sum(len(p.split()) for p in llm.prompts)
        hits = mem.retrieve("Who gave Amos a silver medal for his courage?", budget=3)
        assert len(hits) == 3 and [h.rank for h in hits] == [0, 1, 2]
        assert "silver medal" in hits[0].text
        assert hits[0].meta["matched_question"]
        ans = mem.ask("Who gave Amos a silver medal?", ["the harbour master of Port Hollow", "a puffin", "Marta"])
        assert ans.choice == 0 and ans.text.startswith("the harbour master")
        stats = mem.stats()
        spec = stats["strategy_report"]["spectrum"]
        assert spec["n"] == report.chunks and abs(spec["top_eigenvalues"][0] - 1.0) < 1e-9
        assert abs(spec["trace"]) < 1e-9  # Σλ = 0: S − I has a zero diagonal (paper III.B.1)
        assert stats["usage_by_phase"]["index"]["calls"] > 0
        assert stats["usage_by_phase"]["query"]["calls"] >= 1


def test_summary_nodes_are_graph_nodes(tmp_path: Path, config: Config) -> None:
    with open_memory(tmp_path / "m", config, ScriptedLLM()) as mem:
        mem.add_text(DOC_A)
        mem.index()
        summaries = mem.store.nodes("summary")
        assert len(summaries) == 2
        for s in summaries:
            assert len(s.meta["members"]) == 3 and s.questions_done == 1
        graph = mem.store.load_published("gem")
        ids = graph.arrays["node_ids"]
        assert set(s.id for s in summaries) <= set(ids.tolist())
        W = graph.arrays["weights"]
        assert W.shape == (len(ids), len(ids)) and np.allclose(W, W.T) and (W >= 0).all()


def test_resume_after_interrupt_repeats_no_llm_call(tmp_path: Path, config: Config) -> None:
    first = ScriptedLLM(interrupt_after=3)
    with open_memory(tmp_path / "m", config, first) as mem:
        mem.add_text(DOC_A)
        with pytest.raises(KeyboardInterrupt):
            mem.index()
        done = [n for n in mem.store.nodes("chunk") if n.questions_done == 1]
        assert len(done) == 3
    second = ScriptedLLM()
    with open_memory(tmp_path / "m", config, second) as mem:
        mem.index()
    # An uninterrupted build for comparison
    fresh = ScriptedLLM()
    with open_memory(tmp_path / "fresh", config, fresh) as mem:
        mem.add_text(DOC_A)
        mem.index()
    assert first.calls + second.calls == fresh.calls
    assert not set(first.prompts) & set(second.prompts)


def test_malformed_output_is_retried_then_recorded(tmp_path: Path, config: Config) -> None:
    # every attempt for the chunk mentioning puffins is malformed
    llm = ScriptedLLM(fail=lambda i, p: "puffins" in p and "questions that this passage answers" in p)
    with open_memory(tmp_path / "m", config, llm) as mem:
        mem.add_text(DOC_A)
        report = mem.index()
        assert report.failures == 1
        failure = mem.store.failures()[0]
        assert failure["phase"] == "index/utility_questions" and "after 3 attempts" in failure["message"]
        puffin = next(n for n in mem.store.nodes("chunk") if "puffins" in n.text)
        assert puffin.questions_done == -1
        # the chunk is still in the graph and can be retrieved
        ids = mem.store.load_published("gem").arrays["node_ids"].tolist()
        assert puffin.id in ids
        hits = mem.retrieve("When do the puffins return to nest on the cliffs?", budget=2)
        assert puffin.id in [h.node_id for h in hits]


def test_incremental_reindex_only_new_chunks(tmp_path: Path, config: Config) -> None:
    llm = ScriptedLLM()
    with open_memory(tmp_path / "m", config, llm) as mem:
        mem.add_text(DOC_A)
        mem.index()
        n_before = len(mem.store.nodes("chunk"))
        calls_before = llm.calls
        _, created = mem.add_text(DOC_A)
        assert not created  # same text is deduplicated
        mem.add_text(DOC_B, "garden")
        report = mem.index()
        new_chunks = report.chunks - n_before
        assert report.new_chunks == new_chunks > 0
        # new chunk questions + new summaries (+ their questions); old chunks' questions are not regenerated
        question_prompts = [p for p in llm.prompts[calls_before:] if "questions that this passage answers" in p]
        assert all(
            (
                "Marta" in p
                or "greenhouse" in p
                or "tomatoes" in p
                or "theme" in p
                or "Tom" in p
                or "ladybirds" in p
                or "Amos" in p
                or "lamp" in p
            )
            for p in question_prompts
        )
        assert len(question_prompts) <= new_chunks + 2
        assert "ladybirds" in mem.retrieve("What did Marta release to eat the aphids?", 2)[0].text


def test_questions_zero_uses_chunk_embeddings(tmp_path: Path, config: Config) -> None:
    cfg = config.model_copy(update={"gem": gem_config(config).model_copy(update={"questions": 0, "eigen": 0})})
    llm = ScriptedLLM()
    with open_memory(tmp_path / "m", cfg, llm) as mem:
        mem.add_text(DOC_A)
        mem.index()
        assert llm.calls == 0 and mem.store.questions() == []
        assert "silver medal" in mem.retrieve("silver medal courage harbour master", 1)[0].text


def test_incompatible_embedder_and_chunk_size(tmp_path: Path, config: Config) -> None:
    with open_memory(tmp_path / "m", config, ScriptedLLM()) as mem:
        mem.add_text(DOC_A)
        mem.index()
    with pytest.raises(IncompatibleMemoryError, match="embedder"):
        open_memory(tmp_path / "m", config, ScriptedLLM(), HashEmbedder(model_id="fake:other"))
    other = config.model_copy(update={"memory": config.memory.model_copy(update={"chunk_tokens": 200})})
    with pytest.raises(IncompatibleMemoryError, match="chunked with 30 tokens"):
        open_memory(tmp_path / "m", other, ScriptedLLM())


def test_retrieve_before_index_and_bad_input(tmp_path: Path, config: Config) -> None:
    with open_memory(tmp_path / "m", config, ScriptedLLM()) as mem:
        with pytest.raises(MemoryNotIndexedError):
            mem.retrieve("anything")
        with pytest.raises(MemoryNotIndexedError):
            mem.index()
        bad = tmp_path / "bad.txt"
        bad.write_bytes(b"\xff\xfe\x00\x01")
        good = tmp_path / "good.txt"
        good.write_text(DOC_B)
        with pytest.raises(InputError):
            mem.add([good, bad])
        assert mem.store.documents() == []  # nothing half-added
        with pytest.raises(ValueError):
            mem.retrieve("   ")
        with pytest.raises(ValueError, match="budget"):  # 0 is not "the default"
            mem.retrieve("anything", budget=0)


def test_rank_mode_is_algorithm1(tmp_path: Path, config: Config) -> None:
    cfg = config.model_copy(update={"gem": gem_config(config).model_copy(update={"search": "rank"})})
    with open_memory(tmp_path / "m", cfg, ScriptedLLM()) as mem:
        mem.add_text(DOC_A)
        mem.index()
        hits = mem.retrieve("lamp lighthouse keeper", 4)
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)


def test_import_caches_copies_llm_and_embeddings(tmp_path: Path, config: Config) -> None:
    from gemrag.errors import GemragError
    from gemrag.store import Store, import_caches

    a = Store(tmp_path / "a")
    a.put_llm("k1", "m", {"text": "one"})
    a.put_embeddings("e", [("v1", np.ones(3, dtype=np.float32))])
    a.close()
    b = Store(tmp_path / "b")
    b.put_llm("k1", "m", {"text": "kept"})  # an entry already there wins
    assert import_caches(b, tmp_path / "a") == (0, 1)
    assert b.get_llm("k1") == {"text": "kept"}
    assert b.get_embeddings("e", ["v1"])["v1"].tolist() == [1.0, 1.0, 1.0]
    c = Store(tmp_path / "c")
    assert import_caches(c, tmp_path / "a") == (1, 1) and c.get_llm("k1") == {"text": "one"}
    with pytest.raises(GemragError, match="not another gemrag memory"):
        import_caches(c, tmp_path / "missing")
    with pytest.raises(GemragError, match="not another gemrag memory"):
        import_caches(c, tmp_path / "c")  # itself
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "memory.sqlite").write_bytes(b"not a database at all" * 50)
    with pytest.raises(GemragError, match="cannot read the caches"):
        import_caches(c, tmp_path / "junk")
    assert c.get_llm("k1") == {"text": "one"}  # nothing lost


class _SummaryRaises(ScriptedLLM):
    """A ScriptedLLM whose eigentheme-summary calls raise ``exc``."""

    def __init__(self, exc: Exception) -> None:
        super().__init__()
        self.exc = exc

    def complete(self, messages, **kw):  # type: ignore[no-untyped-def, override]
        if "These passages share a theme" in messages[-1]["content"]:
            raise self.exc
        return super().complete(messages, **kw)


def test_summary_failure_is_recorded_but_a_model_crash_stops_the_build(tmp_path: Path, config: Config) -> None:
    from gemrag.errors import GemragError, ModelCrashError

    with open_memory(tmp_path / "a", config, _SummaryRaises(GemragError("HTTP 500"))) as mem:
        mem.add_text(DOC_A)
        report = mem.index()  # a per-item failure: recorded, the build goes on without that summary
        assert report.summary_nodes == 0 and report.chunks >= 4
        assert any("HTTP 500" in f["message"] for f in mem.store.failures())
    with open_memory(tmp_path / "b", config, _SummaryRaises(ModelCrashError("llama.cpp crashed"))) as mem:
        mem.add_text(DOC_A)
        with pytest.raises(ModelCrashError, match="crashed"):
            mem.index()  # recording it for every theme would hide it: it stops the build
