"""A character chat over a memory (``gemrag chat``; HLGraphRAG, Zeng, section 1 and section 4 "Autonomous Testing
Driver": a character AI recalls what was said long ago through its RAG memory).

:class:`ChatSession` is the Python API; :mod:`gemrag.cli.chat` only reads lines and prints replies. Each turn:

1. **recall**: the user's message is the query of :meth:`Memory.retrieve <gemrag.memory.Memory.retrieve>` on the
   session's strategy (any registered one; ``hlgraph`` by default), at most ``budget`` hits; hits that are
   exchanges already shown verbatim (step 2) are dropped so they do not crowd out older memories;
2. **reply**: the LLM answers in character (:func:`gemrag.chat.prompts.chat_prompt`: persona, the last
   ``history`` exchanges verbatim, the recalled memories, the message);
3. **remember**: the exchange is stored at once as one document of the memory (:meth:`Memory.add_text
   <gemrag.memory.Memory.add_text>`), so an interrupted session loses nothing already said; its text is two
   dialogue lines ``[turn N, YYYY-MM-DD] <speaker>: <text>`` with the UTC date (the form
   :mod:`gemrag.strategies.platform.conversation` parses, so REMem's gist strategy reads chats as dialogue), its source
   ``chat:<persona>#<N>`` and its title ``chat with <persona>, turn N``; it records the chunks the reply rests on
   (those of the recalled memories, a derived memory's recorded sources, and those the exchanges shown verbatim
   rest on): removing any of them (a delete, an edit, ``--sync``) withdraws the exchange from the memory and from
   every session's window (DESIGN.md "Forgetting": what it rests on, not what it quotes);
4. **index** (the batching policy): after every ``index_every`` stored exchanges the memory is indexed
   incrementally for the strategy (:meth:`Memory.index <gemrag.memory.Memory.index>`: only the new exchanges
   are chunked and embedded, and an LLM strategy extracts only their chunks; the rest comes from the caches).
   ``index_every = 1`` (default) makes every exchange retrievable from the next turn on; with an LLM strategy
   such as ``hlgraph`` each index costs one extraction call per new chunk (about one per exchange), so a larger
   ``index_every`` batches them. Exchanges not yet indexed are never invisible: the prompt shows the last
   ``max(history, not yet indexed)`` exchanges verbatim.

A session continues an earlier one with the same persona in the same memory: turn numbers go on from the last
stored exchange, the last exchanges are shown again, and exchanges stored but not indexed (an interrupted session)
are indexed with the next batch.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from gemrag.chat.prompts import chat_prompt
from gemrag.errors import ConfigError, ReadOnlyMemoryError
from gemrag.memory import Memory
from gemrag.memory.indexing import IndexReport
from gemrag.memory.states import StaleStrategyWarning, needs_build
from gemrag.strategies import available
from gemrag.strategies.platform.conversation import parse_turns
from gemrag.types import Hit

__all__ = ["DEFAULT_STRATEGY", "ChatSession", "Exchange", "exchange_source", "stored_exchanges"]

DEFAULT_STRATEGY = "hlgraph"
"""The strategy of a chat when none is given (the issue's choice: HLGraphRAG's event memory)."""

_SOURCE = re.compile(r"^chat:(?P<persona>.*)#(?P<turn>\d+)$")
_NAME = re.compile(r"^[^:\n\[\]]{1,80}$")
"""A speaker name the dialogue-line form can hold (:data:`gemrag.strategies.platform.conversation.HEADER`)."""


def check_name(what: str, name: str) -> str:
    """``name`` (stripped) when it can name the persona or the user in stored exchanges.

    Raises:
        ValueError: it is empty, longer than 80 characters, or holds ':', '[', ']' or a line break.
    """
    if not _NAME.match(name.strip()):
        raise ValueError(f"the {what} name {name!r} must be 1-80 characters without ':', '[', ']' or line breaks")
    return name.strip()


def exchange_source(persona: str, turn: int) -> str:
    """The document source of exchange ``turn`` with ``persona``: ``chat:<persona>#<turn>``."""
    return f"chat:{persona}#{turn}"


@dataclass(frozen=True)
class Exchange:
    """One exchange of a chat: the user's message and the character's reply, stored as one document.

    Attributes:
        turn: the exchange's number in the chat with this persona (1-based; a user turn and its reply share it).
        user: what the user said. reply: the character's reply; None when the session was interrupted before it.
        text: the stored document: one dialogue line per speaker (module docstring, step 3).
        doc_id: the document's id in the memory (0 until stored).
    """

    turn: int
    user: str
    reply: str | None
    text: str
    doc_id: int = 0

    @classmethod
    def write(cls, turn: int, user: str, reply: str | None, at: datetime, names: tuple[str, str]) -> Exchange:
        """The exchange with its document text; ``names`` = (user's name, persona), ``at`` the time of the turn."""
        stamp = f"turn {turn}, {at.astimezone(timezone.utc):%Y-%m-%d}"
        lines = [f"[{stamp}] {names[0]}: {_flat(user)}"]
        if reply is not None:
            lines.append(f"[{stamp}] {names[1]}: {_flat(reply)}")
        return cls(turn, user, reply, "\n".join(lines) + "\n")

    @classmethod
    def read(cls, turn: int, doc_id: int, text: str, persona: str) -> Exchange:
        """An exchange from its stored document (the reply is the persona's line, if any)."""
        turns = parse_turns(text)
        user = " ".join(t.text for t in turns if t.speaker is not None and t.speaker != persona)
        replies = [t.text for t in turns if t.speaker == persona]
        return cls(turn, user, " ".join(replies) if replies else None, text, doc_id)


def stored_exchanges(store: Any, persona: str, last: int | None = None) -> list[Exchange]:
    """The exchanges with ``persona`` stored in a memory's ``store`` (documents of source ``chat:<persona>#<turn>``),
    oldest first; only the ``last`` ones when given (None: all)."""
    stored = sorted(
        (int(m.group("turn")), int(d["id"]))
        for d in store.documents()
        if (m := _SOURCE.match(str(d["source"]))) and m.group("persona") == persona
    )
    chosen = stored[len(stored) - last :] if last is not None else stored
    if last == 0:
        chosen = []
    return [Exchange.read(turn, doc_id, store.document_text(doc_id), persona) for turn, doc_id in chosen]


class ChatSession:
    """A turn-based chat with a character whose long-term memory is ``memory`` (module docstring).

    Example::

        with Memory.open("ava-memory", load_config()) as mem:
            chat = ChatSession(mem, "Ava", description="A lighthouse keeper.", strategy="dense")
            print(chat.turn("My sister is called Marguerite."))
            ...  # fifty turns later
            print(chat.turn("What is my sister called?"))  # recalled from the memory
            chat.close()  # indexes what is still pending

    Args:
        memory: an open, writable memory (it may be empty).
        persona: the character's name (1-80 characters, no ``:``, ``[``, ``]`` or line break).
        description: optional persona description (background, manner) for the prompt.
        user: the user's name in the stored exchanges (same rules as ``persona``).
        strategy: any registered strategy (default :data:`DEFAULT_STRATEGY`).
        budget: memories recalled per turn (default: the strategy's default budget, else ``memory.budget``).
        index_every: index after this many stored exchanges (>= 1; module docstring, step 4).
        history: recent exchanges shown verbatim in the prompt (>= 0).
        max_tokens: longest reply (tokens). temperature: sampling temperature of the reply.
        wait: seconds to wait for another process's build lock when storing or indexing.
        clock: the time of a turn (default: now, UTC); tests pass a fixed one.

    Raises:
        ConfigError: an unknown strategy, or its configuration section is invalid.
        ValueError: a bad persona or user name, ``index_every < 1``, ``history < 0``, ``budget < 1``.
        ReadOnlyMemoryError: the memory is open read-only (a chat must store its turns).
    """

    def __init__(
        self,
        memory: Memory,
        persona: str,
        *,
        description: str = "",
        user: str = "User",
        strategy: str | None = None,
        budget: int | None = None,
        index_every: int = 1,
        history: int = 3,
        max_tokens: int = 256,
        temperature: float = 0.7,
        wait: float = 30.0,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        for what, name in (("persona", persona), ("user", user)):
            check_name(what, name)
        if index_every < 1 or history < 0 or (budget is not None and budget < 1):
            raise ValueError("index_every and budget must be >= 1, history >= 0")
        name = strategy or DEFAULT_STRATEGY
        if name not in available():
            raise ConfigError(f"unknown strategy {name!r}; choose one of {', '.join(available())}")
        if memory.readonly:
            raise ReadOnlyMemoryError(f"the memory {memory.store.location} is read-only; a chat stores its turns")
        self.memory = memory
        self.persona, self.user, self.description = persona.strip(), user.strip(), description
        self.strategy = memory.get_strategy(name).name
        self.budget, self.index_every, self.history = budget, index_every, history
        self.max_tokens, self.temperature = max_tokens, temperature
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        memory.build_wait = wait
        self.last_hits: list[Hit] = []
        """The memories recalled for the last turn (for display and tests)."""
        self.exchanges: list[Exchange] = []
        """This persona's exchanges this session knows of, oldest first: the tail of earlier sessions, then new ones."""
        self.unindexed = 0
        """Exchanges stored that the next :meth:`index` adds to the strategy."""
        self.next_turn = self._resume()

    def _resume(self) -> int:
        """Load the last exchanges of an earlier chat with this persona and count those not indexed (an
        interrupted session); index now when the memory holds documents added outside this chat that the
        strategy lacks (the character's documents must be searchable from the first turn). The next turn number.
        """
        store = self.memory.store
        stored = sorted(
            (int(m.group("turn")), int(d["id"]))
            for d in store.documents()
            if (m := _SOURCE.match(str(d["source"]))) and m.group("persona") == self.persona
        )
        unchunked = {doc_id for doc_id, _ in store.unchunked_documents()}
        mine = {doc_id for _, doc_id in stored}
        state = store.build_state(self.strategy)
        behind = state.new_chunks or state.deleted_chunks or (state.state == "never built" and store.nodes("chunk"))
        if unchunked - mine or (needs_build(self.memory.get_strategy(self.strategy)) and behind):
            self.index()
        else:
            self.unindexed = len(unchunked)
        keep = max(self.history, self.unindexed)
        for turn, doc_id in stored[len(stored) - keep :] if keep else []:
            self.exchanges.append(Exchange.read(turn, doc_id, store.document_text(doc_id), self.persona))
        return stored[-1][0] + 1 if stored else 1

    # -- one turn ---------------------------------------------------------------------------------------------
    def turn(self, message: str) -> str:
        """Reply to ``message`` in character and remember the exchange: :meth:`reply`, then :meth:`index_pending`.

        Returns:
            The character's reply (stripped; never empty).

        Raises:
            ValueError: an empty message.
            MemoryBusyError: another process kept the build lock for longer than ``wait``.
            GemragError: the model or the strategy failed (the exchange is stored unless the reply failed).
        """
        reply = self.reply(message)
        self.index_pending()
        return reply

    def reply(self, message: str) -> str:
        """Steps 1-3 of a turn (module docstring): recall, reply, store the exchange; no indexing.

        Interrupted (KeyboardInterrupt) before the reply, the user's message is stored alone, then the interrupt
        goes on.

        Raises:
            ValueError: an empty message. GemragError: as :meth:`turn`.
        """
        if not message.strip():
            raise ValueError("the message is empty")
        message, at, turn = message.strip(), self.clock(), self.next_turn
        try:
            self.last_hits = self.recall(message)
            reply = self._generate(message, [h.text for h in self.last_hits])
        except KeyboardInterrupt:
            self._store(Exchange.write(turn, message, None, at, (self.user, self.persona)))
            raise
        self._store(Exchange.write(turn, message, reply, at, (self.user, self.persona)), self._rests_on())
        return reply

    def _rests_on(self) -> list[int]:
        """The chunks the last reply rests on (module docstring, step 3): those of the memories recalled (a derived
        hit's recorded sources) and of the exchanges shown verbatim, with what those rest on in turn."""
        store = self.memory.store
        chunks = {h.node_id for h in self.last_hits if h.kind == "chunk"}
        chunks.update(p.chunk_id for h in self.last_hits if h.provenance for p in h.provenance.passages)
        shown = [e.doc_id for e in self.window() if e.doc_id]
        for rested in store.document_inputs(shown).values():
            chunks.update(rested)
        chunks.update(c for doc_id in shown for c in store.document_chunk_ids(doc_id))
        return sorted(chunks)

    def recall(self, message: str) -> list[Hit]:
        """Memories for ``message``: at most ``budget`` of the strategy's hits, without the chunks of exchanges
        shown verbatim (:meth:`window`). Nothing while the strategy has no build yet (everything stored is then
        shown verbatim).

        Raises:
            GemragError: the strategy failed.
        """
        chosen = self.memory.get_strategy(self.strategy)
        if needs_build(chosen) and self.memory.store.published_generation(self.strategy) is None:
            return []
        if not needs_build(chosen) and not self.memory.store.documents():
            return []
        budget = self.budget or getattr(chosen, "default_budget", None) or self.memory.config.memory.budget
        shown = {c for e in self.window() for c in self.memory.store.document_chunk_ids(e.doc_id)}
        with warnings.catch_warnings():  # exchanges waiting for the next index are shown verbatim instead
            warnings.simplefilter("ignore", StaleStrategyWarning)
            hits = self.memory.retrieve(message, budget + len(shown), self.strategy)
        return [h for h in hits if not (h.kind == "chunk" and h.node_id in shown)][:budget]

    def window(self) -> list[Exchange]:
        """The exchanges shown verbatim: the last ``max(history, unindexed)`` of those still in the memory (an
        exchange a removal withdrew, because its reply rested on a removed chunk, leaves the window at once)."""
        live = {int(d["id"]) for d in self.memory.store.documents()}
        self.exchanges = [e for e in self.exchanges if not e.doc_id or e.doc_id in live]
        keep = max(self.history, self.unindexed)
        return self.exchanges[len(self.exchanges) - keep :] if keep else []

    def _generate(self, message: str, memories: list[str]) -> str:
        history = [(e.user, e.reply) for e in self.window() if e.reply is not None]
        messages = chat_prompt(self.persona, message, memories, history, description=self.description, user=self.user)
        llm = self.memory.llm()
        with self.memory.meter.phase("query"):
            completion = llm.complete(messages, max_tokens=self.max_tokens, temperature=self.temperature)
        return _clean(completion.text, self.persona)

    def _store(self, exchange: Exchange, rests_on: list[int] | None = None) -> None:
        title = f"chat with {self.persona}, turn {exchange.turn}"
        source = exchange_source(self.persona, exchange.turn)
        doc_id, _ = self.memory.add_text(exchange.text, title, source, rests_on=rests_on or ())
        self.exchanges.append(replace(exchange, doc_id=doc_id))
        self.next_turn = exchange.turn + 1
        self.unindexed += 1

    # -- memory updates ---------------------------------------------------------------------------------------
    def index_pending(self, *, force: bool = False) -> IndexReport | None:
        """Index when ``index_every`` exchanges are waiting (any waiting with ``force``); else nothing.

        Returns:
            The index report, or None when nothing was indexed.

        Raises:
            MemoryBusyError: another process kept the build lock for longer than ``wait``.
            GemragError: the strategy's build failed (the exchanges stay stored and wait for the next index).
        """
        if self.unindexed >= self.index_every or (force and self.unindexed > 0):
            return self.index()
        return None

    def index(self) -> IndexReport | None:
        """Index the memory for the session's strategy now (None for a memory without documents).

        Raises:
            As :meth:`index_pending`.
        """
        if not self.memory.store.documents():
            return None
        report = self.memory.index(self.strategy)
        self.unindexed = 0
        return report

    def close(self) -> IndexReport | None:
        """End the session: index what is still waiting (the memory stays open; close it separately)."""
        return self.index_pending(force=True)


def _flat(text: str) -> str:
    """``text`` as one dialogue turn: blank lines (which would end the turn) collapsed to line breaks."""
    return "\n".join(line.strip() for line in text.strip().splitlines() if line.strip())


def _clean(text: str, persona: str) -> str:
    """The reply without surrounding space or a leading ``<persona>:``; ``...`` when the model said nothing."""
    reply = text.strip()
    if reply.lower().startswith(f"{persona.lower()}:"):
        reply = reply[len(persona) + 1 :].strip()
    return _flat(reply) or "..."
