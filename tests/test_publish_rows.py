"""The ``result-rows`` mark (gemrag.eval.publish_rows through gemrag.eval.publish_docs): a benchmark record's rows
as a table, its columns' formats, ``where=``, ``group=``, ratios and counts, and the errors of a bad mark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gemrag.errors import InputError
from gemrag.eval.publish_docs import differences, main, render

RECORD = {
    "schema_version": 1,
    "name": "bench",
    "date": "2026-12-02T05:38:53+00:00",
    "code": {"commit": "d33e72862803b9f7b873d7bb50f8e2d52f796418", "version": "0.2.0"},
    "machine": {"cpus": 2, "load": [6.77, 8.16]},
    "kind": "bench",
    "rows": [
        {"backend": "sqlite", "scenario": "delete", "hits": {"after": 0}, "rows": 12, "files": 300, "done": True},
        {"backend": "sqlite", "scenario": "purge", "hits": {"after": 1}, "rows": 0, "files": 0, "done": False},
        {"backend": "postgres", "scenario": "delete", "hits": {"after": 2}, "rows": 10, "files": None, "done": True},
        {"backend": "postgres", "scenario": "purge", "rows": 3, "files": None},
    ],
    "results": [
        {"entries": 10000, "erase_s": 0.0409, "scan_s": 9.094, "ci": [0.25, 0.5]},
        {"entries": 1000000, "erase_s": 2.5, "scan_s": 900.0, "ci": [0.125, 0.75]},
    ],
}  # fmt: skip


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "bench.json").write_text(json.dumps(RECORD), encoding="utf-8")
    return tmp_path


def _table(root: Path, spec: str) -> list[str]:
    """The table lines a mark renders (header, rule, rows), without the caption."""
    out = render(f"<!-- result-rows: {spec} -->\n<!-- /result -->", root)
    return [line for line in out.splitlines() if line.startswith("|")]


def test_rows_with_formats_headers_and_nested_fields(root: Path) -> None:
    lines = _table(root, "bench backend scenario hits.after 'rows:,:rows at end' files:, done")
    assert lines == [
        "| backend | scenario | hits.after | rows at end | files | done |",
        "|---|---|---|---|---|---|",
        "| sqlite | delete | 0 | 12 | 300 | yes |",
        "| sqlite | purge | 1 | 0 | 0 | no |",
        "| postgres | delete | 2 | 10 | – | yes |",
        "| postgres | purge | – | 3 | – | – |",
    ]


def test_a_number_in_a_path_picks_an_item_of_a_list(root: Path) -> None:
    lines = _table(root, "bench entries:, ci.0:.1%:low ci.1:.1%:high list=results")
    assert lines[0] == "| entries | low | high |"
    assert lines[2:] == ["| 10,000 | 25.0% | 50.0% |", "| 1,000,000 | 12.5% | 75.0% |"]
    with pytest.raises(InputError, match="ci.2"):  # past the end of every row's list: a typo, as a missing field
        _table(root, "bench entries ci.2 list=results")


def test_where_group_count_and_ratio(root: Path) -> None:
    assert _table(root, "bench scenario rows where=backend:sqlite")[2:] == ["| delete | 12 |", "| purge | 0 |"]
    assert _table(root, "bench scenario rows where=backend:sqlite,done:false")[2:] == ["| purge | 0 |"]
    assert _table(root, "bench scenario count where=scenario:purge|delete,backend:postgres")[2:] == [
        "| delete | 1 |",
        "| purge | 1 |",
    ]
    grouped = _table(root, "bench backend count rows files done group=backend")
    assert grouped[2:] == ["| sqlite | 2 | 12 | 300 | 1 |", "| postgres | 2 | 13 | – | 1 |"]
    by_scenario = _table(root, "bench scenario backend group=scenario")
    assert by_scenario[2:] == ["| delete | sqlite, postgres |", "| purge | sqlite, postgres |"]
    ratio = _table(root, "bench entries:, scan_s/erase_s:,.0f:scan/erase list=results")
    assert ratio == ["| entries | scan/erase |", "|---|---|", "| 10,000 | 222 |", "| 1,000,000 | 360 |"]


def test_the_caption_names_the_record_its_code_and_load(root: Path) -> None:
    out = render("<!-- result-rows: bench entries list=results -->\n<!-- /result -->", root)
    assert "From the record `results/bench.json` (2026-12-02, code d33e728, 2 CPUs, load average 6.8 to 8.2)." in out


def test_one_cell_inline(root: Path) -> None:
    text = "an erase takes <!-- result-rows: bench erase_s:.2f list=results where=entries:1000000 as=value -->"
    assert render(text + "?<!-- /result --> s", root) == text + "2.50<!-- /result --> s"
    grouped = "<!-- result-rows: bench count group=backend where=backend:sqlite as=value -->"
    assert render(grouped + "<!-- /result -->", root) == grouped + "2<!-- /result -->"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("bench", "give NAME COLUMN"),
        ("bench scenario hit.after", "no row has 'hit.after'"),
        ("bench scenario where=backnd:sqlite", "no row has 'backnd'"),
        ("bench scenario where=backend", "FIELD:VALUE"),
        ("bench scenario group=stage", "no row has 'stage'"),
        ("bench scenario:.2f", "does not apply"),
        ("bench a/b/c", "FIELD[:SPEC[:HEADER]]"),
        ("bench scenario list=machine", "no list of rows 'machine'"),
        ("bench scenario as=value", "one column and one line, not 1 and 4"),
        ("bench scenario as=list", "use as=value"),
        ("missing scenario", "no record named 'missing'"),
        ("../bench scenario", "letters, digits"),
    ],
)
def test_a_bad_mark_is_an_error_naming_the_line(root: Path, spec: str, message: str) -> None:
    with pytest.raises(InputError, match=r"page\.md:2: .*" + message.replace("[", r"\[").replace("]", r"\]")):
        render(f"text\n<!-- result-rows: {spec} -->\n<!-- /result -->", root, "page.md")


def test_a_hand_edited_cell_fails_the_check(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = render("# Page\n\n<!-- result-rows: bench scenario rows where=backend:sqlite -->\n<!-- /result -->\n", root)
    assert differences(page, root) == []
    edited = page.replace("| purge | 0 |", "| purge | 1 |")
    assert edited != page
    found = differences(edited, root, "page.md")
    assert len(found) == 1 and "page.md:3: bench scenario rows" in found[0]
    repo = root / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "results").mkdir()
    (repo / "results" / "bench.json").write_text(json.dumps(RECORD), encoding="utf-8")
    (repo / "docs" / "page.md").write_text(edited, encoding="utf-8")
    assert main(["--repo", str(repo), "--check"]) == 1
    assert "the document says" in capsys.readouterr().out
    assert main(["--repo", str(repo)]) == 0
    assert (repo / "docs" / "page.md").read_text(encoding="utf-8") == page
    assert main(["--repo", str(repo), "--check"]) == 0
