"""Loading (bad inputs give clear errors) and token-based chunking at sentence boundaries."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from gemrag.errors import InputError
from gemrag.ingest import (
    chunk_text,
    expand_paths,
    minilm_tokenizer,
    read_document,
    read_stdin,
    split_sentences,
)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_document(tmp_path / "nope.txt")


def test_empty_and_whitespace_file(tmp_path: Path) -> None:
    for content in (b"", b"  \n\t \n"):
        p = tmp_path / "empty.txt"
        p.write_bytes(content)
        with pytest.raises(InputError, match="empty"):
            read_document(p)


def test_binary_file(tmp_path: Path) -> None:
    p = tmp_path / "image.txt"
    p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(InputError, match="binary"):
        read_document(p)


def test_non_utf8_file_names_the_offset(tmp_path: Path) -> None:
    p = tmp_path / "latin1.txt"
    p.write_bytes("café au lait".encode("latin-1"))
    with pytest.raises(InputError, match=r"not valid UTF-8 \(byte 0xe9 at offset 3\)"):
        read_document(p)


def test_unsupported_suffix_and_directory(tmp_path: Path) -> None:
    p = tmp_path / "doc.pdf"
    p.write_bytes(b"%PDF-1.4")
    with pytest.raises(InputError, match="unsupported file type"):
        read_document(p)
    with pytest.raises(InputError, match="not a regular file"):
        read_document(tmp_path)
    with pytest.raises(InputError, match="holds no .txt"):
        expand_paths([str(tmp_path)])


def test_utf8_bom_and_crlf(tmp_path: Path) -> None:
    p = tmp_path / "bom.md"
    p.write_bytes("\ufeffHello.\r\nWorld.".encode())
    doc = read_document(p)
    assert doc.text == "Hello.\nWorld."
    assert doc.title == "bom"


def test_directory_expansion_sorted(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_text("b")
    (tmp_path / "a.md").write_text("a")
    (tmp_path / "skip.bin").write_bytes(b"x")
    assert expand_paths([str(tmp_path), "-"]) == [str(tmp_path / "a.md"), str(tmp_path / "b.txt"), "-"]


def test_stdin() -> None:
    assert read_stdin(io.BytesIO(b"some text")).text == "some text"
    with pytest.raises(InputError, match="empty"):
        read_stdin(io.BytesIO(b""))


def test_split_sentences_spans() -> None:
    text = 'He left. "Why?" she asked!  Then\n\nnothing'
    spans = split_sentences(text)
    assert [text[s:e] for s, e in spans] == ["He left.", '"Why?"', "she asked!", "Then", "nothing"]


def test_chunks_respect_budget_and_sentence_boundaries(story_text: str) -> None:
    tok = minilm_tokenizer()
    chunks = chunk_text(story_text, tok, 100)
    assert len(chunks) > 20
    for c in chunks:
        n = len(tok.encode(c.text, add_special_tokens=False).ids)
        assert n == c.n_tokens <= 100
        assert story_text[c.start : c.end] == c.text
    # chunks are in order and do not overlap
    assert all(a.end <= b.start for a, b in zip(chunks, chunks[1:], strict=False))
    # most chunks end at a sentence end
    ends = sum(c.text.rstrip("\"'”’)] ").endswith((".", "!", "?")) for c in chunks)
    assert ends >= 0.8 * len(chunks)
    # and chunks are well filled (greedy packing)
    assert sum(c.n_tokens for c in chunks) / len(chunks) > 70


def test_overlong_sentence_is_cut_at_token_boundaries() -> None:
    tok = minilm_tokenizer()
    text = " ".join(f"word{i}" for i in range(300)) + "."
    chunks = chunk_text(text, tok, 50)
    assert all(c.n_tokens <= 50 for c in chunks)
    assert "word0" in chunks[0].text and "word299" in chunks[-1].text
    assert sum(c.n_tokens for c in chunks) == len(tok.encode(text, add_special_tokens=False).ids)


def test_chunk_rejects_bad_size() -> None:
    with pytest.raises(ValueError):
        chunk_text("x.", minilm_tokenizer(), 0)
