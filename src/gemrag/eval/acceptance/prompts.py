"""The in-character reply's prompt of the HLGraphRAG acceptance test (Zeng, "HLGraphRAG", section 4 "Testing").

* **In-character reply** (section 4, "Autonomous Testing Driver", steps 3-4): before each turn of the speaker who
  read the movie article, the memory is searched with the other speaker's last message and the model answers as
  that speaker, "You are Bob, and you know [retrieved knowledge]", with the paper's instruction "Do not use any
  information not included in the context". As the paper keeps a chat session, the recent real turns follow as chat
  messages (:func:`reply_prompt`); :func:`clean_reply` drops speaker labels a small model still writes.

The judge's prompt and output schema are :mod:`gemrag.eval.judging.prompts`. Changing a text here changes the LLM
cache keys.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gemrag.models.base import Message
from gemrag.prompting import format_context

#: The user turn that asks the speaker to go on when they sent the last message themselves.
GO_ON = "(The stranger is waiting for your next message.)"


def reply_prompt(movie: str, context: Sequence[str], transcript: Sequence[tuple[bool, str]]) -> list[Message]:
    """The in-character reply's messages: a chat session, as the paper keeps one (section 4, step 4).

    The system message is the persona with the retrieved context ("you know [retrieved knowledge]"); the transcript
    follows as chat turns, the stranger's as ``user`` messages and the speaker's own as ``assistant`` messages
    (consecutive messages of one speaker joined by a newline), so the model answers as the speaker. A one-line
    transcript of "You:" / "Stranger:" lines made the 0.5B model continue the transcript, often writing the
    stranger's next line. When the speaker spoke last (CMU DoG speakers sometimes send two messages in a row) a
    short user message asks them to go on.

    Args:
        movie: the movie's name.
        context: the retrieved passages, in retrieval order (numbered by :func:`format_context`).
        transcript: the conversation so far (real turns only: error correction), oldest first, as
            ``(said by the replying speaker, text)``.
    """
    system = (
        f"You are a person chatting online with a stranger about the movie {movie}. You read its Wikipedia article; "
        "what you remember of it is in the context below. Stay in character and write your next chat message: one "
        "or two short sentences, in the first person, that answer the stranger. Do not use any information not "
        f"included in the context.\n\nContext:\n{format_context(context)}"
    )
    messages: list[Message] = [{"role": "system", "content": system}]
    for own, text in transcript:
        role = "assistant" if own else "user"
        if messages[-1]["role"] == role:
            messages[-1] = {"role": role, "content": f"{messages[-1]['content']}\n{text}"}
        else:
            messages.append({"role": role, "content": text})
    if messages[-1]["role"] != "user":
        messages.append({"role": "user", "content": GO_ON})
    return messages


def clean_reply(text: str) -> str:
    """The speaker's own message in a completion, whitespace collapsed.

    A small model may still write speaker labels, as in "Stranger: ... You: ...": the text is split at ``You:``,
    ``Me:`` and ``Stranger:`` labels and the first non-empty part not labelled ``Stranger`` is kept (an unlabelled
    opening counts as the speaker's own); when every part is the stranger's, the first one is kept.
    """
    pieces = re.split(r"\b(You|Me|Stranger)\s*:", text)
    parts = [(None, pieces[0])] + [(pieces[i], pieces[i + 1]) for i in range(1, len(pieces) - 1, 2)]
    parts = [(label, " ".join(part.split())) for label, part in parts if part.strip()]
    own = [part for label, part in parts if label != "Stranger"]
    return own[0] if own else (parts[0][1] if parts else "")
