"""The character chat prompt of ``gemrag chat`` (:mod:`gemrag.chat`), after HLGraphRAG (Zeng, section 4 "Testing",
"Autonomous Testing Driver"): before each user message the memory retrieves relevant knowledge (step 3) and the
reply is generated from a template that gives the character its name and what it knows ("You are Bob, and you
know [retrieved knowledge]", step 4); the paper adds "Do not use any information not included in the context"
so the model answers from its memory and not from its pre-trained knowledge.

gemrag's layout (its own choice; the paper prints only the two sentences above):

1. a system message: the persona (name and optional description), the rules (stay in character, acknowledge
   what the user tells, answer questions about earlier conversation or facts only from what is remembered, say
   so when something is not remembered), then the memories retrieved for this message, numbered in retrieval
   order. Everything before the memories is the same at every turn of a session, so llama.cpp keeps it in its
   KV cache;
2. the most recent exchanges verbatim, as user / assistant messages (short-term memory);
3. the user's new message alone, as the last user message.

The memories are context, not something the user said: with them in the last user message (gemrag's first
layout) the 0.5B model often continued a remembered reply instead of answering, e.g. "The sea is a beautiful,
and soup" to "What is my sister's name?" with the fact recalled first (3 of 4 session dates in
``tests/test_integration_chat.py``'s setting); with them in the system message it answered "Marguerite" for all
four on the same recalled memories.

Changing a text here changes the LLM cache keys of chat replies (nothing else).
"""

from __future__ import annotations

from collections.abc import Sequence

from gemrag.models.base import Message
from gemrag.prompting import format_context


def persona_system(persona: str, description: str = "", user: str = "User") -> str:
    """The rules of the character ``persona`` (its name) talking with ``user``, with an optional free-text
    ``description`` (background, manner of speaking) placed after the name: the fixed part of the system message."""
    about = f"\n\nAbout you:\n{description.strip()}" if description.strip() else ""
    return (
        f"You are {persona}, talking with {user}. Stay in character as {persona} and talk in the first person, "
        f"in one to three sentences.{about}\n\nWhen {user} tells you something about themselves or asks you to "
        "remember something, acknowledge it and repeat the detail in your reply; it will be kept in your memories."
        "\n\nWith each message you are given your memories: things said earlier in this conversation (each "
        "marked with its turn number and speaker) and things you know. When asked about something said before, "
        "or about facts, answer using only your memories and do not use information that is not in them; if your "
        "memories do not hold the answer, say that you do not remember."
    )


def chat_prompt(
    persona: str,
    message: str,
    memories: Sequence[str],
    history: Sequence[tuple[str, str]] = (),
    *,
    description: str = "",
    user: str = "User",
) -> list[Message]:
    """Messages asking ``persona`` to reply to ``message`` (layout: module docstring).

    Args:
        persona: the character's name. message: the user's new message (non-empty).
        memories: texts retrieved from the memory for this message, best first (may be empty).
        history: the most recent exchanges ``(user message, persona's reply)``, oldest first.
        description: optional persona description (see :func:`persona_system`).
        user: the user's name, as in the stored exchanges.

    Returns:
        The system message (rules, then ``Your memories:`` and the numbered memories, or ``(nothing relevant)``),
        two messages per exchange of ``history``, then ``message`` as the last user message.
    """
    remembered = format_context(memories) if memories else "(nothing relevant)"
    system = f"{persona_system(persona, description, user)}\n\nYour memories:\n{remembered}"
    messages: list[Message] = [{"role": "system", "content": system}]
    for said, reply in history:
        messages.append({"role": "user", "content": said})
        messages.append({"role": "assistant", "content": reply})
    messages.append({"role": "user", "content": message})
    return messages
