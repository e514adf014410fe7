"""The 66-chunk story with one paragraph edited: re-indexing costs the LLM calls of that paragraph's chunks only,
plus GEM's summaries whose members changed (and their utility questions), as the usage the memory records (what
``gemrag info``'s usage table shows) counts them.

The demo's story (examples/quality/, 66 chunks of T = 100 MiniLM tokens, the real tokenizer) with the demo's
parameters (m = 5, k = 2, e = 5), the scripted test LLM and the hashing embedder. Greedy chunking alone would move
the chunk boundaries after a paragraph that grew (up to 29 of 66 chunks in a sample of 35 edits); the update keeps
every chunk whose text survives (``gemrag.ingest.rechunk_text``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import STORY
from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import load_config
from gemrag.ingest import chunk_text, minilm_tokenizer, normalize_chunk
from gemrag.strategies.gem.settings import gem_config

QUESTIONS_PROMPT = "questions that this passage answers"
SUMMARY_PROMPT = "These passages share a theme"
ADDED = " He thought about it for a long while, and then he decided to say nothing at all to the guard."


def edit_one_paragraph(text: str, index: int) -> tuple[str, list[str]]:
    """``text`` with one more sentence at the end of its ``index``-th paragraph, and the texts of the chunks (of the
    original text, T = 100) that the paragraph overlaps: "that paragraph's chunks"."""
    paragraphs = text.split("\n\n")
    start = sum(len(p) + 2 for p in paragraphs[:index])
    end = start + len(paragraphs[index])
    overlapping = [
        normalize_chunk(c.text) for c in chunk_text(text, minilm_tokenizer(), 100) if c.start < end and c.end > start
    ]
    paragraphs[index] = paragraphs[index].rstrip() + ADDED
    return "\n\n".join(paragraphs), overlapping


@pytest.mark.parametrize("paragraph", [40, 80, 120])
def test_an_edited_paragraph_costs_its_chunks_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, paragraph: int
) -> None:
    monkeypatch.chdir(tmp_path)
    config = load_config(
        None,
        {"strategy": "gem", "memory": {"chunk_tokens": 100}, "gem": {"questions": 5, "eigen": 2, "eigen_top": 5}},
    )
    story = tmp_path / "story.txt"
    story.write_text(STORY.read_text(encoding="utf-8"), encoding="utf-8")
    llm = ScriptedLLM()
    with Memory.open(tmp_path / "m", config, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add([story])
        first = mem.index()
        assert first.chunks == 66 and first.llm_calls == llm.calls
        old_chunks = {n.text for n in mem.store.nodes("chunk")}
        old_summaries = {n.text for n in mem.store.nodes("summary", strategy="gem")}

        edited, its_chunks = edit_one_paragraph(story.read_text(encoding="utf-8"), paragraph)
        story.write_text(edited, encoding="utf-8")
        report = mem.add([story])
        assert report.describe() == "0 added, 1 updated, 0 unchanged"
        mark, prompts = mem.store.usage_mark(), len(llm.prompts)
        second = mem.index()
        used = mem.store.usage_after(mark)

        chunks = sorted(mem.store.nodes("chunk"), key=lambda n: n.ord)
        new_chunks = {n.text for n in chunks} - old_chunks
        gone = [c for c in its_chunks if c not in {n.text for n in chunks}]
        assert gone and old_chunks - {n.text for n in chunks} == set(gone)  # some of the paragraph's chunks, no other
        renewed = " ".join(n.text for n in chunks if n.text in new_chunks)
        assert renewed.replace(" " + ADDED.strip(), "") == " ".join(gone)  # ... back with the sentence added
        assert report.chunks_new == len(new_chunks) <= len(gone) + 1
        assert report.chunks_kept == 66 - report.chunks_deleted == 66 - len(gone)
        asked = llm.prompts[prompts:]
        # a chunk's questions are asked of its indexed text: its document's title (the file's name), then the chunk
        questions = [p.split('"""')[1].strip().removeprefix("story\n") for p in asked if QUESTIONS_PROMPT in p]
        summaries = [p for p in asked if SUMMARY_PROMPT in p]
        new_summaries = {n.text for n in mem.store.nodes("summary", strategy="gem")} - old_summaries
        assert sorted(questions) == sorted([*new_chunks, *new_summaries])  # each new text asked once, nothing else
        assert len(summaries) == len(new_summaries) <= gem_config(config).eigen
        assert second.llm_calls == len(asked) == len(new_chunks) + 2 * len(new_summaries)
        assert used["llm_calls"] - used["llm_cached"] == second.llm_calls  # the usage rows `gemrag info` sums
        assert second.llm_calls < first.llm_calls / 10
