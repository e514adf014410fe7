"""The chat routes: a multi-turn character chat over a namespace's memory (:class:`gemrag.chat.ChatSession`, the
same chat as ``gemrag chat``; HLGraphRAG, Zeng, section 1: a character recalls what was said long ago through its
RAG memory).

* ``POST /v1/namespaces/{ns}/chat``: one turn: the memories recalled for the message (hits with their provenance,
  as ``retrieve`` gives them), the reply, and the exchange stored in the memory as a document
  (``chat:<persona>#<turn>``) and indexed for the chat's strategy, so later turns recall it;
* ``GET /v1/namespaces/{ns}/chat/{persona}``: the chat's history with that persona, oldest first.

A turn writes (it stores the exchange and indexes it), so it waits for the namespace's writer like an add.
"""

import time
from typing import Annotated, Any

from fastapi import FastAPI, Query
from fastapi import Path as PathParam

from gemrag.chat.session import ChatSession, check_name, stored_exchanges
from gemrag.server import schemas as m
from gemrag.server.namespaces import Namespaces
from gemrag.server.serialize import hits_out

__all__ = ["install_chat"]

Persona = Annotated[str, PathParam(min_length=1, max_length=80, description="The character's name.")]


def install_chat(app: FastAPI, spaces: Namespaces, namespace: Any, strategy_of: Any, wait: float) -> None:
    """Add the chat routes to ``app``.

    Args:
        app: the server's app. spaces: its namespaces. namespace: the dependency type of a namespace path parameter
            the caller's key may use (``Annotated[str, Depends(...)]``). strategy_of: checks a strategy name (raises
            ``InputError`` for an unknown one). wait: seconds a turn waits for another writer of its namespace.
    """

    @app.post(
        "/v1/namespaces/{ns}/chat",
        response_model=m.ChatOut,
        responses={code: {"model": m.ErrorOut} for code in (409, 503)},
        tags=["query"],
    )
    def chat_turn(ns: namespace, body: m.ChatRequest) -> m.ChatOut:
        """One turn of a character chat over the namespace's memory (creates it when new): recall memories for the
        message (at most ``budget`` hits of ``strategy``, default the server's), reply in character with the last
        exchanges as history, store the exchange as a document and index it (:class:`gemrag.chat.ChatSession`).
        The reply has no ``[n]`` markers: ``hits`` are the memories it was given."""
        strategy = strategy_of(body.strategy)
        persona = check_name("persona", body.persona)
        start = time.perf_counter()
        with spaces.writing(ns, wait=wait) as memory:
            name = strategy or memory.strategy.name
            session = ChatSession(memory, persona, strategy=name, budget=body.budget, wait=wait)
            reply = session.turn(body.message)
            hits = hits_out(session.last_hits, name)
            turn = session.next_turn - 1
        return m.ChatOut(
            persona=persona, turn=turn, reply=reply, strategy=name, hits=hits, seconds=time.perf_counter() - start
        )

    @app.get(
        "/v1/namespaces/{ns}/chat/{persona}",
        response_model=m.ChatHistoryOut,
        responses={404: {"model": m.ErrorOut}},
        tags=["query"],
    )
    def chat_history(
        ns: namespace,
        persona: Persona,
        last: Annotated[int, Query(ge=0, le=1000, description="At most this many exchanges, the latest.")] = 100,
    ) -> m.ChatHistoryOut:
        """The exchanges of the chat with ``persona`` stored in the namespace, oldest first (the latest ``last``)."""
        name = check_name("persona", persona)
        with spaces.reading(ns) as memory:
            exchanges = stored_exchanges(memory.store, name, last)
        return m.ChatHistoryOut(
            persona=name,
            exchanges=[
                m.ChatExchangeOut(turn=e.turn, user=e.user, reply=e.reply, document=e.doc_id) for e in exchanges
            ],
        )
