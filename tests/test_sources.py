"""Documents identified by their source (gemrag.memory.sources): an edited file replaces its previous version, and every
strategy stays correct after the update.

For each strategy, with the unit-test doubles: a memory of five files in which one file was edited and indexed
again retrieves exactly what a memory built from the edited files alone retrieves, and never the replaced text;
RAPTOR's incremental path follows its documented rule (``strategies/raptor/update.py``: the changed clusters and
their ancestors only are summarized again); the conversation strategies keep their turns and dates.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from test_strategy_raptor import pca

from backends import MemoryAt
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config
from gemrag.errors import InputError
from gemrag.memory.states import StaleStrategyWarning
from gemrag.strategies.raptor.strategy import RaptorConfig, RaptorStrategy
from test_memory_lifecycle import QUESTIONS, documents

OLD_FACT, NEW_FACT = "The lighthouse keeper is called Ansel Brandt.", "The lighthouse keeper is called Marguerite Vale."
ASKED = [*QUESTIONS, "What is the lighthouse keeper called?"]
STRATEGIES = ("gem", "dense", "bm25", "raptor", "full", "remem", "unweaver", "hlgraph")


@pytest.fixture
def update_config(config: Config) -> Config:
    """Small chunks (40 tokens); RAPTOR rebuilt from scratch here (its incremental rule has its own test)."""
    data = config.model_dump()
    data["memory"]["chunk_tokens"] = 40
    return Config.model_validate({**data, "raptor": {"incremental": False}})


def open_memory(path: str | Path, config: Config, llm: ScriptedLLM | None = None, **raptor: Any) -> Memory:
    mem = Memory.open(path, config, llm=llm or ScriptedLLM(), embedder=HashEmbedder())
    settings = {"reducer": pca, "reduction_dim": 3, "max_clusters": 6, "incremental": False, **raptor}
    mem._strategies["raptor"] = RaptorStrategy(RaptorConfig(**settings))  # no UMAP JIT, a short BIC search
    return mem


def write_files(folder: Path, fact: str) -> list[Path]:
    """Five files: passages of the QuALITY story, the third ending with a paragraph stating ``fact``."""
    folder.mkdir(exist_ok=True)
    paths = []
    for i, text in enumerate(documents()):
        path = folder / f"part{i}.txt"
        path.write_text(text + (f"\n\n{fact}\n" if i == 2 else "\n"), encoding="utf-8")
        paths.append(path)
    return paths


def answers(mem: Memory, strategy: str) -> list[list[tuple[str, str]]]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaleStrategyWarning)  # built over exactly the memory's chunks
        return [[(h.kind, h.text) for h in mem.retrieve(q, 4, strategy=strategy)] for q in ASKED]


def visible_texts(mem: Memory) -> str:
    """Every visible node's text and utility questions (chunks and every strategy's published nodes)."""
    nodes = " ".join(n.text + " " + str(n.meta) for n in mem.store.nodes())
    return nodes + " ".join(q for _, _, q in mem.store.questions())


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_an_updated_memory_retrieves_what_one_built_from_the_new_files_retrieves(
    tmp_path: Path, memory_at: MemoryAt, update_config: Config, strategy: str
) -> None:
    folder = tmp_path / "notes"
    write_files(folder, OLD_FACT)
    llm = ScriptedLLM()
    with open_memory(memory_at("m"), update_config, llm) as mem:
        mem.add([folder])
        mem.index(strategy)
        assert OLD_FACT in visible_texts(mem)
        old_chunks = {n.text for n in mem.store.nodes("chunk")}
        write_files(folder, NEW_FACT)  # one file edited
        report = mem.add([folder])
        assert [c.status for c in report.changes] == ["unchanged"] * 2 + ["updated"] + ["unchanged"] * 2
        assert report.chunks_deleted >= 1 and report.chunks_kept >= 1  # its unedited chunks kept their texts
        calls = llm.calls
        mem.index(strategy)
        new_chunks = {n.text for n in mem.store.nodes("chunk")} - old_chunks
        assert len(new_chunks) == 1 and NEW_FACT in next(iter(new_chunks))  # the edited paragraph's chunk only
        spent = llm.calls - calls
        got = answers(mem, strategy)
        assert OLD_FACT not in visible_texts(mem) and OLD_FACT not in str(got)
        assert [d["version"] for d in mem.store.documents()] == [1, 1, 2, 1, 1]
    fresh_llm = ScriptedLLM()
    with open_memory(memory_at("ref"), update_config, fresh_llm) as ref:
        ref.add([folder])
        ref.index(strategy)
        assert {n.text for n in ref.store.nodes("chunk")} == old_chunks - {
            t for t in old_chunks if OLD_FACT in t
        } | new_chunks
        assert got == answers(ref, strategy)
    if strategy in ("gem", "dense", "bm25", "full"):  # retrieval by the question's words finds the new fact
        assert NEW_FACT in str(got[-1])
    assert spent <= fresh_llm.calls  # the update costs no more than a build from scratch, usually far less
    if strategy in ("dense", "bm25", "full"):
        assert spent == 0


def test_raptor_incremental_update_follows_its_rule(tmp_path: Path, memory_at: MemoryAt, update_config: Config) -> None:
    """The edited file's new chunk joins one layer-1 cluster, the clusters that lost or gained a chunk and their
    ancestors are summarized again, every other summary node stays as it was (same id, same text)."""
    folder = tmp_path / "notes"
    write_files(folder, OLD_FACT)
    llm = ScriptedLLM()
    raptor = {"incremental": True, "rebuild_fraction": 0.5, "cluster_tokens": 500}  # several clusters
    # Without titles: the stand-in (hash) embedder places the edited chunk next to its old version only by its text;
    # a title prefix can send it to another layer-1 cluster, which the rule also allows but this test's
    # expectation (the old chunk's clusters alone are dirty) does not cover.
    update_config = update_config.model_copy(
        update={"memory": update_config.memory.model_copy(update={"chunk_titles": False})}
    )
    with open_memory(memory_at("m"), update_config, llm, **raptor) as mem:
        mem.add([folder])
        mem.index("raptor")
        before = {n.id: n for n in mem.store.nodes("summary", strategy="raptor")}
        old_chunk = next(n.id for n in mem.store.nodes("chunk") if OLD_FACT in n.text)
        write_files(folder, NEW_FACT)
        mem.add([folder])
        calls = llm.calls
        mem.index("raptor")
        spent = llm.calls - calls
        new_chunk = next(n.id for n in mem.store.nodes("chunk") if NEW_FACT in n.text)
        after = {n.id: n for n in mem.store.nodes("summary", strategy="raptor")}
        kept = set(before) & set(after)
        assert len(before) >= 2  # several clusters, so that one changes and the others must not
        dirty = {i for i, n in before.items() if old_chunk in n.meta["children"]}
        for _ in range(5):  # ancestors of the changed clusters are dirty too
            dirty |= {i for i, n in before.items() if set(n.meta["children"]) & dirty}
        assert kept == set(before) - dirty and all(before[i].text == after[i].text for i in kept)
        made = set(after) - kept
        assert len(made) == spent <= len(dirty)  # one summary call per re-made cluster (a new chunk joins one)
        parents = [i for i in after if new_chunk in after[i].meta["children"]]
        assert len(parents) == 1 and parents[0] in made
        assert OLD_FACT not in visible_texts(mem)
        with warnings.catch_warnings():
            warnings.simplefilter("error", StaleStrategyWarning)
            hits = mem.retrieve("What is the lighthouse keeper called?", 4, strategy="raptor")
        assert OLD_FACT not in str([h.text for h in hits])


CONVERSATION = (
    "[1:56 pm on 8 May, 2023] Ann: I adopted a puppy named Biscuit yesterday.\n"
    "[1:56 pm on 8 May, 2023] Bob: Congratulations on Biscuit! I started painting lessons.\n\n"
    "[3:10 pm on 20 June, 2023] Bob: I sold my first painting at the Tarnow market.\n"
    "[3:10 pm on 20 June, 2023] Ann: Biscuit learned to swim in the lake.\n"
)


@pytest.mark.parametrize("strategy", ["remem_gist", "remem_temporal"])
def test_an_edited_conversation_keeps_its_dates(
    tmp_path: Path, memory_at: MemoryAt, update_config: Config, strategy: str
) -> None:
    """A conversation file whose one turn was corrected: its turns keep their dates and order, the corrected turn
    replaces the old one, and retrieval equals a memory built from the corrected file alone."""
    path = tmp_path / "talk.txt"
    path.write_text(CONVERSATION, encoding="utf-8")
    corrected = CONVERSATION.replace("at the Tarnow market", "at the Velmora fair")
    with open_memory(memory_at("m"), update_config) as mem:
        mem.add([path])
        mem.index(strategy)
        path.write_text(corrected, encoding="utf-8")
        assert [c.status for c in mem.add([path]).changes] == ["updated"]
        mem.index(strategy)
        question = "Where did Bob sell his first painting in June 2023?"
        got = [(h.kind, h.text, h.meta.get("date")) for h in mem.retrieve(question, 4, strategy=strategy)]
        assert "Tarnow" not in visible_texts(mem) and "Tarnow" not in str(got)
    with open_memory(memory_at("ref"), update_config) as ref:
        ref.add([path])
        ref.index(strategy)
        assert got == [(h.kind, h.text, h.meta.get("date")) for h in ref.retrieve(question, 4, strategy=strategy)]


def test_chat_exchanges_are_never_updated(tmp_path: Path, memory_at: MemoryAt, update_config: Config) -> None:
    """Anonymous documents (chat exchanges, add_text without an id) are deduplicated by text, never replaced."""
    with open_memory(memory_at("m"), update_config) as mem:
        a = mem.add_text("[turn 1, 2024-01-02] User: hello", "chat", "chat:Ava#1")
        b = mem.add_text("[turn 2, 2024-01-03] User: hello again", "chat", "chat:Ava#1")  # same source, new text
        assert a[1] and b[1] and a[0] != b[0] and len(mem.store.documents()) == 2
        assert mem.add_text("[turn 1, 2024-01-02] User: hello", "chat", "chat:Ava#1") == (a[0], False)
        assert mem.store.database._query("SELECT COUNT(*) FROM document_versions")[0][0] == 0


def test_sync_removes_gone_files_and_history_keeps_versions(
    tmp_path: Path, memory_at: MemoryAt, update_config: Config
) -> None:
    folder = tmp_path / "notes"
    paths = write_files(folder, OLD_FACT)
    with open_memory(memory_at("m"), update_config) as mem:
        mem.add([folder], sync=True)
        mem.index("dense")
        removed = mem.store.document_chunk_ids(5)
        paths[4].unlink()
        write_files(folder, NEW_FACT)
        paths[4].unlink()
        report = mem.add([folder], sync=True, keep_versions=True)
        assert report.describe() == "0 added, 1 updated, 3 unchanged, 1 removed"
        assert (report.chunks_new, report.chunks_kept) == (1, len(mem.store.document_chunk_ids(3)) - 1)
        assert report.chunks_deleted == 1 + len(removed)  # the edited paragraph's old chunk and part4's chunks
        stale = f"stale: 1 new chunk, {report.chunks_deleted} deleted chunks"
        assert mem.store.build_state("dense").describe().startswith(stale)
        mem.index("dense")
        hits = mem.retrieve("What is the lighthouse keeper called?", 10, strategy="dense")
        assert not {h.node_id for h in hits} - {n.id for n in mem.store.nodes("chunk")}
        assert [Path(d["key"]).name for d in mem.store.documents()] == [f"part{i}.txt" for i in range(4)]
        history = mem.store.document_history("part2.txt")
        assert [(v["version"], v["reason"], v["current"]) for v in history] == [(1, "replaced", False), (2, None, True)]
        assert OLD_FACT in history[0]["text"] and history[0]["sha256"] != history[1]["sha256"]
        assert history[0]["ended_at"] >= history[0]["added_at"]
        gone = mem.store.document_history("part4.txt")
        assert [(v["reason"], v["current"]) for v in gone] == [("removed", False)]
        mem.add([folder / "part1.txt"], sync=False)  # without --sync nothing is removed
        assert len(mem.store.documents()) == 4
        folder_files = sorted(folder.iterdir())
        for p in folder_files:
            p.unlink()
        assert mem.add([folder], sync=True).describe() == "0 added, 0 updated, 0 unchanged, 4 removed"
        assert mem.store.documents() == []


def test_ids_stdin_and_the_same_file_twice(tmp_path: Path, memory_at: MemoryAt, update_config: Config) -> None:
    folder = tmp_path / "notes"
    paths = write_files(folder, OLD_FACT)
    with open_memory(memory_at("m"), update_config) as mem:
        assert (
            mem.add([paths[0], folder / ".." / "notes" / "part0.txt"]).describe() == "1 added, 0 updated, 0 unchanged"
        )
        report = mem.add([paths[1]], id="keeper-notes")
        assert [(c.status, c.key) for c in report.changes] == [("added", "keeper-notes")]
        assert mem.store.find_documents("keeper-notes")[0]["source"] == str(paths[1].resolve())
        report = mem.add([paths[2]], id="keeper-notes")  # another file under the same id replaces it
        assert [(c.status, c.version) for c in report.changes] == [("updated", 2)]
        with pytest.raises(InputError, match="names one document"):
            mem.add([folder], id="x")
        first = mem.add_text("Some notes.", id="n")
        assert first[1] and mem.add_text("Some notes.", id="n") == (first[0], False)
        doc_id, created = mem.add_text("Some other notes.", id="n")
        assert created and [d["id"] for d in mem.store.documents() if d["key"] == "n"] == [doc_id]
        versions = mem.store.document_history("n")
        assert [v["version"] for v in versions] == [1, 2] and versions[0]["text"] is None  # text only if asked


def test_a_failed_update_changes_nothing(
    tmp_path: Path, memory_at: MemoryAt, update_config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replacement is one transaction: killed inside it, the old version and every build stay as they were."""
    folder = tmp_path / "notes"
    write_files(folder, OLD_FACT)
    with open_memory(memory_at("m"), update_config) as mem:
        mem.add([folder])
        mem.index("dense")
        before = (mem.store.documents(), [n.id for n in mem.store.nodes()], mem.store.published_generation("dense"))
        expected = answers(mem, "dense")
        write_files(folder, NEW_FACT)
        real = mem.store.place_chunks

        def killed(*args: Any, **kwargs: Any) -> None:
            real(*args, **kwargs)
            raise KeyboardInterrupt  # after the old chunk went and the new version came in, before the commit

        monkeypatch.setattr(mem.store, "place_chunks", killed)
        with pytest.raises(KeyboardInterrupt):
            mem.add([folder])
        monkeypatch.undo()
        after = (mem.store.documents(), [n.id for n in mem.store.nodes()], mem.store.published_generation("dense"))
        assert after == before and answers(mem, "dense") == expected
        assert mem.add([folder]).describe() == "0 added, 1 updated, 4 unchanged"


def test_a_deleted_document_is_in_the_history(tmp_path: Path, memory_at: MemoryAt, update_config: Config) -> None:
    folder = tmp_path / "notes"
    write_files(folder, OLD_FACT)
    with open_memory(memory_at("m"), update_config) as mem:
        mem.add([folder])
        mem.index("dense")
        report = mem.delete("part1.txt")  # the end of its path names it
        assert report.document["key"] == str((folder / "part1.txt").resolve())
        history = mem.store.document_history("part1.txt")
        assert [(v["version"], v["reason"], v["current"], v["text"]) for v in history] == [(1, "deleted", False, None)]
        assert [c.status for c in mem.add([folder]).changes].count("added") == 1  # it comes back as a new document
