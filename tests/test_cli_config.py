"""``gemrag config``: every section's effective settings as TOML, and where each value came from."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

import pytest
from typer.testing import CliRunner

from gemrag import cli

runner = CliRunner()


def test_config_prints_every_section_with_the_paper_faithful_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./gemrag.toml
    result = runner.invoke(cli.app, ["config"])
    assert result.exit_code == 0, result.output
    settings = tomllib.loads(result.output)  # valid TOML
    assert settings["unweaver"]["weighted"] is False
    assert settings["hlgraph"]["source_chunks"] == 0
    assert settings["remem"]["edge_weights"] == "hipporag2" and settings["remem"]["filter_match"] == "snap"
    assert settings["gem"]["search"] == "best_first" and settings["strategy"] == "fused"
    assert {"llm", "embedder", "raptor", "remem_gist", "remem_temporal", "bm25"} <= set(settings)


def test_origin_names_the_layer_each_value_came_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gemrag.toml").write_text('[hlgraph]\nsource_chunks = 3\n[remem]\nfilter_match = "snap"\n')
    monkeypatch.setenv("GEMRAG_REMEM__FILTER_MATCH", "exact")
    result = runner.invoke(cli.app, ["config", "--origin", "--set", "unweaver.weighted=true"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "weighted = true  # --set" in lines
    assert "source_chunks = 3  # gemrag.toml" in lines
    assert 'filter_match = "exact"  # GEMRAG_REMEM__FILTER_MATCH' in lines  # the variable beats the file
    assert 'edge_weights = "hipporag2"  # default' in lines


def test_an_invalid_value_is_a_one_line_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(cli.app, ["config", "--set", "remem.edge_weights=thrice"])
    assert result.exit_code == 2 and "edge_weights" in result.output


def test_every_strategy_says_whether_it_reads_chunk_titles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(cli.app, ["config", "--origin", "--set", "unweaver.read_titles=true"])
    assert result.exit_code == 0, result.output
    sections: dict[str, list[str]] = {}
    for line in result.output.splitlines():
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), [])
        elif line and sections:
            current.append(line)

    def titles_line(section: str) -> str:
        return next(line for line in sections[section] if "read_titles" in line)

    for name in ("gem", "hlgraph", "raptor"):  # their papers read the chunk alone
        assert titles_line(name).startswith("# read_titles = (unset: false, as the method's paper")
    for name in ("dense", "bm25", "remem"):  # HippoRAG 2's title + text passages
        assert titles_line(name).startswith("# read_titles = (unset: true, as the method's paper")
    assert titles_line("unweaver") == "read_titles = true  # --set"
    assert not any("read_titles" in line for line in sections["full"])  # reads no indexed text
    assert "# chunk_titles = (unset: what the memory records; true for a new memory)  # default" in sections["memory"]
    assert tomllib.loads(runner.invoke(cli.app, ["config"]).output)["unweaver"].get("read_titles") is None
