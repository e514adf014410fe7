"""A chat exchange that rephrases a removed note leaves with it, with the real embedded models (MiniLM ONNX +
Qwen2.5-Coder-0.5B GGUF via llama.cpp), on both stores: the character recalls the note and answers about the vault
in its own words; deleting the note (no purge) withdraws the exchange from retrieval, from the live session's window
and from a new session's history; a later ``erase`` leaves no byte (SQLite files) or row (PostgreSQL) holding the
code. The stand-in version, with a scripted paraphrase, is ``tests/test_forgetting_erase.py``.

Cheap for CI: the ``dense`` strategy (no LLM call to index), one recalled memory, a reply of at most 24 tokens.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from backends import MemoryAt
from fakes import KEEPER, VAULT
from gemrag import Memory, load_config
from gemrag.chat import ChatSession
from realparts import require_small_model
from test_forgetting_erase import NOTE, _holds, byte_leaks

pytestmark = pytest.mark.integration

TODAY = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def test_a_real_chat_reply_leaves_with_the_note_it_recalled(memory_at: MemoryAt) -> None:
    require_small_model()
    cfg = load_config(None, {"llm": {"model": "qwen2.5-coder-0.5b", "n_ctx": 2048}, "strategy": "dense"})
    start = time.perf_counter()
    location = memory_at("m")
    with Memory.open(location, cfg) as mem:
        note_id, _ = mem.add_text(NOTE, "household notes", id="notes")
        mem.add_text(KEEPER, "keeper")
        mem.index("dense")
        chat = ChatSession(
            mem, "Ava", strategy="dense", history=3, budget=1, max_tokens=24, temperature=0.0, clock=lambda: TODAY
        )
        reply = chat.turn("What is the new vault combination?")
        exchange = chat.exchanges[-1]
        rested = mem.store.document_inputs([exchange.doc_id])[exchange.doc_id]
        print(f"\nreply {reply!r} ({time.perf_counter() - start:.0f} s); rests on chunks {rested}")
        assert set(rested) & set(mem.store.document_chunk_ids(note_id))  # it recalled the note
        chat.index()

        report = mem.delete(note_id)

        assert [d["id"] for d in report.dependents] == [exchange.doc_id]
        for question in ("vault combination", reply):
            assert not _holds([h.text for h in mem.retrieve(question, 4, "dense")], VAULT)
        assert not _holds([e.text for e in chat.window()], VAULT)
        assert ChatSession(mem, "Ava", strategy="dense").exchanges == []

        erased = mem.erase()

        assert erased.erasure.complete, erased.erasure.detail
        assert byte_leaks(mem, VAULT) == []
        sentence = " ".join(reply.split()[:6]).casefold()  # the reply itself, whatever it said
        assert len(sentence) < 12 or byte_leaks(mem, [sentence]) == []
        assert mem.retrieve("lighthouse railings", 1, "dense")[0].text == KEEPER
