"""Verified citations with the real embedded model (Qwen2.5-Coder-0.5B GGUF via llama.cpp, MiniLM ONNX): a memory of
one short passage, an answer of three sentences citing it, checked through the memory's cached and metered LLM. The
entailment schema compiles to a llama.cpp grammar and gives a valid verdict for every sentence (no ``query/verify``
failure), the sentence the passage states is kept, the one it contradicts is flagged, the short one is checked by
overlap without a call, and asking again is answered by the cache; by default (overlap first) the contradicted
sentence, whose words the passage lacks, is flagged without a call."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemrag import Memory, load_config
from gemrag.answers.answer import Answer
from gemrag.answers.verification import verify_answer
from realparts import require_small_model

pytestmark = pytest.mark.integration

PASSAGE = (
    "Multiple evanescent white dot syndrome (MEWDS) was first described in 1984 as a rare, sudden onset of unilateral "
    "chorioretinopathy, with the predominant sign being multifocal yellow-white spots throughout the retina."
)
QUESTION = "What is multiple evanescent white dot syndrome?"
ANSWER = (
    "MEWDS is a rare, sudden-onset unilateral chorioretinopathy first described in 1984 [1]. "
    "MEWDS is a common bacterial infection of the inner ear that was first described in 2015 [1]. "
    "Yellow-white retinal spots [1]."
)


def test_the_small_model_flags_the_contradicted_sentence(tmp_path: Path) -> None:
    require_small_model()
    config = load_config(None, {"strategy": "dense", "llm": {"model": "qwen2.5-coder-0.5b", "n_ctx": 2048}})
    with Memory.open(tmp_path / "mem", config) as mem:
        mem.add_text(PASSAGE, "MEWDS")
        mem.index()
        hits = mem.retrieve(QUESTION)
        assert len(hits) == 1
        answer = Answer(ANSWER, None, hits, 0.0, 0.0, cited=[1])
        checked = verify_answer(mem.ctx.get_llm, mem.ctx.meter, mem.store, QUESTION, answer, overlap_first=False)
        print([(c.sentence, c.supported, c.method) for c in checked.verification])  # pytest -s
        assert [c.method for c in checked.verification] == ["entailment", "entailment", "overlap"]
        assert [c.supported for c in checked.verification] == [True, False, True]
        assert not [f for f in mem.store.failures() if f["phase"] == "query/verify"]
        assert checked.verification_usage.calls == 2 and checked.verification_usage.completion_tokens > 0
        again = verify_answer(mem.ctx.get_llm, mem.ctx.meter, mem.store, QUESTION, answer, overlap_first=False)
        assert again.verification == checked.verification and again.verification_usage.calls == 0
        # the default checks by overlap first: the contradicted sentence's words are not in the passage, no call
        default = verify_answer(mem.ctx.get_llm, mem.ctx.meter, mem.store, QUESTION, answer)
        assert [(c.method, c.supported) for c in default.verification] == [
            ("entailment", True),
            ("overlap", False),
            ("overlap", True),
        ]
        assert (default.verification_usage.calls, default.verification_usage.cached) == (0, 1)  # one request, cached
