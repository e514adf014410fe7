"""Your own LLM: a tiny rule-based model behind gemrag's ``LLM`` protocol, building a GEM-RAG memory and answering.

gemrag talks to every language model through one protocol, :class:`gemrag.models.base.LLM`: an object with a
``model_id`` (a stable name, part of the LLM-cache keys), a ``context_window`` (tokens), ``count_tokens(text)`` and
``complete(messages, *, schema=None, max_tokens=256, temperature=0.0, seed=None)`` returning a
:class:`gemrag.models.base.Completion`. Pass any such object to ``Memory.open(directory, config, llm=...)`` and every
strategy's build and every answer goes through it (cached and metered by the memory, like the built-in backends).
Wrap your provider's client the same way; this example needs no model at all, so it runs offline in seconds.

:class:`ExtractiveLLM` answers the three kinds of request GEM-RAG's strategy, ``gem`` (the one this example builds),
and the answer step make:

* **utility questions** (a JSON ``schema`` with a ``questions`` array): one question per sentence of the passage;
  a backend that can constrain its output should honour ``schema``, the others must at least return JSON (gemrag
  validates it, repairs or retries malformed output, then records a failure);
* **eigentheme summaries** (``These passages share a theme``): the first sentence of each passage;
* **answers** (``Context:`` ... ``Question:``): the context sentence sharing most words with the question, with a
  ``[n]`` marker citing the passage it came from.

Run it: ``python examples/custom_llm.py [MEMORY]`` (default: a temporary directory). It indexes a short text with
``gem`` (utility questions and summaries from :class:`ExtractiveLLM`, embeddings from the embedded MiniLM model), asks
a question and prints the answer, the passage it cites and how many calls the LLM answered; a second run on the same
``MEMORY`` makes no LLM call (the memory's cache). ``tests/test_examples.py`` runs it.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gemrag import Answer, IndexReport, Memory
from gemrag.config import Config
from gemrag.models.base import LLM, Completion, Embedder, Message, Usage

TEXT = """The lighthouse on Gull Rock was built in 1857 from granite quarried on the island itself.
Its keeper, Ada Morrow, kept a log of every ship that passed for thirty-one years.

The island's puffin colony returns each April and leaves in August, nesting in burrows on the western cliffs.
Visitors may watch them from the path but must not leave it between May and July.

A ferry leaves the harbour at nine every morning in summer; the crossing takes forty minutes and the last boat
back is at five."""

QUESTION = "When does the puffin colony return to the island?"

WORD = re.compile(r"[a-z0-9']+")
STOPWORDS = frozenset(
    {"a", "an", "and", "at", "by", "do", "does", "for", "from", "how", "in", "is", "it", "of", "on", "the", "to"}
    | {"was", "what", "when", "where", "which", "who", "why"}
)


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (split after ``.``, ``!``, ``?`` and ``;``, and at line breaks)."""
    return [s.strip() for s in re.split(r"(?<=[.!?;])\s+|\n+", text) if s.strip()]


def content_words(text: str) -> set[str]:
    """The lower-case words of ``text`` that are not stopwords."""
    return {w for w in WORD.findall(text.lower()) if w not in STOPWORDS}


class ExtractiveLLM:
    """A rule-based stand-in for a language model, implementing :class:`gemrag.models.base.LLM`.

    Attributes:
        model_id: part of every LLM-cache key: change it when the rules change, or cached answers are reused.
        context_window: the longest prompt plus completion it accepts (tokens).
        calls: how many requests it answered (the memory's cache answers repeated ones without calling it).
    """

    model_id = "example:extractive-1"
    context_window = 4096

    def __init__(self) -> None:
        self.calls = 0

    def count_tokens(self, text: str) -> int:
        """Its "tokens" are words."""
        return len(text.split())

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> Completion:
        """Answer the last message of the chat (see the module docstring for the three kinds of request)."""
        self.calls += 1
        prompt = messages[-1]["content"]
        if schema is not None and "questions" in schema.get("properties", {}):
            text = json.dumps({"questions": self._questions(prompt, schema["properties"]["questions"])})
        elif "These passages share a theme" in prompt:
            text = self._summary(prompt)
        elif "Context:" in prompt and "Question:" in prompt:
            text = self._answer(prompt)
        else:
            text = "I cannot do that."
        parsed = json.loads(text) if schema is not None and text.startswith("{") else None
        words = min(len(text.split()), max_tokens)
        usage = Usage(prompt_tokens=self.count_tokens(prompt), completion_tokens=words, calls=1)
        return Completion(text, parsed, usage)

    @staticmethod
    def _questions(prompt: str, array: dict[str, Any]) -> list[str]:
        """Exactly as many questions as the schema asks for, one per sentence of the passage (the last repeated)."""
        passage = prompt.split('"""')[1]
        wanted, longest = array.get("minItems", 5), array["items"].get("maxLength", 160)
        made = [f"What does the text say about {' '.join(s.rstrip('.;').split()[:8])}?" for s in sentences(passage)]
        made = [q if len(q) <= longest else q[: longest - 1] + "?" for q in made] or ["What does the text say?"]
        return (made + made[-1:] * wanted)[:wanted]

    @staticmethod
    def _summary(prompt: str) -> str:
        """The first sentence of every numbered passage ``[n] ...`` before the instruction."""
        body = prompt.split("\n\nThese passages share a theme")[0]
        passages = re.split(r"(?:^|\n\n)\[\d+\] ", body)
        return " ".join(sentences(p)[0] for p in passages if p.strip())

    @staticmethod
    def _answer(prompt: str) -> str:
        """The context sentence sharing most words with the question, citing its passage as ``[n]``."""
        context = prompt.split("Context:\n", 1)[1].split("\n\nQuestion:", 1)[0]
        question = content_words(prompt.split("Question:", 1)[1].split("\n", 1)[0])
        candidates = [
            (len(question & content_words(s)), -int(n), s)
            for n, passage in re.findall(r"^\[(\d+)\] (.*(?:\n(?!\[\d+\] ).*)*)", context, flags=re.M)
            for s in sentences(passage)
        ]
        if not candidates:
            return "The context does not say."
        _, n, best = max(candidates)
        return f"{best} [{-n}]"


def run(directory: Path, embedder: Embedder | None = None) -> tuple[IndexReport, Answer, int]:
    """Index :data:`TEXT` with ``gem`` and :class:`ExtractiveLLM`, then answer :data:`QUESTION`.

    Args:
        directory: the memory directory (created when missing).
        embedder: the embedder (default: the configured one, the embedded MiniLM ONNX model).

    Returns:
        ``(report, answer, calls)``: what the index did, the answer, and how many requests reached the LLM.
    """
    llm = ExtractiveLLM()
    assert isinstance(llm, LLM)  # the protocol is runtime-checkable: a missing attribute shows here
    config = Config(strategy="gem")
    config.memory.chunk_tokens = 48  # small chunks, so that the three paragraphs are separate passages
    with Memory.open(directory, config, llm=llm, embedder=embedder) as memory:
        memory.add_text(TEXT, title="Gull Rock", id="gull-rock")
        report = memory.index()  # utility questions and eigentheme summaries: LLM calls
        answer = memory.ask(QUESTION)  # retrieval (no LLM call for gem), then one answer call
        return report, answer, llm.calls


def main(argv: list[str]) -> int:
    """``custom_llm.py [MEMORY]``: run the example and print what the LLM built and answered."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(argv[0]) if argv else Path(tmp) / "memory"
        report, answer, calls = run(directory)
        print(f"indexed {report.chunks} chunks, {report.summary_nodes} summary nodes, {report.llm_calls} LLM calls")
        print(f"{QUESTION}\n  -> {answer.text}")
        for hit in answer.citations:
            for passage in hit.provenance.passages if hit.provenance else ():
                where = f"{passage.document.title!r}, chunk {passage.ordinal}, characters {passage.start}-{passage.end}"
                print(f"  cited: {where}")
        print(f"{calls} request(s) reached the LLM")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
