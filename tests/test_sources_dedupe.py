"""One document per content (issue 39, items 3 and 4): a source whose text another document holds becomes another
source of it; a moved file under ``--sync`` is a move; deleting one of two sources keeps the document; no context
holds two nodes with the same text; and what issue 26 made true (an edit costs in proportion to the change) holds.

Through the CLI (typer's CliRunner, as tests/test_cli.py) and the Python API, with the unit-test doubles, on both
store backends (the ``memory_at`` fixture)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from backends import MemoryAt
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory, cli
from gemrag.config import Config
from gemrag.errors import GemragError
from gemrag.memory.retrieval import distinct_texts, retrieve_published
from gemrag.types import Hit
from test_memory_lifecycle import documents

runner = CliRunner()
KEEPER = "The keeper is Ansel."


@pytest.fixture
def small_chunks(config: Config) -> Config:
    """Chunks of 40 tokens, so that a document of 150 words has several."""
    return config.model_copy(update={"memory": config.memory.model_copy(update={"chunk_tokens": 40})})


@pytest.fixture
def doubles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ScriptedLLM:
    """The CLI on the test doubles (in ``tmp_path``): a hash embedder and a scripted LLM counting its calls."""
    llm = ScriptedLLM()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("gemrag.memory.facade.build_embedder", lambda settings: HashEmbedder(model_id="onnx:test"))
    monkeypatch.setattr("gemrag.memory.facade.build_llm", lambda settings, cache_dir=None: llm)
    return llm


def invoke(*args: str) -> Any:
    result = runner.invoke(cli.app, list(args))
    assert result.exit_code == 0, result.output
    return result


def test_the_same_text_at_two_paths_is_one_document(tmp_path: Path, memory_at: MemoryAt, doubles: ScriptedLLM) -> None:
    """The issue's case: a/note.txt and its copy b/note.txt indexed one after the other make one document, whose
    retrieval returns the sentence once; b costs no chunk and no LLM call; deleting b keeps the document, deleting
    a then deletes it."""
    m = str(memory_at("m"))
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    (tmp_path / "a" / "note.txt").write_text(KEEPER)
    shutil.copy(tmp_path / "a" / "note.txt", tmp_path / "b" / "note.txt")
    invoke("index", "a/note.txt", "--memory", m, "-s", "gem", "-q")
    calls = doubles.calls
    assert calls > 0  # gem wrote utility questions and summaries for a
    result = invoke("index", "b/note.txt", "--memory", m, "-s", "gem", "-q")
    a_path, b_path = (str((tmp_path / f / "note.txt").resolve()) for f in ("a", "b"))
    assert f"{b_path}: same content as {a_path} (document 1)" in " ".join(result.stderr.split())
    assert "0 added, 0 updated, 0 unchanged, 1 same content" in result.stderr
    assert "(0 new)" in result.stdout and "LLM calls 0" in result.stdout and doubles.calls == calls
    info = " ".join(invoke("info", "--memory", m).stdout.split())
    assert "documents 1," in info and f"also from {b_path}" in info, info
    ask = ["ask", "Who is the keeper?", "--memory", m, "--retrieve-only", "--json"]
    for strategy in ("gem", "dense"):
        context = json.loads(invoke(*ask, "-s", strategy, "--build-missing").stdout)["context"]
        assert [c["text"] for c in context].count(KEEPER) == 1, context
    history = json.loads(invoke("info", "--memory", m, "--history", "b/note.txt", "--json").stdout)
    assert [(v["current"], v["id"], v["sources"]) for v in history] == [(True, 1, [a_path, b_path])]

    deleted = invoke("delete", "b/note.txt", "--memory", m).stdout
    assert "the document stays, held by" in deleted and "0 chunks deleted" in " ".join(deleted.split())
    with Memory.open(m, embedder=HashEmbedder(model_id="onnx:test")) as mem:
        assert [(d["id"], d["key"]) for d in mem.store.documents()] == [(1, a_path)]
        assert [(h["key"], h["source"], h["primary"]) for h in mem.store.holders(1)] == [(a_path, a_path, True)]
        assert [(v["reason"], v["current"]) for v in mem.store.document_history(b_path)] == [("deleted", False)]
    invoke("delete", "a/note.txt", "--memory", m)  # the last source: the document goes
    with Memory.open(m, embedder=HashEmbedder(model_id="onnx:test")) as mem:
        assert mem.store.documents() == [] and mem.store.nodes("chunk") == []


def test_a_moved_or_renamed_file_is_a_move_under_sync(
    tmp_path: Path, memory_at: MemoryAt, doubles: ScriptedLLM
) -> None:
    """Renaming a file of a synced directory keeps its document (id, chunks, artefacts), whose source changes;
    the history of the old path says it moved. Without --sync the new name is another source of the document."""
    m = str(memory_at("m"))
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "one.md").write_text("Note one is about boats. The harbour master is Ilse.\n")
    (notes / "two.md").write_text("Note two is about trains. The station master is Oskar.\n")
    sync = ["index", "notes", "--sync", "--memory", m, "-s", "gem", "-q"]
    assert "2 added, 0 updated, 0 unchanged, 0 removed" in invoke(*sync).stderr
    with Memory.open(m, embedder=HashEmbedder(model_id="onnx:test")) as mem:
        before = {
            d["id"]: [n.id for n in mem.store.nodes("chunk") if n.doc_id == d["id"]] for d in mem.store.documents()
        }
        questions = len(mem.store.questions())
    calls = doubles.calls
    (notes / "two.md").rename(notes / "deux.md")
    result = invoke(*sync)
    deux, two = str((notes / "deux.md").resolve()), str((notes / "two.md").resolve())
    assert "0 added, 0 updated, 1 unchanged, 1 moved, 0 removed" in result.stderr, result.stderr
    assert f"{deux}: moved from {two} (document 2 kept)" in " ".join(result.stderr.split())
    assert "LLM calls 0" in result.stdout and doubles.calls == calls
    with Memory.open(m, embedder=HashEmbedder(model_id="onnx:test")) as mem:
        docs = {d["id"]: d for d in mem.store.documents()}
        assert (docs[2]["key"], docs[2]["source"], docs[2]["title"]) == (
            deux,
            deux,
            "two",
        )  # the title it was indexed with
        assert {d: [n.id for n in mem.store.nodes("chunk") if n.doc_id == d] for d in docs} == before
        assert len(mem.store.questions()) == questions and mem.store.build_state("gem").state == "built"
        assert [(v["reason"], v["id"]) for v in mem.store.document_history(two)] == [("moved", 2)]
    shutil.copy(notes / "one.md", tmp_path / "copy.md")
    result = invoke("index", "copy.md", "--memory", m, "-s", "gem", "-q")  # not synced: another source of document 1
    assert "1 same content" in result.stderr
    assert "2 unchanged, 0 removed" in invoke(*sync).stderr  # copy.md is outside notes/: --sync leaves it alone


def test_sources_sharing_a_document(tmp_path: Path, memory_at: MemoryAt, small_chunks: Config) -> None:
    """The edge cases: two identical files in one call; a --sync where one of two sources of a document goes; an
    edited file that becomes identical to another live document (it joins it, its old document goes); an edited
    source whose old text another source still holds (it leaves for a new document chunked along the old one); two
    files swapping their texts (both documents stay, their sources swap)."""
    folder = tmp_path / "notes"
    folder.mkdir()
    texts = documents(3)
    a, b, c = (folder / f"{n}.txt" for n in "abc")
    a.write_text(texts[0])
    b.write_text(texts[0])
    c.write_text(texts[1])
    llm = ScriptedLLM()
    with Memory.open(memory_at("m"), small_chunks, llm=llm, embedder=HashEmbedder()) as mem:
        report = mem.add([folder], sync=True)
        assert [(ch.status, ch.doc_id, ch.same_as) for ch in report.changes] == [
            ("added", 1, None),
            ("same", 1, str(a.resolve())),
            ("added", 2, None),
        ]
        assert report.results == [(1, True), (1, False), (2, True)]
        mem.index("gem")
        b.unlink()  # one of two sources of document 1 goes: the document stays
        report = mem.add([folder], sync=True)
        assert report.describe() == "0 added, 0 updated, 2 unchanged, 1 removed" and report.documents_removed == 0
        assert [h["key"] for h in mem.store.holders(1)] == [str(a.resolve())]
        assert [(v["reason"], v["id"]) for v in mem.store.document_history(str(b.resolve()))] == [("removed", 1)]

        c.write_text(texts[0])  # c becomes identical to a: it joins document 1, its own document 2 goes
        chunks_2 = mem.store.document_chunk_ids(2)
        report = mem.add([folder], sync=True)
        assert [(ch.status, ch.doc_id) for ch in report.changes] == [("unchanged", 1), ("same", 1)]
        assert report.documents_removed == 1 and report.chunks_deleted == len(chunks_2) > 0
        assert [d["id"] for d in mem.store.documents()] == [1]
        assert [(v["reason"], v["id"], v["current"]) for v in mem.store.document_history(str(c.resolve()))] == [
            ("replaced", 2, False),
            (None, 1, True),
        ]

        old_chunks = [mem.store.node(i).text for i in mem.store.document_chunk_ids(1)]
        a.write_text(texts[0] + "\n\nThe lighthouse keeper is called Marguerite Vale.\n")  # c still holds the old
        mem.index("gem")
        calls = llm.calls
        report = mem.add([folder], sync=True)
        [changed] = [ch for ch in report.changes if ch.key == str(a.resolve())]
        assert (changed.status, changed.version) == ("updated", 2) and changed.doc_id != 1  # a new document
        assert [h["key"] for h in mem.store.holders(1)] == [str(c.resolve())]
        new_chunks = [mem.store.node(i).text for i in mem.store.document_chunk_ids(changed.doc_id)]
        assert new_chunks[: len(old_chunks) - 1] == old_chunks[:-1]  # cut along the old chunks: only the end is new
        assert report.chunks_new == len(new_chunks) and report.chunks_deleted == 0
        mem.index("gem")
        fresh = [t for t in new_chunks if t not in old_chunks]
        assert 0 < llm.calls - calls <= 3 * len(fresh) + 10  # its unchanged chunks' questions are cached

        a.write_text(texts[0])  # swap: a takes c's text and c takes a's
        c.write_text(texts[0] + "\n\nThe lighthouse keeper is called Marguerite Vale.\n")
        nodes = sorted(n.id for n in mem.store.nodes("chunk"))
        report = mem.add([folder], sync=True)
        assert [(ch.status, ch.doc_id) for ch in report.changes] == [("same", 1), ("same", changed.doc_id)]
        assert (
            report.chunks_deleted == report.chunks_new == 0 and sorted(n.id for n in mem.store.nodes("chunk")) == nodes
        )
        assert [h["key"] for h in mem.store.holders(1)] == [str(a.resolve())]
        assert [h["key"] for h in mem.store.holders(changed.doc_id)] == [str(c.resolve())]


def test_an_edit_of_a_sole_source_keeps_its_document(tmp_path: Path, memory_at: MemoryAt, small_chunks: Config) -> None:
    """Issue 26 still holds with shared documents around: a source alone in its document that changes takes the new
    text in place (same id, its unchanged chunks kept); a new --id source of the same text joins it."""
    path = tmp_path / "story.txt"
    text = documents(2)
    path.write_text(text[0])
    with Memory.open(memory_at("m"), small_chunks, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add([path])
        mem.index("dense")
        kept = mem.store.document_chunk_ids(1)
        path.write_text(text[0] + "\n\n" + text[1])
        report = mem.add([path])
        assert [(ch.status, ch.doc_id, ch.version) for ch in report.changes] == [("updated", 1, 2)]
        assert report.chunks_kept == len(kept) and set(kept) <= set(mem.store.document_chunk_ids(1))
        report = mem.add([path], id="tale")
        assert [(ch.status, ch.doc_id) for ch in report.changes] == [("same", 1)]
        assert mem.delete("tale").kept_by == [str(path.resolve())]
        assert len(mem.store.documents()) == 1
        with pytest.raises(GemragError, match="no document"):
            mem.delete("tale")


def test_no_context_holds_one_text_twice(tmp_path: Path, memory_at: MemoryAt, small_chunks: Config) -> None:
    """Two documents holding the same text (a memory written before one document per content) give each passage
    once per context, the budget filled with the next hits; :func:`distinct_texts` keeps the best-ranked."""
    texts = documents(3)
    with Memory.open(memory_at("m"), small_chunks, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        store = mem.store
        with store.transaction() as c:  # as schema 4 stored the same text under two identities
            for i, text in enumerate([texts[0], texts[0], texts[1], texts[2]]):
                store.insert_document(c, f"/d{i}.txt", f"d{i}", text, f"{i}" * 64, key=f"/d{i}.txt")
        mem.index("dense")
        question = "What did the ambassador say about the language of the natives?"
        raw = mem.get_strategy("dense").retrieve(mem.ctx, question, 6)
        assert len({h.text for h in raw}) < len(raw)  # the strategy alone repeats texts
        for budget in (2, 4, 6):
            hits = mem.retrieve(question, budget, "dense")
            assert len(hits) == budget and len({h.text for h in hits}) == budget
            assert [h.rank for h in hits] == list(range(budget))
        assert [h.text for h in mem.retrieve(question, 6, "dense")] == list(dict.fromkeys(
            h.text for h in mem.get_strategy("dense").retrieve(mem.ctx, question, 12)))[:6]  # fmt: skip

    hit = Hit(1, "chunk", 0.9, "same")
    got = distinct_texts(
        [hit, Hit(2, "chunk", 0.8, "other", 1), Hit(3, "chunk", 0.7, "same", 2), Hit(4, "chunk", 0.6, "x", 3)]
    )
    assert [(h.node_id, h.rank) for h in got] == [(1, 0), (2, 1), (4, 2)]


def test_the_budget_is_filled_after_dropping_repeats() -> None:
    """retrieve_published asks a strategy again with a larger budget when repeats were dropped, and stops when the
    strategy has no more hits."""

    class Repeating:
        name = "repeating"
        asked: list[int] = []

        def retrieve(self, ctx: Any, question: str, budget: int) -> list[Hit]:
            self.asked.append(budget)
            texts = ["a", "a", "b", "b", "c", "d"][:budget]
            return [Hit(i, "chunk", 1.0 - i / 10, t, i) for i, t in enumerate(texts)]

    class Chunks:  # every node a chunk that exists (retrieve_published checks that no hit rests on removed text)
        def nodes_by_id(self, ids: list[int]) -> dict[int, Any]:
            return {i: SimpleNamespace(id=i, kind="chunk", strategy=None, meta={}) for i in ids}

        def node_sources(self, ids: list[int]) -> dict[int, list[int]]:
            return {i: [] for i in ids}

    ctx = SimpleNamespace(store=Chunks())
    strategy = Repeating()
    hits = retrieve_published(ctx, strategy, "q", 3)  # type: ignore[arg-type]
    assert [h.text for h in hits] == ["a", "b", "c"] and strategy.asked == [3, 4, 6]
    strategy.asked.clear()
    assert [h.text for h in retrieve_published(ctx, strategy, "q", 6)] == ["a", "b", "c", "d"]  # type: ignore[arg-type]
    assert strategy.asked == [6, 8]  # fewer hits than asked: the strategy has no more
    strategy.asked.clear()
    assert len(retrieve_published(ctx, strategy, "q", 10)) == 4 and strategy.asked == [10]  # type: ignore[arg-type]


def test_the_demo_names_its_story_by_a_stable_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, doubles: ScriptedLLM
) -> None:
    """README command 1, then command 2 (an editable reinstall: the story at another path), then `gemrag demo`:
    the second demo finds its story already indexed (0 LLM calls) and answers as the first."""
    import gemrag.cli.demo as demo

    shipped = demo.example_dir()
    answers = []
    for install in ("site-packages", "checkout"):
        where = tmp_path / install / "quality"
        shutil.copytree(shipped, where)
        monkeypatch.setattr(demo, "example_dir", lambda where=where: where)
        calls = doubles.calls
        result = invoke(
            "demo", "--memory", str(tmp_path / "demo"), "--limit", "2", "-q", "--set", "memory.chunk_tokens=100"
        )
        answers.append([line.strip() for line in result.stdout.splitlines() if "gold" in line])
        spent = doubles.calls - calls
    assert spent == 0 and answers[0] == answers[1] and len(answers[0]) == 2
    with Memory.open(tmp_path / "demo", embedder=HashEmbedder(model_id="onnx:test")) as mem:
        [doc] = mem.store.documents()
        assert doc["key"] == demo.STORY_ID
