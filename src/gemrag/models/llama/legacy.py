"""llama-cpp-python's own chat path of the llama.cpp backend (:mod:`gemrag.models.llama.backend`): taken with a named
``chat_format`` (or a GGUF without a chat template), where ``Llama.create_chat_completion`` applies the format and
decodes one request at a time, instead of gemrag's batch decoder.

:func:`legacy_complete` is one completion (a JSON schema becomes the GBNF grammar built once per schema,
:func:`gemrag.models.llama.chat.grammar_for_schema`); :func:`legacy_stream` the same completion as a stream
(``create_chat_completion(stream=True)``, contract: :mod:`gemrag.models.streaming`); :func:`to_completion` turns
an OpenAI-style response dict (llama-cpp-python's, or the decoder's result dressed as one) into a
:class:`~gemrag.models.base.Completion`.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from gemrag.errors import GemragError
from gemrag.models.base import Completion, Message, Usage
from gemrag.models.llama.chat import grammar_for_schema

if TYPE_CHECKING:
    from llama_cpp import Llama

__all__ = ["legacy_complete", "legacy_stream", "to_completion"]


def _arguments(
    messages: Sequence[Message], schema: dict[str, Any] | None, max_tokens: int, temperature: float, seed: int
) -> dict[str, Any]:
    """The keyword arguments of ``Llama.create_chat_completion`` (the schema's grammar built once)."""
    kwargs: dict[str, Any] = {
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "max_tokens": max_tokens,
        "temperature": temperature,
        "seed": seed,
    }
    if schema is not None:
        from llama_cpp.llama_grammar import LlamaGrammar

        kwargs["grammar"] = LlamaGrammar.from_string(grammar_for_schema(schema), verbose=False)
    return kwargs


@contextlib.contextmanager
def _llama_errors(model_id: str, context_window: int) -> Iterator[None]:
    """llama-cpp-python's ValueError / RuntimeError as :class:`GemragError` (a context overflow named as such)."""
    try:
        yield
    except ValueError as e:
        if "context window" in str(e):
            raise GemragError(
                f"the prompt does not fit the context window of {model_id} ({context_window} tokens): {e}"
            ) from e
        raise GemragError(f"llama.cpp failed: {e}") from e
    except RuntimeError as e:
        raise GemragError(f"llama.cpp failed: {e}") from e


def legacy_complete(
    llm: Llama,
    model_id: str,
    context_window: int,
    messages: Sequence[Message],
    schema: dict[str, Any] | None,
    max_tokens: int,
    temperature: float,
    seed: int,
) -> Completion:
    """One ``Llama.create_chat_completion`` call.

    Args:
        llm: the loaded model. model_id, context_window: named in errors.
        messages, schema, max_tokens, temperature: as :meth:`gemrag.models.base.LLM.complete`.
        seed: the sampling seed (the backend's default already applied).

    Raises:
        GemragError: the prompt does not fit the context window, or llama.cpp failed.
    """
    kwargs = _arguments(messages, schema, max_tokens, temperature, seed)
    t0 = time.perf_counter()
    with _llama_errors(model_id, context_window):
        response = llm.create_chat_completion(**kwargs)
    return to_completion(response, schema is not None, time.perf_counter() - t0)


def legacy_stream(
    llm: Llama,
    model_id: str,
    context_window: int,
    messages: Sequence[Message],
    max_tokens: int,
    temperature: float,
    seed: int,
) -> Generator[str | Completion, None, None]:
    """:func:`legacy_complete` as a stream: ``create_chat_completion(stream=True)``, each chunk's ``delta.content``
    yielded as it is decoded, then the :class:`Completion`.

    llama-cpp-python's chunks carry no usage, so the completion's tokens are its chunks (llama-cpp-python sends one
    per token, holding back a token that ends inside a UTF-8 character) and the prompt's tokens are the message
    texts tokenized (the chat format's own tokens not counted): estimates, unlike the decoder's exact counts.
    Closing the stream closes llama-cpp-python's generator, which stops decoding.

    Raises:
        GemragError: as :func:`legacy_complete`.
    """
    kwargs = _arguments(messages, None, max_tokens, temperature, seed)
    t0 = time.perf_counter()
    pieces: list[str] = []
    with _llama_errors(model_id, context_window):
        # stream=True gives an iterator of chunk dicts (llama-cpp-python annotates the union of both forms)
        chunks: Any = llm.create_chat_completion(stream=True, **kwargs)
    with contextlib.closing(chunks):
        while True:
            with _llama_errors(model_id, context_window):
                chunk = next(chunks, None)
            if chunk is None:
                break
            choices = chunk.get("choices") or [{}]
            piece = (choices[0].get("delta") or {}).get("content") or ""
            if piece:
                pieces.append(piece)
                yield piece
    text = "".join(pieces)
    prompt = sum(len(llm.tokenize(m["content"].encode("utf-8"), add_bos=False, special=False)) for m in messages)
    usage = Usage(prompt, len(pieces), seconds=time.perf_counter() - t0, calls=1)
    yield Completion(text, None, usage)


def to_completion(response: Any, wants_json: bool, seconds: float) -> Completion:
    """A :class:`Completion` from an OpenAI-style chat response dict (``choices[0].message.content``, ``usage``).

    Args:
        response: the response dict. wants_json: a schema was requested (``parsed`` is then the decoded JSON, or
            None when the text does not parse). seconds: the call's wall-clock time.
    """
    choice = response["choices"][0]
    text = choice["message"].get("content") or ""
    usage = response.get("usage") or {}
    parsed: Any = None
    if wants_json:
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
    return Completion(
        text=text,
        parsed=parsed,
        usage=Usage(
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            seconds=seconds,
            calls=1,
        ),
    )
