"""Test doubles for unit tests only: a deterministic bag-of-words embedder and a scripted LLM."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from gemrag.models.base import Completion, Message, Usage

WORD = re.compile(r"[a-z0-9']+")


class HashEmbedder:
    """Bag-of-words vectors hashed into ``dim`` buckets, L2-normalized (lexical overlap => similarity)."""

    def __init__(self, dim: int = 256, model_id: str = "fake:hash-embedder") -> None:
        self.dim = dim
        self.model_id = model_id
        self.tokens_used = 0
        self.calls = 0
        self.texts_embedded = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            words = WORD.findall(t.lower())
            self.tokens_used += len(words)
            for w in words:
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1.0
            norm = np.linalg.norm(out[i])
            out[i] = out[i] / norm if norm else out[i]
            if not norm:
                out[i, 0] = 1.0
        return out


def _claims(text: str) -> list[str]:
    """The fake decomposition: the text's clauses (split at sentence ends, ';' and ' and ')."""
    parts = re.split(r"[.;]\s*|\s+and\s+", text)
    return [p.strip() for p in parts if p.strip()]


def _sentences(text: str) -> list[str]:
    # a line break ends a sentence too: a chunk's indexed text starts with its document's title on its own line
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n", text) if s.strip()]


NAME = re.compile(r"[A-Z][a-z]+(?: [A-Z][a-z]+)*")


def _names(text: str) -> list[str]:
    """Capitalized word runs, each once (sentence-initial common words included: the model is simple)."""
    return list(dict.fromkeys(NAME.findall(text)))


def _triples(text: str) -> list[list[str]]:
    """One triple per sentence naming two entities: [first name, the words between them, second name]."""
    out = []
    for sentence in _sentences(text):
        found = list(NAME.finditer(sentence))
        if len(found) >= 2:
            a, b = found[0], found[1]
            between = sentence[a.end() : b.start()].strip(" ,") or "is related to"
            out.append([a.group(), between, b.group()])
    return out


def _hlgraph_memory(text: str) -> dict[str, Any]:
    """HLGraphRAG's extraction, scripted: subjects are the names; a sentence naming two names gives a relation
    [first, the words between, second] (no passive: the rule writes it), or, when it says "because", an event with
    the words after "because" as why and a four-digit year in it as the time frame."""
    relations, events = [], []
    for sentence in _sentences(text):
        found = list(NAME.finditer(sentence))
        if len(found) < 2:
            continue
        a, b = found[0], found[1]
        between = sentence[a.end() : b.start()].strip(" ,") or "is related to"
        if "because" in sentence:
            why = sentence.split("because", 1)[1].strip(" .")
            year = re.search(r"\b\d{4}\b", sentence)
            events.append(
                {"object1": a.group(), "event": between, "object2": b.group(), "passive": "", "why": why,
                 "time": year.group() if year else ""}
            )  # fmt: skip
        else:
            relations.append({"object1": a.group(), "meaning": between, "object2": b.group(), "passive": ""})
    return {"subjects": _names(text), "relations": relations, "events": events}


def _chat_reply(request: str) -> str:
    """The scripted character's reply to a chat whose system message is ``request``: its first memory (without
    the ``[1]`` mark), else that it remembers nothing."""
    memories = request.split("Your memories:\n", 1)[1].split("\n\n")[0]
    if not memories.startswith("[1] "):
        return "I do not remember."
    return "I remember: " + " ".join(memories[4:].split())


def _gist(request: str) -> dict[str, Any]:
    """The scripted gist of a window: ``"On <date>, "`` then each turn's speaker and first words; one fact per
    dialogue turn, ``[speaker, "said", first words]``, dated the session day (the day before for "yesterday")."""
    import datetime

    m = re.search(r"\((\d{4}-\d{2}-\d{2})\)", request.split("\n")[0])
    iso = m.group(1) if m else None
    said, facts = [], []
    for line in request.split('"""')[1].strip().splitlines():
        turn = re.match(r"^\[[^\]]*\] ([^:]+): (.*)$", line)
        speaker, text = (turn.group(1), turn.group(2)) if turn else ("", line)
        words = " ".join(text.split()[:6])
        said.append(f"{speaker} said {words}".strip())
        if turn:
            day = iso
            if iso and "yesterday" in text.lower():
                day = (datetime.date.fromisoformat(iso) - datetime.timedelta(days=1)).isoformat()
            facts.append({"subject": speaker, "predicate": "said", "object": words, "time": day})
    return {"gist": f"On {iso or 'an unknown date'}, " + "; ".join(said) + ".", "facts": facts}


def _agent_call(messages: Sequence[Message], schema: dict[str, Any] | None) -> dict[str, Any]:
    """The scripted agent: first a ``semantic_retrieve`` of the question over the gists (when tools are allowed),
    then ``output_answer`` with the first line of the last tool result."""
    question = messages[1]["content"].split("Question: ", 1)[1].split("\n")[0]
    called = any(m["role"] == "assistant" for m in messages[2:])
    if schema is not None and "anyOf" in schema and not called:
        return {"tool": "semantic_retrieve", "arguments": {"query": question, "target": "gists"}}
    results = [m["content"] for m in messages if m["role"] == "user" and m["content"].startswith("Result of")]
    first = re.search(r"^1\. (.*)$", results[-1], flags=re.M) if results else None
    return {"tool": "output_answer", "arguments": {"answer": first.group(1)[:80] if first else "not found"}}


def _nearest_passage(prompt: str, text: str) -> int:
    """The number ``n`` of the context passage ``[n] ...`` of an answer prompt sharing most words with ``text``."""
    context = prompt.split("Context:\n", 1)[1].split("\n\nQuestion:", 1)[0]
    passages = re.findall(r"^\[(\d+)\] (.*)$", context, flags=re.M)
    words = set(WORD.findall(text.lower()))
    return int(max(passages, key=lambda p: len(words & set(WORD.findall(p[1].lower()))))[0]) if passages else 1


def pca(X: np.ndarray, n_components: int, n_neighbors: int) -> np.ndarray:
    """A cheap deterministic stand-in for UMAP: the top principal components."""
    with threadpool_limits(limits=1, user_api="blas"):
        centred = X - X.mean(axis=0)
        _, _, vt = np.linalg.svd(centred, full_matrices=False)
        return centred @ vt[:n_components].T


class ScriptedLLM:
    """Answers gemrag's prompts deterministically; ``fail`` decides which calls return malformed output.

    Utility questions are made from the passage's sentences; OpenIE entities are capitalized word runs and its
    triples link the first two names of each sentence; the recognition filter keeps the candidate facts sharing a
    word of more than three letters with the question; summaries are the passages' first sentences
    (RAPTOR's: the first 8 words of each node, cut at ``max_tokens`` words); multiple-choice answers pick the
    option sharing most words with the context (citing: and the passage sharing most words with it); free-form
    answers are "A free-form answer." ("A free-form answer [1]." when the prompt asks to cite the passages); REMem
    gists name each turn's speaker and first words (facts dated the session day), and the gist agent retrieves once
    over the gists, then answers with the first result; UnWeaver's entities are the capitalized names, each described
    by the sentences naming it, and a shortened description is the first sentence; HLGraphRAG's extraction links the
    first two names of each sentence, its main ideas are the question's names; the ``gemrag chat`` character replies
    with its first memory; a citation check finds a sentence supported iff the cited passages hold each of its words
    of more than three letters.
    """

    def __init__(self, fail: Callable[[int, str], bool] | None = None, interrupt_after: int | None = None) -> None:
        self.model_id = "fake:scripted-llm"
        self.context_window = 8192
        self.calls = 0
        self.prompts: list[str] = []
        self.fail = fail or (lambda i, p: False)
        self.interrupt_after = interrupt_after

    def count_tokens(self, text: str) -> int:
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
        if self.interrupt_after is not None and self.calls >= self.interrupt_after:
            raise KeyboardInterrupt
        self.calls += 1
        prompt = messages[-1]["content"] if len(messages) < 3 else messages[1]["content"]
        self.prompts.append(prompt)
        usage = Usage(prompt_tokens=len(prompt.split()), completion_tokens=5, seconds=0.001, calls=1)
        if self.fail(self.calls, prompt):
            return Completion("Sure! Here are some questions: 1. what", None, usage)
        if "questions that this passage answers" in prompt:
            m = int(re.search(r"Write (\d+) different", prompt).group(1))  # type: ignore[union-attr]
            passage = prompt.split('"""')[1]
            sents = _sentences(passage) or [passage]
            qs = [f"What does the text say about {' '.join(s.split()[:8])}?" for s in sents][:m]
            while len(qs) < m:
                qs.append(qs[-1])  # duplicates exercise deduplication
            text = json.dumps({"questions": qs})
            return Completion(text, json.loads(text), usage)
        system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
        if system.startswith("You are ") and "Stay in character" in system:  # gemrag chat: memories in the system
            self.prompts[-1] = messages[-1]["content"]
            return Completion(_chat_reply(system), None, usage)
        if system.startswith("You extract named entities") and len(messages) >= 4:  # OpenIE, one-shot turns
            self.prompts[-1] = prompt = messages[3]["content"]
            text = json.dumps({"named_entities": _names(prompt.split('"""')[1])})
            return Completion(text, json.loads(text), usage)
        if system.startswith("You extract facts") and len(messages) >= 4:
            self.prompts[-1] = prompt = messages[3]["content"]
            text = json.dumps({"triples": _triples(prompt.split('"""')[1])})
            return Completion(text, json.loads(text), usage)
        if system.startswith("You extract the key entities") and len(messages) >= 4:  # UnWeaver entities
            self.prompts[-1] = prompt = messages[3]["content"]
            passage = prompt.split('"""')[1]
            entities = [
                {"name": n, "description": " ".join(s for s in _sentences(passage) if n in s)[:300]}
                for n in _names(passage)
            ]
            text = json.dumps({"entities": entities[:12]})
            return Completion(text, json.loads(text), usage)
        if system.startswith("You split an answer into the facts"):  # factual correctness: one claim per clause
            answer = prompt.split("Answer: ", 1)[1].split("\n\nList the claims", 1)[0]
            text = json.dumps({"claims": _claims(answer)})
            return Completion(text, json.loads(text), usage)
        if system.startswith("You check claims against a text"):  # supported iff its long words are in the text
            premise = set(WORD.findall(prompt.split("Text: ", 1)[1].split("\n\nClaims:\n", 1)[0].lower()))
            lines = prompt.split("\n\nClaims:\n", 1)[1].split("\n\nFor each of", 1)[0].splitlines()
            claims = [line.split(". ", 1)[1] for line in lines]
            verdicts = [{w for w in WORD.findall(c.lower()) if len(w) > 3} <= premise for c in claims]
            text = json.dumps({"verdicts": verdicts})
            return Completion(text, json.loads(text), usage)
        if system.startswith("You check whether a sentence of an answer is supported"):  # citation check
            premise = set(WORD.findall(prompt.split("Passages:\n", 1)[1].split("\n\nQuestion: ", 1)[0].lower()))
            sentence = prompt.split("Answer sentence: ", 1)[1].split("\n\n", 1)[0]
            supported = {w for w in WORD.findall(sentence.lower()) if len(w) > 3} <= premise
            text = json.dumps({"supported": supported})
            return Completion(text, json.loads(text), usage)
        if system.startswith("You merge several descriptions"):  # UnWeaver shortening: the first sentence
            descriptions = prompt.split("Descriptions:\n", 1)[1]
            return Completion((_sentences(descriptions) or [descriptions])[0], None, usage)
        if system.startswith("You build a memory of who did what") and len(messages) >= 4:  # HLGraphRAG
            self.prompts[-1] = prompt = messages[3]["content"]
            text = json.dumps(_hlgraph_memory(prompt.split('"""')[1]))
            return Completion(text, json.loads(text), usage)
        if system.startswith("You turn a message into short search queries"):  # HLGraphRAG main ideas
            message = prompt.split("Message: ", 1)[1]
            text = json.dumps({"ideas": _names(message)[:3] or [message]})
            return Completion(text, json.loads(text), usage)
        if system.startswith("You write short episodic memory notes") and len(messages) >= 4:  # REMem gists
            self.prompts[-1] = prompt = messages[3]["content"]
            text = json.dumps(_gist(prompt))
            return Completion(text, json.loads(text), usage)
        if system.startswith("You answer questions about a long conversation"):  # REMem gist agent
            text = json.dumps(_agent_call(messages, schema))
            return Completion(text, json.loads(text), usage)
        if "Candidate facts:" in str(messages[-1]["content"]):  # recognition: facts sharing a long word with it
            prompt = messages[-1]["content"]  # the real request comes after the few-shot examples
            question = set(w for w in WORD.findall(prompt.split("Question:")[-1].lower()) if len(w) > 3)
            lines = prompt.split("Candidate facts:\n")[1].split("\n\nQuestion:")[0].splitlines()
            facts = [f for f in (json.loads(line) for line in lines) if question & set(WORD.findall(" ".join(f)))]
            cap = schema["properties"]["facts"]["maxItems"] if schema else len(facts)  # the grammar's bound
            text = json.dumps({"facts": facts[:cap]})
            return Completion(text, json.loads(text), usage)
        if "These passages share a theme" in prompt:
            firsts = [
                (_sentences(p) or [p])[0]
                for p in re.split(r"\n\n\[\d+\] ", "\n\n" + prompt.split("\n\nThese passages")[0])[1:]
            ]
            return Completion(" ".join(firsts), None, usage)
        if prompt.startswith("Write a summary of the following"):  # RAPTOR: first words of each node
            body = prompt.split("as many key details as possible: ", 1)[1].rstrip(":")
            words = [w for p in body.split("\n\n") if p.strip() for w in p.split()[:8]]
            return Completion(" ".join(words[:max_tokens]), None, usage)
        if "Options:" in prompt:
            ctx = set(WORD.findall(prompt.split("Question:")[0].lower()))
            opts = re.findall(r"^([A-J])\. (.*)$", prompt, flags=re.M)
            best, option = max(opts, key=lambda o: len(ctx & set(WORD.findall(o[1].lower()))))
            reply: dict[str, Any] = {"answer": best}
            if schema and "passages" in schema.get("properties", {}):  # a cited choice: the passage nearest the option
                reply["passages"] = [_nearest_passage(prompt, option)]
            text = json.dumps(reply)
            return Completion(text, json.loads(text), usage)
        if "cite the passages" in prompt.lower() and "[1]" in prompt:  # a cited answer names the first passage
            return Completion("A free-form answer [1].", None, usage)
        return Completion("A free-form answer.", None, usage)


class BatchingLLM(ScriptedLLM):
    """A :class:`ScriptedLLM` with its own ``complete_iter`` (the batch capability of
    :mod:`gemrag.models.batch`): it records every batch it receives and yields the answers in reverse order (not
    request order), as a backend finishing its sequences out of order would.

    ``crash_after``: after yielding that many answers in all, the next batch raises ``crash`` (default a
    ``RuntimeError``) in the middle: the answers yielded before stay yielded, the rest of the batch is lost.
    Per-request ``GemragError``s raised by :meth:`complete` are yielded, fatal ones raised.
    """

    def __init__(
        self,
        fail: Callable[[int, str], bool] | None = None,
        crash_after: int | None = None,
        crash: BaseException | None = None,
        interrupt_after: int | None = None,
    ) -> None:
        super().__init__(fail, interrupt_after)
        self.batches: list[list[Any]] = []
        self.crash_after = crash_after
        self.crash = crash or RuntimeError("the backend died mid-batch")
        self.returned: list[Any] = []  # the requests whose answers were yielded, in yield order
        self.closed = 0  # batches whose consumer stopped (or which ended): the generator's cleanup ran

    def complete_iter(self, requests: Sequence[Any]) -> Any:
        from gemrag.errors import GemragError, is_fatal

        self.batches.append(list(requests))
        answers: list[tuple[int, Any]] = []
        for i, r in enumerate(requests):
            try:
                answers.append((i, r.call(self)))
            except GemragError as exc:
                if is_fatal(exc):
                    raise
                answers.append((i, exc))
        try:
            for pair in reversed(answers):
                if self.crash_after is not None and len(self.returned) >= self.crash_after:
                    raise self.crash
                self.returned.append(requests[pair[0]])
                yield pair
        finally:
            self.closed += 1


class StreamingLLM(ScriptedLLM):
    """A :class:`ScriptedLLM` with its own ``complete_stream`` (the streaming capability of
    :mod:`gemrag.models.streaming`): the scripted answer is yielded word by word (each word with the spaces before
    it), ``delay`` seconds apart, then the :class:`Completion`. A free-form answer (the answer prompt) is ``reply``.

    It records ``streams`` (streams started), ``yielded`` (pieces handed out in all), ``finished`` (streams that
    handed out their Completion), ``closed_early`` (streams closed before their end: the generation stopped), and
    ``events`` (``"token"`` at each piece, for ordering against other things a test records).
    """

    def __init__(self, reply: str = "Korvin is a prisoner of the Tr'en.", delay: float = 0.0) -> None:
        super().__init__()
        self.reply = reply
        self.delay = delay
        self.streams = self.yielded = self.finished = self.closed_early = 0
        self.events: list[str] = []

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        completion = super().complete(messages, **kwargs)
        if "Answer briefly." in messages[-1]["content"]:
            completion.text = self.reply
        return completion

    def complete_stream(
        self, messages: Sequence[Message], *, max_tokens: int = 256, temperature: float = 0.0, seed: int | None = None
    ) -> Any:
        import time

        self.streams += 1
        completion = self.complete(messages, max_tokens=max_tokens, temperature=temperature, seed=seed)
        finished = False
        try:
            for piece in re.findall(r"\s*\S+", completion.text):
                if self.delay:
                    time.sleep(self.delay)
                self.yielded += 1
                self.events.append("token")
                yield piece
            finished = True
            self.finished += 1
            yield completion
        finally:
            if not finished:
                self.closed_early += 1


class FailingMidway(StreamingLLM):
    """A StreamingLLM whose stream breaks after its first piece (a server gone mid-answer)."""

    def complete_stream(self, messages: Any, **kwargs: Any) -> Any:
        stream = super().complete_stream(messages, **kwargs)
        try:
            yield next(stream)
            from gemrag.errors import GemragError

            raise GemragError("the stream broke")
        finally:
            stream.close()


class FakeClock:
    """A clock that only moves when :meth:`sleep` is called (records every sleep): ``clock()`` is the time in
    seconds, for rate limiters under test."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


# -- forgetting: the corpora and doubles of the derived-holder cases (tests and benchmarks/forgetting.py) ----------
VAULT_NOTE = "Household notes. Buy oat milk on Friday. The new vault combination is QXV-7731. The cat sleeps all day."
"""A note whose vault code a chat character recalls and rephrases (:class:`ParaphrasingLLM`)."""
VAULT = ("7731", "qxv")
"""The vault code's strings (lower case)."""
KEEPER = "The lighthouse keeper paints the railings every spring."
"""A note that stays."""

LEDGER_DOCS = {
    "a": (
        "Ilse Varga met Tomas Reyes in Valdora. Tomas Reyes sold the old ledger to Mayor Holt. "
        "The harbour of Valdora was quiet that winter, and the fishing boats stayed in port for weeks."
    ),
    "b": (
        "Ilse Varga PAID Mayor Holt. Ilse Varga bribed Valdora. Mayor Holt warned Ilse Varga because the "
        "Kestrel storm came in 1999. The Kestrel ledger listed every payment to the harbour office."
    ),
    "c": (
        "Ilse Varga paid Mayor Holt. Mayor Holt warned Ilse Varga because the harbour vote was near. "
        "Tomas Reyes left Valdora for Quillon, where the markets were larger and the winters milder."
    ),
}
"""Three documents for the :class:`ScriptedLLM`'s extraction: B states a relation C states too, first and in other
words (``PAID``: a merged relation keeps the first chunk's label and passive), the one edge between two entities
that survive it (``bribed``), and an event C states too with another why and time frame."""
LEDGER_REMOVED = ("kestrel", "bribed", "offshore")
"""Strings only B (and :class:`LedgerLLM`'s wording of it) gives, lower case (no number: a float stored as text may hold
its digits)."""


class ParaphrasingLLM(ScriptedLLM):
    """A :class:`ScriptedLLM` whose character rephrases the vault code it recalled (no sentence of the note is
    quoted: "I keep it in mind: QXV dash 7731 opens the vault.")."""

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
        if "Stay in character" in system:
            found = re.search(r"([A-Z]{3})-(\d{4})", system)
            text = f"I keep it in mind: {found.group(1)} dash {found.group(2)} opens the vault." if found else "No."
            return Completion(text, None, super().complete(messages, **kwargs).usage)
        return super().complete(messages, **kwargs)


class LedgerLLM(ScriptedLLM):
    """The scripted LLM, but HLGraphRAG's extraction of a chunk naming the Kestrel ledger writes its own passive
    voice for the relation, naming the ledger (what an LLM adds that no remaining chunk states)."""

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        done = super().complete(messages, **kwargs)
        system = messages[0]["content"] if messages else ""
        if system.startswith("You build a memory of who did what") and "Kestrel" in str(messages[-1]["content"]):
            parsed = dict(done.parsed or {})
            parsed["relations"] = [
                {**r, "passive": "was paid through the Kestrel offshore ledger by"} for r in parsed["relations"]
            ]
            return Completion(json.dumps(parsed), parsed, done.usage)
        return done
