"""Reading dataset files with clear errors.

Every problem a user can cause with a dataset file (missing path, a directory, not UTF-8, not JSON, a
field of the wrong type) becomes a :class:`gemrag.errors.InputError` whose message names the file and,
for JSON Lines files, the 1-based line number.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemrag.errors import InputError

__all__ = [
    "Record",
    "fail",
    "opt_str",
    "read_json",
    "read_json_lines",
    "read_records",
    "read_text",
    "req_dict",
    "req_list",
    "req_str",
    "str_list",
]


@dataclass(frozen=True)
class Record:
    """One top-level JSON value of a dataset file and where it came from.

    Attributes:
        value: the decoded JSON value.
        where: a human-readable location for error messages, e.g. ``"data.jsonl, line 3"`` or
            ``"data.json, record 2"`` (1-based).
    """

    value: Any
    where: str


def fail(where: str, problem: str) -> InputError:
    """Build the :class:`InputError` for ``problem`` at location ``where`` (the caller raises it)."""
    return InputError(f"{where}: {problem}")


def read_text(path: Path) -> str:
    """Read a UTF-8 text file.

    Raises:
        InputError: the path does not exist, is a directory, cannot be read, is not UTF-8, or is empty.
    """
    if not path.exists():
        raise InputError(f"{path}: dataset file not found")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected a dataset file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte offset {exc.start})") from exc
    if not text.strip():
        raise InputError(f"{path}: file is empty")
    return text


def _json_error(path: Path, exc: json.JSONDecodeError, line_offset: int = 0) -> InputError:
    line = exc.lineno + line_offset
    return InputError(f"{path}, line {line}: not valid JSON ({exc.msg}, column {exc.colno})")


def read_json(path: Path) -> Any:
    """Read a file holding exactly one JSON document.

    Raises:
        InputError: unreadable file (see :func:`read_text`) or invalid JSON (message has the line).
    """
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _json_error(path, exc) from exc


def _iter_json_lines(path: Path, text: str) -> Iterator[Record]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _json_error(path, exc, line_offset=number - 1) from exc
        yield Record(value, f"{path.name}, line {number}")


def read_json_lines(path: Path) -> list[Record]:
    """Read a JSON Lines file: one value per non-blank line, each :class:`Record` naming its 1-based line (also
    for a file of one line, which :func:`read_records` would read as one JSON document).

    Raises:
        InputError: unreadable file or a line that is not JSON, naming the file and line.
    """
    return list(_iter_json_lines(path, read_text(path)))


def read_records(path: Path, *, unwrap_list: bool = True) -> tuple[list[Record], bool]:
    """Read a JSON or JSON Lines file into top-level records.

    The whole file is first parsed as one JSON document; if that fails with "Extra data" the file is
    read as JSON Lines (one value per non-blank line). A JSON document that is a list is split into its
    items when ``unwrap_list`` is true.

    Returns:
        ``(records, is_json_lines)``.

    Raises:
        InputError: unreadable file or invalid JSON, naming the file and line.
    """
    text = read_text(path)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise _json_error(path, exc) from exc
        return list(_iter_json_lines(path, text)), True
    if unwrap_list and isinstance(value, list):
        return [Record(item, f"{path.name}, record {i}") for i, item in enumerate(value, start=1)], False
    return [Record(value, path.name)], False


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def req_dict(value: Any, where: str, what: str = "record") -> dict[str, Any]:
    """Return ``value`` if it is a JSON object, else raise :class:`InputError`."""
    if not isinstance(value, dict):
        raise fail(where, f"{what} must be a JSON object, got {_type_name(value)}")
    return value


def req_list(obj: dict[str, Any], key: str, where: str) -> list[Any]:
    """Return the list field ``obj[key]``; raise :class:`InputError` if missing or not a list."""
    if key not in obj:
        raise fail(where, f"missing field {key!r}")
    value = obj[key]
    if not isinstance(value, list):
        raise fail(where, f"field {key!r} must be a list, got {_type_name(value)}")
    return value


def req_str(obj: dict[str, Any], key: str, where: str, *, allow_numbers: bool = False) -> str:
    """Return the string field ``obj[key]`` (numbers converted if ``allow_numbers``).

    Raises:
        InputError: the field is missing or has another type.
    """
    if key not in obj:
        raise fail(where, f"missing field {key!r}")
    value = obj[key]
    if isinstance(value, str):
        return value
    if allow_numbers and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise fail(where, f"field {key!r} must be a string, got {_type_name(value)}")


def opt_str(obj: dict[str, Any], key: str, where: str, default: str | None = None) -> str | None:
    """Return the optional string (or number, converted) field ``obj[key]``; ``default`` when absent/null."""
    value = obj.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise fail(where, f"field {key!r} must be a string, got {_type_name(value)}")
    return str(value)


def str_list(value: Any, where: str, what: str) -> list[str]:
    """Check that ``value`` is a list of strings and return it.

    Raises:
        InputError: ``value`` is not a list or holds a non-string item.
    """
    if not isinstance(value, list):
        raise fail(where, f"{what} must be a list of strings, got {_type_name(value)}")
    for item in value:
        if not isinstance(item, str):
            raise fail(where, f"{what} must be a list of strings, found {_type_name(item)}")
    return value
