"""Provenance on every hit (issue 39): a chunk hit carries its document (id, title, source, version), ordinal and
span; a derived node (GEM and RAPTOR summaries, REMem gists and turns, UnWeaver classes, HLGraphRAG relations)
carries the chunks its build recorded; the same description (:class:`~gemrag.answers.provenance.RetrievedNode`) on every
surface. Unit tests with the scripted LLM and the hashing embedder."""

from __future__ import annotations

import json
from pathlib import Path

from backends import MemoryAt
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.answers.provenance import describe_hits, passage_label, source_label, with_provenance
from gemrag.config import Config, load_config
from gemrag.memory.retrieval import distinct_texts
from gemrag.store.rows import sha256_text
from gemrag.types import SAME_TEXT, SOURCE_NODES, Hit, Provenance
from test_memory import DOC_A, DOC_B

QUESTION = "Who gave Amos a silver medal for his courage?"


def open_memory(path: Path | str, config: Config) -> Memory:
    return Memory.open(path, config, llm=ScriptedLLM(), embedder=HashEmbedder())


def test_a_chunk_hit_names_its_document_ordinal_and_span(memory_at: MemoryAt, config: Config) -> None:
    with open_memory(memory_at(), config) as mem:
        mem.add_text(DOC_B, "greenhouse", source="notes/greenhouse.txt")
        doc_id, _ = mem.add_text(DOC_A, "lighthouse", source="notes/lighthouse.txt", id="lighthouse")
        mem.index("dense")
        hits = mem.retrieve(QUESTION, 3, strategy="dense")
        text = mem.store.document_text(doc_id)
        for hit in hits:
            assert hit.provenance is not None
            [passage] = hit.provenance.passages
            node = mem.store.node(hit.node_id)
            assert passage.chunk_id == hit.node_id and passage.ordinal == node.ord
            assert passage.document == mem.store.passages([hit.node_id])[hit.node_id].document
            doc = next(d for d in mem.store.documents() if d["id"] == passage.document.id)
            assert (passage.document.title, passage.document.source) == (doc["title"], doc["source"])
            source_text = mem.store.document_text(passage.document.id)
            assert passage.start is not None and passage.end is not None
            assert " ".join(source_text[passage.start : passage.end].split()) == hit.text
        best = hits[0].provenance.passages[0]  # type: ignore[union-attr]
        assert "silver medal" in text[best.start : best.end] and best.document.version == 1
        assert passage_label(best).startswith(f"lighthouse.txt #{best.ordinal} [{best.start}:")

        mem.add_text(DOC_A.replace("silver", "golden"), "lighthouse", source="notes/lighthouse.txt", id="lighthouse")
        mem.index("dense")
        [hit] = mem.retrieve("Who gave Amos a golden medal?", 1, strategy="dense")
        [passage] = hit.provenance.passages  # type: ignore[union-attr]
        assert passage.document.version == 2 and " v2 " in passage_label(passage)
        new_text = mem.store.document_text(doc_id)
        assert " ".join(new_text[passage.start : passage.end].split()) == hit.text  # type: ignore[index]


def test_every_derived_node_stands_for_the_chunks_its_build_recorded(tmp_path: Path) -> None:
    config = load_config(None, {"gem": {"chunk_tokens": 30, "questions": 2, "eigen": 2, "eigen_top": 3}})
    with open_memory(tmp_path / "m", config) as mem:
        mem.add_text(DOC_A, "lighthouse")
        mem.add_text(DOC_B, "greenhouse")
        for strategy in ("gem", "raptor", "unweaver", "hlgraph"):
            mem.index(strategy)
        derived = [n for n in mem.store.nodes() if n.kind != "chunk"]
        assert {"gem", "unweaver", "hlgraph"} <= {n.strategy for n in derived}
        hits = [Hit(n.id, n.kind, 0.0, n.text) for n in derived]  # type: ignore[arg-type]
        sources = mem.store.node_sources([n.id for n in derived])
        chunks = {n.id: n for n in mem.store.nodes("chunk")}
        for node, hit in zip(derived, with_provenance(mem.store, hits), strict=True):
            assert hit.provenance is not None
            expected = sorted(sources[node.id], key=lambda c: (chunks[c].doc_id, chunks[c].ord))
            assert [p.chunk_id for p in hit.provenance.passages] == expected, node
            assert all(
                p.start is not None and p.document.title in {"lighthouse", "greenhouse"}
                for p in hit.provenance.passages
            )
        summaries = [
            h
            for h in with_provenance(mem.store, hits)
            if h.kind == "summary" and h.node_id in {n.id for n in derived if n.strategy == "gem"}
        ]
        for hit in summaries:  # GEM-RAG's eigentheme summary: its member chunks (section III.B.1)
            members = mem.store.node(hit.node_id).meta["members"]
            assert sorted(p.chunk_id for p in hit.provenance.passages) == sorted(members)  # type: ignore[union-attr]


def test_a_summary_hit_of_a_retrieval_carries_its_members(tmp_path: Path, config: Config) -> None:
    with open_memory(tmp_path / "m", config) as mem:
        mem.add_text(DOC_A, "lighthouse")
        mem.index()
        hits = mem.retrieve(QUESTION, 12)
        summary = next(h for h in hits if h.kind == "summary")
        members = mem.store.node(summary.node_id).meta["members"]
        assert sorted(p.chunk_id for p in summary.provenance.passages) == sorted(members)  # type: ignore[union-attr]
        assert [d.title for d in summary.provenance.documents] == ["lighthouse"]  # type: ignore[union-attr]
        assert source_label(summary.provenance).endswith(f"+{len(members) - 1}")


def test_hlgraph_relations_stand_for_the_chunks_of_the_facts_they_render(tmp_path: Path) -> None:
    docs = [
        "John pushes Selena. John loves Selena.",
        "Selena left Harbor Town because John lied in 2019.",
        "Mira Holt painted the harbour.",
    ]
    config = load_config(
        None, {"gem": {"chunk_tokens": 40}, "strategy": "hlgraph", "hlgraph": {"split_question": False}}
    )
    with open_memory(tmp_path / "m", config) as mem:
        for i, doc in enumerate(docs):
            mem.add_text(doc, f"doc {i}")
        mem.index()
        [hit] = mem.retrieve("Selena", 4)
        assert hit.kind == "relations" and hit.meta[SOURCE_NODES] == hit.meta["facts"]
        facts = mem.store.node_sources(hit.meta["facts"])  # type: ignore[arg-type]
        chunk_ids = sorted({c for ids in facts.values() for c in ids})
        assert [p.chunk_id for p in hit.provenance.passages] == chunk_ids  # type: ignore[union-attr]
        assert [d.title for d in hit.provenance.documents] == ["doc 0", "doc 1"]  # type: ignore[union-attr]


def test_remem_gists_carry_their_window_of_turns(tmp_path: Path) -> None:
    from test_strategy_remem_gist import DOCS, make_config

    with open_memory(tmp_path / "m", make_config(return_chunk="gists")) as mem:
        for doc in DOCS:
            mem.add_text(doc, "conversation")
        mem.index()
        hits = mem.retrieve("What is the name of Ann's puppy?", 2)
        assert hits and all(h.kind == "gist" for h in hits)
        for hit in hits:
            assert [p.chunk_id for p in hit.provenance.passages] == mem.store.node_sources([hit.node_id])[hit.node_id]  # type: ignore[union-attr]
            assert hit.provenance.passages  # type: ignore[union-attr]


def test_described_nodes_are_json_and_a_vanished_node_has_no_passage(tmp_path: Path, config: Config) -> None:
    with open_memory(tmp_path / "m", config) as mem:
        mem.add_text(DOC_A, "lighthouse", source="lighthouse.txt")
        mem.index("dense")
        hits = [*mem.retrieve(QUESTION, 2, strategy="dense"), Hit(10**9, "summary", 0.5, "gone", 2)]
        nodes = describe_hits(mem.store, hits, "dense")
        first = json.loads(json.dumps(nodes[0].metadata()))
        assert first["documents"] == [{"id": 1, "title": "lighthouse", "source": "lighthouse.txt", "version": 1}]
        [passage] = first["passages"]
        assert passage["chunk_id"] == hits[0].node_id and passage["document"]["id"] == 1
        assert (
            first["chunk_ids"] == [hits[0].node_id]
            and first["document_ids"] == [1]
            and first["titles"] == ["lighthouse"]
        )
        assert nodes[2].passages == [] and nodes[2].documents == [] and source_label(Provenance()) == "—"


def test_a_hit_kept_for_others_with_its_text_names_their_documents_too(memory_at: MemoryAt, config: Config) -> None:
    """Two documents holding the same text (as a memory written before schema 5 may): the retrieval keeps one hit
    for the text (retrieval.distinct_texts), and its provenance names both documents' passages."""
    with open_memory(memory_at(), config) as mem:
        store = mem.store
        with store.transaction() as c:
            for key in ("/greenhouse.txt", "/copy.txt"):
                store.insert_document(c, key, key[1:-4], DOC_B, sha256_text(DOC_B), key=key)
            store.insert_document(c, "/lighthouse.txt", "lighthouse", DOC_A, sha256_text(DOC_A), key="/lighthouse.txt")
        mem.index("dense")
        hits = mem.retrieve("What grows in the greenhouse?", 6, strategy="dense")
        assert len({h.text for h in hits}) == len(hits)  # no text twice in the context
        twins = [h for h in hits if h.meta.get(SAME_TEXT)]
        assert twins  # DOC_B's chunks are stored twice, once per document
        for hit in twins:
            assert hit.provenance is not None
            assert {p.document.source for p in hit.provenance.passages} == {"/greenhouse.txt", "/copy.txt"}
            assert {p.chunk_id for p in hit.provenance.passages} == {hit.node_id, *hit.meta[SAME_TEXT]}  # type: ignore[misc]
            for p in hit.provenance.passages:  # each passage's span slices its own document to the text
                text = store.document_text(p.document.id)
                assert " ".join(text[p.start : p.end].split()) == hit.text  # type: ignore[index]
        [described] = [n for n in describe_hits(store, twins[:1], "dense")]
        assert len(described.documents) == 2 and len(described.chunk_ids) == 2


def test_distinct_texts_names_the_dropped_nodes_on_the_kept_hit() -> None:
    relations = Hit(9, "relations", 0.5, "same", 2, {SOURCE_NODES: [40, 41]})
    kept = distinct_texts(
        [Hit(1, "chunk", 0.9, "same"), Hit(2, "chunk", 0.8, "other", 1), Hit(3, "chunk", 0.7, "same", 2), relations]
    )
    assert [(h.node_id, h.rank) for h in kept] == [(1, 0), (2, 1)]
    assert kept[0].meta == {SAME_TEXT: [3, 40, 41]} and kept[1].meta == {}
