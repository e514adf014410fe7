"""``ChatSession`` (gemrag.chat) with test doubles: exchanges stored with speakers and turn numbers, a retrieval
every turn, the persona in the prompt, the memory indexed incrementally by the batching policy, resuming, Ctrl-C."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from fakes import HashEmbedder, ScriptedLLM
from gemrag.chat import ChatSession, exchange_source
from gemrag.config import Config
from gemrag.errors import ConfigError, ReadOnlyMemoryError
from gemrag.memory import Memory
from gemrag.models.base import Completion, Message
from gemrag.strategies.platform.conversation import parse_turns

CLOCK = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)
FILLER = [f"Tell me about the weather on day {i} at the harbour." for i in range(30)]


@pytest.fixture
def config(config: Config) -> Config:
    """The shared test config with the default chunk size (T = 100): one chunk per short exchange."""
    return config.model_copy(update={"memory": config.memory.model_copy(update={"chunk_tokens": 100})})


class RecordingLLM(ScriptedLLM):
    """A :class:`ScriptedLLM` that keeps every message list it was given."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.messages: list[list[Message]] = []

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        self.messages.append(list(messages))
        return super().complete(messages, **kwargs)


def _open(path: Path, config: Config, llm: ScriptedLLM | None = None, emb: HashEmbedder | None = None) -> Memory:
    return Memory.open(path, config, llm=llm or RecordingLLM(), embedder=emb or HashEmbedder())


def _chat_calls(llm: RecordingLLM) -> list[list[Message]]:
    return [m for m in llm.messages if "Stay in character" in m[0]["content"]]


def test_exchanges_are_stored_with_speakers_and_turn_numbers(tmp_path: Path, config: Config) -> None:
    with _open(tmp_path / "m", config) as mem:
        chat = ChatSession(mem, "Ava", user="Tom", strategy="dense", clock=lambda: CLOCK)
        first = chat.turn("My sister is called Marguerite.")
        chat.turn("I live by the sea.")
        docs = mem.store.documents()
        assert [d["source"] for d in docs] == [exchange_source("Ava", 1), exchange_source("Ava", 2)]
        assert [d["title"] for d in docs] == ["chat with Ava, turn 1", "chat with Ava, turn 2"]
        text = mem.store.document_text(int(docs[0]["id"]))
        assert text.splitlines() == [
            "[turn 1, 2026-01-02] Tom: My sister is called Marguerite.",
            f"[turn 1, 2026-01-02] Ava: {first}",
        ]
        turns = parse_turns(text)  # the dialogue form REMem's conversation parser reads
        assert [(t.speaker, t.iso_date) for t in turns] == [("Tom", "2026-01-02"), ("Ava", "2026-01-02")]
        assert chat.next_turn == 3


def test_retrieval_every_turn_recalls_an_early_fact(tmp_path: Path, config: Config) -> None:
    llm = RecordingLLM()
    with _open(tmp_path / "m", config, llm) as mem:
        queries: list[str] = []
        retrieve = mem.retrieve

        def counted(question: str, *args: Any, **kwargs: Any) -> Any:
            queries.append(question)
            return retrieve(question, *args, **kwargs)

        mem.retrieve = counted  # type: ignore[method-assign]
        chat = ChatSession(mem, "Ava", strategy="dense", history=2, budget=2)
        chat.turn("My sister is called Marguerite.")
        for i, line in enumerate(FILLER):
            chat.turn(line)
            assert queries[-1] == line  # one retrieval per turn, on the user's message
            assert chat.last_hits or i < 2, "once more exchanges exist than are shown verbatim, some are recalled"
        assert len(queries) == len(FILLER)  # the first turn had an empty memory: nothing to retrieve from
        reply = chat.turn("What is my sister called?")
        assert "Marguerite" in reply  # the scripted character repeats its first memory
        assert "turn 1," in chat.last_hits[0].text and len(chat.last_hits) <= 2
        system, *turns = _chat_calls(llm)[-1]
        memories = system["content"].split("Your memories:\n", 1)[1]
        assert memories.startswith("[1] [turn 1, ") and "Marguerite" in memories  # recalled into the prompt...
        assert not any("Marguerite" in m["content"] for m in turns)  # ...not in the verbatim history
        assert turns[-1] == {"role": "user", "content": "What is my sister called?"}  # the message alone, last


def test_persona_and_history_in_the_prompt(tmp_path: Path, config: Config) -> None:
    llm = RecordingLLM()
    with _open(tmp_path / "m", config, llm) as mem:
        chat = ChatSession(mem, "Captain Ahab", description="You hunt a white whale.", strategy="dense", history=1)
        chat.turn("Hello there.")
        chat.turn("Where is your ship?")
        chat.turn("And your crew?")
        system, *rest = _chat_calls(llm)[-1]
        assert system["role"] == "system"
        assert system["content"].startswith("You are Captain Ahab, talking with User.")
        assert "You hunt a white whale." in system["content"]
        assert "Your memories:\n[1] [turn 1, " in system["content"]  # the recalled exchange
        assert [m["role"] for m in rest] == ["user", "assistant", "user"]  # history = 1 exchange, then the message
        assert rest[0]["content"] == "Where is your ship?"
        assert rest[-1]["content"] == "And your crew?"
        recalled = " ".join(h.text for h in chat.last_hits)
        assert "Hello there." in recalled and "Where is your ship?" not in recalled  # shown verbatim: not recalled


def test_memory_is_indexed_incrementally(tmp_path: Path, config: Config) -> None:
    emb = HashEmbedder()
    with _open(tmp_path / "m", config, emb=emb) as mem:
        chat = ChatSession(mem, "Ava", strategy="dense")
        for i in range(4):
            embedded = emb.texts_embedded
            chat.turn(f"Fact number {i}: the lamp is {i} metres tall.")
            assert len(mem.store.nodes("chunk")) == i + 1  # the exchange is chunked and indexed at once
            assert mem.store.build_state("dense").state == "built"
            assert emb.texts_embedded - embedded <= 2  # the message and the new exchange only; the rest is cached
            assert chat.unindexed == 0


def test_index_every_batches_and_pending_exchanges_stay_visible(tmp_path: Path, config: Config) -> None:
    llm = RecordingLLM()
    with _open(tmp_path / "m", config, llm) as mem:
        chat = ChatSession(mem, "Ava", strategy="dense", index_every=3, history=0)
        chat.turn("The key is under the blue stone.")
        chat.turn("Nice weather.")
        assert chat.unindexed == 2 and mem.store.nodes("chunk") == []  # stored, not indexed yet
        history = _chat_calls(llm)[-1][1:-1]  # history = 0, but the waiting exchange is shown verbatim
        assert history[0]["content"] == "The key is under the blue stone."
        chat.turn("Where is the key?")
        assert chat.unindexed == 0 and len(mem.store.nodes("chunk")) == 3
        chat.turn("Thanks.")
        assert chat.close() is not None and len(mem.store.nodes("chunk")) == 4  # close indexes what waits


def test_a_new_session_continues_the_conversation(tmp_path: Path, config: Config) -> None:
    with _open(tmp_path / "m", config) as mem:
        chat = ChatSession(mem, "Ava", strategy="dense", index_every=5)
        chat.turn("My boat is named Petrel.")
        chat.turn("It is red.")
    llm = RecordingLLM()
    with _open(tmp_path / "m", config, llm) as mem:
        chat = ChatSession(mem, "Ava", strategy="dense", index_every=5, history=1)
        assert chat.next_turn == 3 and chat.unindexed == 2  # the earlier session ended without indexing
        assert [e.user for e in chat.exchanges] == ["My boat is named Petrel.", "It is red."]
        assert chat.exchanges[0].reply and chat.exchanges[0].reply.startswith("I ")
        chat.turn("What colour is my boat?")
        assert [m["content"] for m in _chat_calls(llm)[-1][1:-1:2]] == ["My boat is named Petrel.", "It is red."]
        other = ChatSession(mem, "Bob", strategy="dense")  # another persona has its own turn numbers
        assert other.next_turn == 1


def test_ctrl_c_loses_nothing_already_said(tmp_path: Path, config: Config) -> None:
    llm = ScriptedLLM(interrupt_after=2)  # two replies, then Ctrl-C during the third
    with _open(tmp_path / "m", config, llm) as mem:
        chat = ChatSession(mem, "Ava", strategy="dense", index_every=10)
        chat.turn("One.")
        chat.turn("Two.")
        with pytest.raises(KeyboardInterrupt):
            chat.turn("Three, interrupted.")
        docs = mem.store.documents()
        assert [d["source"] for d in docs] == [exchange_source("Ava", t) for t in (1, 2, 3)]
        interrupted = parse_turns(mem.store.document_text(int(docs[2]["id"])))
        assert [(t.speaker, t.text) for t in interrupted] == [("User", "Three, interrupted.")]
    with _open(tmp_path / "m", config) as mem:
        assert ChatSession(mem, "Ava", strategy="dense").next_turn == 4


def test_default_strategy_is_hlgraph(tmp_path: Path, config: Config) -> None:
    with _open(tmp_path / "m", config) as mem:
        chat = ChatSession(mem, "Ava", history=0)
        assert chat.strategy == "hlgraph"
        chat.turn("Selena pushed John into the lake because he laughed.")
        chat.turn("Why did Selena push John?")
        assert mem.store.build_state("hlgraph").state == "built"
        assert chat.last_hits and all("ideas" in h.meta for h in chat.last_hits)  # hlgraph's main-idea split ran
        assert "Selena pushed John" in chat.last_hits[0].text


def test_bad_arguments_are_clear_errors(tmp_path: Path, config: Config) -> None:
    with _open(tmp_path / "m", config) as mem:
        with pytest.raises(ConfigError, match="unknown strategy 'nope'"):
            ChatSession(mem, "Ava", strategy="nope")
        with pytest.raises(ValueError, match="persona name"):
            ChatSession(mem, "Ava: the keeper")
        with pytest.raises(ValueError, match="index_every"):
            ChatSession(mem, "Ava", index_every=0)
        with pytest.raises(ValueError, match="empty"):
            ChatSession(mem, "Ava", strategy="dense").turn("   ")
        assert mem.store.documents() == []
    with (
        Memory.open(tmp_path / "m", config, llm=ScriptedLLM(), embedder=HashEmbedder(), readonly=True) as mem,
        pytest.raises(ReadOnlyMemoryError),
    ):
        ChatSession(mem, "Ava", strategy="dense")


def test_the_characters_documents_are_indexed_before_the_first_turn(tmp_path: Path, config: Config) -> None:
    with _open(tmp_path / "m", config) as mem:
        mem.add_text("Ava was born on the island of Skerry in a storm.", "backstory")  # added, never indexed
        chat = ChatSession(mem, "Ava", strategy="dense")
        assert mem.store.build_state("dense").state == "built" and chat.unindexed == 0
        reply = chat.turn("Where were you born?")
        assert "Skerry" in reply and chat.next_turn == 2


def test_resuming_keeps_the_batch_of_waiting_exchanges(tmp_path: Path, config: Config) -> None:
    with _open(tmp_path / "m", config) as mem:
        chat = ChatSession(mem, "Ava", strategy="dense", index_every=2)
        for line in ("One.", "Two.", "Three."):
            chat.turn(line)
        assert chat.unindexed == 1  # turns 1-2 indexed, turn 3 waits
    with _open(tmp_path / "m", config) as mem:
        chat = ChatSession(mem, "Ava", strategy="dense", index_every=2, history=0)
        assert chat.unindexed == 1 and [e.turn for e in chat.window()] == [3]  # not indexed on open: shown verbatim
        chat.turn("Four.")
        assert chat.unindexed == 0 and mem.store.build_state("dense").state == "built"
