"""File-level robustness of every loader: missing, directory, not UTF-8, empty, not JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemrag.errors import InputError
from gemrag.eval.loading import load_dataset

KINDS = ["quality", "qasper", "musique", "hotpotqa", "2wiki", "hipporag", "covid_qa", "locomo"]


@pytest.mark.parametrize("kind", KINDS)
def test_missing_file(tmp_path: Path, kind: str) -> None:
    with pytest.raises(InputError, match=r"nope\.json: dataset file not found"):
        load_dataset(kind, tmp_path / "nope.json")


@pytest.mark.parametrize("kind", KINDS)
def test_directory(tmp_path: Path, kind: str) -> None:
    with pytest.raises(InputError, match="is a directory"):
        load_dataset(kind, tmp_path)


@pytest.mark.parametrize("kind", KINDS)
def test_not_utf8_and_empty(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "data.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InputError, match="not UTF-8"):
        load_dataset(kind, path)
    path.write_text("  \n")
    with pytest.raises(InputError, match="file is empty"):
        load_dataset(kind, path)


@pytest.mark.parametrize("kind", KINDS)
def test_not_json_reports_line(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "data.json"
    path.write_text('[\n  {"a": 1},\n  {"b": oops}\n]\n')
    with pytest.raises(InputError, match=r"data\.json, line 3: not valid JSON"):
        load_dataset(kind, path)


@pytest.mark.parametrize("kind", ["quality", "qasper", "musique"])
def test_bad_json_line_reports_line(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"a": 1}\n{"b": 2}\n\n{"c": \n')
    with pytest.raises(InputError, match=r"data\.jsonl, line 4: not valid JSON"):
        load_dataset(kind, path)


@pytest.mark.parametrize("kind", KINDS)
def test_wrong_shape(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "data.json"
    path.write_text("42")
    with pytest.raises(InputError, match=r"data\.json"):
        load_dataset(kind, path)
