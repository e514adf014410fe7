"""Loading text documents with clear errors for every kind of bad input.

A file is refused (``InputError``) when it is missing, is a directory with no readable files, has an
unsupported suffix, contains NUL bytes (binary), is not valid UTF-8, or holds only whitespace. Callers check
every input before changing the memory, so a bad file loses nothing.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from gemrag.errors import InputError

SUPPORTED_SUFFIXES = (".txt", ".md", ".markdown", ".text")
_SNIFF_BYTES = 8192


@dataclass(frozen=True)
class Document:
    """A loaded document: ``source`` (path or ``<stdin>``), ``title`` (file stem) and its ``text``."""

    source: str
    title: str
    text: str


def decode_text(data: bytes, source: str) -> str:
    """Decode UTF-8 bytes (a BOM is dropped), normalizing newlines to ``\\n``.

    Raises:
        InputError: NUL bytes (binary data), invalid UTF-8, or no non-whitespace text.
    """
    if b"\x00" in data[:_SNIFF_BYTES] or b"\x00" in data:
        raise InputError(f"{source}: looks like a binary file (it contains NUL bytes); gemrag reads text files")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{source}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "convert it first, e.g. `iconv -f latin1 -t utf-8 FILE > FILE.utf8`"
        ) from exc
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise InputError(f"{source}: the file is empty (no text to index)")
    return text


def read_document(path: str | Path) -> Document:
    """Read one .txt/.md file.

    Raises:
        InputError: missing, not a regular file, unsupported suffix, binary, non-UTF-8 or empty.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    if not p.is_file():
        raise InputError(f"{p}: not a regular file")
    if p.suffix.lower() not in SUPPORTED_SUFFIXES:
        raise InputError(f"{p}: unsupported file type {p.suffix or '(none)'!r}; gemrag reads .txt and .md files")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"{p}: cannot be read ({exc.strerror})") from exc
    return Document(str(p), p.stem, decode_text(data, str(p)))


def read_stdin(stream: BinaryIO | None = None, title: str = "stdin") -> Document:
    """Read a document from standard input (bytes, UTF-8).

    Raises:
        InputError: binary, non-UTF-8 or empty input.
    """
    data = (stream or sys.stdin.buffer).read()
    return Document("<stdin>", title, decode_text(data, "<stdin>"))


def expand_paths(paths: list[str], *, allow_empty: bool = False) -> list[str]:
    """Expand directories into the supported files below them (sorted); files and ``-`` pass through.

    Args:
        allow_empty: accept a directory holding no supported file (``index --sync``: its documents are gone).

    Raises:
        InputError: a directory holds no supported file (unless ``allow_empty``).
    """
    out: list[str] = []
    for raw in paths:
        p = Path(raw)
        if raw != "-" and p.is_dir():
            found = sorted(str(f) for f in p.rglob("*") if f.is_file() and f.suffix.lower() in SUPPORTED_SUFFIXES)
            if not found and not allow_empty:
                raise InputError(f"{p}: directory holds no .txt or .md files")
            out.extend(found)
        else:
            out.append(raw)
    return out
