"""The character chat prompt of ``gemrag chat`` (:mod:`gemrag.chat`), after HLGraphRAG (Zeng, section 4 "Testing",
"Autonomous Testing Driver"): before each user message the memory retrieves relevant knowledge (step 3) and the
reply is generated from a template that gives the character its name and what it knows ("You are Bob, and you
know [retrieved knowledge]", step 4); the paper adds "Do not use any information not included in the context"
so the model answers from its memory and not from its pre-trained knowledge.

gemrag's layout (its own choice; the paper prints only the two sentences above):

1. a system message: the persona (name and optional description) and the rules: stay in character, answer
   questions about earlier conversation or facts only from what is remembered, say so when something is not
   remembered. It is the same at every turn of a session, so llama.cpp keeps it in its KV cache;
2. the most recent exchanges verbatim, as user / assistant messages (short-term memory);
3. a last user message: the retrieved memories, numbered in retrieval order, then the user's new message.

Changing a text here changes the LLM cache keys of chat replies (nothing else).
"""

from __future__ import annotations

from collections.abc import Sequence

from gemrag.models.base import Message
from gemrag.models.prompts import format_context


def persona_system(persona: str, description: str = "") -> str:
    """The system message for the character ``persona`` (its name), with an optional free-text ``description``
    (background, manner of speaking) placed after the name."""
    about = f"\n\nAbout you:\n{description.strip()}" if description.strip() else ""
    return (
        f"You are {persona}. Stay in character as {persona} and talk with the user in the first person, in one "
        f"to three sentences.{about}\n\nBefore each message you are shown your memories: things said earlier in "
        "this conversation (each marked with its turn number and speaker) and things you know. When the user "
        "asks about something said before, or about facts, answer using only your memories and do not use "
        "information that is not in them; if your memories do not hold the answer, say that you do not remember."
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
    """Messages asking ``persona`` to reply to ``message``.

    Args:
        persona: the character's name. message: the user's new message (non-empty).
        memories: texts retrieved from the memory for this message, best first (may be empty).
        history: the most recent exchanges ``(user message, persona's reply)``, oldest first.
        description: optional persona description (see :func:`persona_system`).
        user: the user's name as shown in the memories.

    Returns:
        A system message, then two messages per exchange of ``history``, then the memories and the message.
    """
    messages: list[Message] = [{"role": "system", "content": persona_system(persona, description)}]
    for said, reply in history:
        messages.append({"role": "user", "content": said})
        messages.append({"role": "assistant", "content": reply})
    remembered = format_context(memories) if memories else "(nothing relevant)"
    messages.append({"role": "user", "content": f"Your memories:\n{remembered}\n\n{user} says to you: {message}"})
    return messages
