"""The CLI: clear messages and exit code 2 for bad input; Ctrl-C during index exits 130 and says how to resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from backends import MemoryAt
from gemrag import cli
from gemrag.memory import Memory

runner = CliRunner()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        (b"", "empty"),
        (b"\x00\x01\x02binary", "binary"),
        ("naïve café".encode("latin-1"), "not valid UTF-8"),
    ],
)
def test_index_bad_inputs(tmp_path: Path, content: bytes | None, message: str) -> None:
    doc = tmp_path / "doc.txt"
    if content is not None:
        doc.write_bytes(content)
    good = tmp_path / "good.txt"
    good.write_text("A perfectly fine document. It has two sentences.")
    result = runner.invoke(cli.app, ["index", str(good), str(doc), "--memory", str(tmp_path / "mem"), "-q"])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    # nothing was added: the good file was not half-indexed either
    with Memory.open(tmp_path / "mem") as mem:
        assert mem.store.documents() == []


def test_ask_before_index_and_info_on_non_memory(tmp_path: Path) -> None:
    result = runner.invoke(cli.app, ["ask", "who?", "--memory", str(tmp_path / "empty"), "--retrieve-only"])
    assert result.exit_code == 2 and "gemrag index" in result.output
    result = runner.invoke(cli.app, ["info", "--memory", str(tmp_path / "nothing")])
    assert result.exit_code == 2 and "not a gemrag memory" in result.output


def test_interrupted_index_says_how_to_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = tmp_path / "doc.txt"
    doc.write_text("Some text to index. Another sentence.")

    def interrupted(self: Memory) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Memory, "index", interrupted)
    result = runner.invoke(cli.app, ["index", str(doc), "--memory", str(tmp_path / "mem"), "-q"])
    assert result.exit_code == 130
    assert "run the same command again to resume" in result.output
    with Memory.open(tmp_path / "mem") as mem:  # the document read before the interrupt is kept
        assert len(mem.store.documents()) == 1


def test_help_lists_commands() -> None:
    result = runner.invoke(cli.app, ["--help"])
    assert result.exit_code == 0
    for cmd in ("index", "ask", "info", "demo"):
        assert cmd in result.output


def test_an_edited_file_replaces_its_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memory_at: MemoryAt
) -> None:
    """Issue 26's story: index a.txt, edit it, index it again: one document `a` (updated), and retrieval returns only
    the new sentence; then a directory kept in step with --sync after a file is deleted (on SQLite and
    PostgreSQL)."""
    from fakes import HashEmbedder

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("gemrag.memory.facade.build_embedder", lambda settings: HashEmbedder(model_id="onnx:test"))
    m = str(memory_at("m"))
    a = tmp_path / "a.txt"
    a.write_text("The lighthouse keeper is called Ansel Brandt.\n")
    index = ["index", "a.txt", "--memory", m, "--strategy", "dense", "-q"]
    result = runner.invoke(cli.app, index)
    assert result.exit_code == 0 and "1 added, 0 updated, 0 unchanged" in result.stderr, result.output
    a.write_text("The lighthouse keeper is called Marguerite Vale.\n")
    result = runner.invoke(cli.app, index)
    assert result.exit_code == 0 and "0 added, 1 updated, 0 unchanged" in result.stderr, result.output
    ask = ["ask", "What is the lighthouse keeper called?", "--memory", m, "-s", "dense", "--retrieve-only", "--json"]
    result = runner.invoke(cli.app, ask)
    assert result.exit_code == 0, result.output
    assert [c["text"] for c in json.loads(result.stdout)["context"]] == [
        "The lighthouse keeper is called Marguerite Vale."
    ]
    result = runner.invoke(cli.app, ["info", "--memory", m])
    text = " ".join(result.stdout.split())  # rich wraps long lines
    assert "documents 1," in text and "[1] a (49 chars)" in text and "version 2 (updated)" in text, text
    result = runner.invoke(cli.app, ["info", "--memory", m, "--history", "a.txt", "--json"])
    history = json.loads(result.stdout)
    assert [(v["version"], v["reason"]) for v in history] == [(1, "replaced"), (2, None)]

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "one.md").write_text("Note one is about boats.\n")
    (notes / "two.md").write_text("Note two is about trains.\n")
    sync = ["index", "notes", "--sync", "--memory", m, "--strategy", "dense", "-q"]
    assert "2 added, 0 updated, 0 unchanged, 0 removed" in runner.invoke(cli.app, sync).stderr
    (notes / "two.md").unlink()
    assert "0 added, 0 updated, 1 unchanged, 1 removed" in runner.invoke(cli.app, sync).stderr
    result = runner.invoke(cli.app, ["ask", "trains", "--memory", m, "-s", "dense", "--retrieve-only", "--json"])
    assert "trains" not in result.stdout


def test_mcp_says_when_it_creates_a_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`gemrag mcp --memory typo` creates the memory its `remember` tool writes to, and says so on stderr; an
    existing memory is opened silently."""
    from fakes import HashEmbedder

    pytest.importorskip("mcp")
    served: list[Any] = []

    class Server:
        def run(self, transport: str) -> None:
            served.append(transport)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("gemrag.memory.facade.build_embedder", lambda settings: HashEmbedder(model_id="onnx:test"))
    monkeypatch.setattr("gemrag.mcp_server.create_server", lambda tools: Server())
    result = runner.invoke(cli.app, ["mcp", "--memory", "typo"])
    assert result.exit_code == 0 and served == ["stdio"], result.output
    assert (
        "typo held no memory: created an empty one" in result.stderr and (tmp_path / "typo" / "memory.sqlite").exists()
    )
    result = runner.invoke(cli.app, ["mcp", "--memory", "typo"])
    assert result.exit_code == 0 and result.stderr == ""


def test_ask_shows_sources_and_cites_in_json_and_in_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memory_at: MemoryAt
) -> None:
    """Issue 39: every hit of `ask --json` names its document, source and span (its slice is the passage), the
    answer lists the passages it cites, and the table has a source column with the sources under the answer."""
    from fakes import HashEmbedder, ScriptedLLM

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("gemrag.memory.facade.build_embedder", lambda settings: HashEmbedder(model_id="onnx:test"))
    monkeypatch.setattr("gemrag.memory.facade.build_llm", lambda settings, cache_dir=None: ScriptedLLM())
    m = str(memory_at("m"))
    text = "The keeper is Ansel.\n\nThe   boat comes on Mondays.\n"
    (tmp_path / "note.txt").write_text(text)
    assert runner.invoke(cli.app, ["index", "note.txt", "--memory", m, "--strategy", "dense", "-q"]).exit_code == 0
    base = ["ask", "Who is the keeper?", "--memory", m, "-s", "dense", "--budget", "2"]
    result = runner.invoke(cli.app, [*base, "--retrieve-only", "--json"])
    assert result.exit_code == 0, result.output
    retrieved = json.loads(result.stdout)
    assert retrieved["answer"] is None and retrieved["strategy"] == "dense"
    for hit in retrieved["context"]:
        [passage] = hit["passages"]
        assert passage["document"]["title"] == "note" and passage["document"]["source"] == str(tmp_path / "note.txt")
        assert " ".join(text[passage["start"] : passage["end"]].split()) == hit["text"]
    result = runner.invoke(cli.app, [*base, "--json"])
    answered = json.loads(result.stdout)
    assert answered["answer"] == "A free-form answer [1]." and answered["cited"] == [1]
    assert answered["citations"][0]["marker"] == 1 and answered["citations"][0]["passages"]
    assert answered["context"] == retrieved["context"] and answered["dropped_citations"] == 0
    result = runner.invoke(cli.app, base)
    shown = " ".join(result.stdout.split())
    first = retrieved["context"][0]["passages"][0]
    assert "sources: [1] note.txt #" in shown and "source" in shown
    assert f"[{first['start']}:{first['end']})" in shown
