"""The ``openai`` SDK client and its errors, shared by :class:`~gemrag.models.openai.backend.OpenAILLM` and
:class:`~gemrag.models.openai.embedder.OpenAIEmbedder`: the client factory, the translation of SDK exceptions
into :class:`~gemrag.errors.GemragError` (which of them are fatal: :mod:`gemrag.models.openai.backend`), and the
tokenizer-free token estimate.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from gemrag.errors import ConfigError, GemragError, ModelNotAvailableError

if TYPE_CHECKING:
    from openai import OpenAI

__all__ = [
    "EndpointRejectedError",
    "EndpointUnreachableError",
    "PLACEHOLDER_API_KEY",
    "error_detail",
    "estimate_tokens",
    "make_client",
    "translate_errors",
]

#: API key sent when none is given and ``OPENAI_API_KEY`` is unset (local servers ignore it).
PLACEHOLDER_API_KEY = "sk-no-key-required"


class EndpointUnreachableError(ModelNotAvailableError):
    """The OpenAI-compatible server could not be reached (connection refused, DNS failure, reset) even after the
    SDK's retries. Fatal (:func:`~gemrag.errors.is_fatal`): every further request would fail the same way."""


class EndpointRejectedError(ConfigError):
    """The server rejected the API key (HTTP 401/403) or has no such model or endpoint (HTTP 404): the
    configuration is wrong. Fatal (:func:`~gemrag.errors.is_fatal`): every further request would fail too."""


def estimate_tokens(text: str) -> int:
    """A tokenizer-free token estimate: ``len(text) // 4 + 1``.

    About 4 characters per token holds for English with BPE tokenizers; it over-counts code and
    under-counts some other languages. HTTP backends have no local tokenizer, so this is what they report.
    """
    return len(text) // 4 + 1


def make_client(base_url: str | None, api_key: str | None, timeout: float, max_retries: int) -> OpenAI:
    """An ``openai.OpenAI`` client (thread-safe; no request is made).

    Args:
        base_url: API root (None: ``$OPENAI_BASE_URL`` or OpenAI's).
        api_key: the key (None: ``$OPENAI_API_KEY``, else :data:`PLACEHOLDER_API_KEY`).
        timeout: seconds per HTTP request.
        max_retries: the SDK's retries on connection errors, 408/409/429 and 5xx.

    Raises:
        ModelNotAvailableError: the openai package is not installed.
    """
    try:
        from openai import OpenAI
    except ImportError as e:  # pragma: no cover - openai is a core dependency
        raise ModelNotAvailableError(f"the OpenAI backend needs the openai package ({e}); pip install openai") from e
    key = api_key or os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_API_KEY
    return OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=max_retries)


@contextmanager
def translate_errors(url: str, model: str, what: str, timeout: float, hint: str = "") -> Iterator[None]:
    """Turn ``openai`` SDK exceptions raised in the block into :class:`GemragError` with an actionable message.

    Args:
        url: the server's API root, named in messages. model: the model name. what: the request's kind
            (``"chat completion"``, ``"embeddings"``). timeout: the request timeout (seconds), named on a timeout.
        hint: appended to the message of an HTTP error other than 401/403/404/429.

    Raises:
        EndpointUnreachableError: connection failed (fatal).
        EndpointRejectedError: HTTP 401, 403 or 404 (fatal).
        GemragError: a timeout, HTTP 429 after the retries, another HTTP error, any other SDK error.
    """
    import openai

    try:
        yield
    except openai.APITimeoutError as e:
        raise GemragError(f"{what} request to {url} (model {model!r}) timed out after {timeout:g} s") from e
    except openai.APIConnectionError as e:
        cause = e.__cause__ or e
        raise EndpointUnreachableError(
            f"cannot connect to the OpenAI-compatible server at {url} ({cause}); is it running?"
        ) from e
    except openai.AuthenticationError as e:
        raise EndpointRejectedError(
            f"the server at {url} rejected the API key (HTTP 401); set api_key or OPENAI_API_KEY"
        ) from e
    except openai.PermissionDeniedError as e:
        raise EndpointRejectedError(
            f"the server at {url} refused access to model {model!r} (HTTP 403): {error_detail(e)}"
        ) from e
    except openai.NotFoundError as e:
        raise EndpointRejectedError(
            f"HTTP 404 from {url}: model {model!r} or the {what} endpoint does not exist there ({error_detail(e)})"
        ) from e
    except openai.RateLimitError as e:
        raise GemragError(f"rate limited by {url} (HTTP 429) after retries: {error_detail(e)}") from e
    except openai.APIStatusError as e:
        raise GemragError(f"{what} request to {url} failed with HTTP {e.status_code}: {error_detail(e)}{hint}") from e
    except openai.OpenAIError as e:
        raise GemragError(f"{what} request to {url} failed: {e}") from e


def error_detail(e: Any) -> str:
    """The server's explanation in an SDK error (its JSON ``error.message``, else the body or the message), at most
    500 characters."""
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and "message" in err:
            return str(err["message"])[:500]
        return json.dumps(body)[:500]
    return str(getattr(e, "message", e))[:500]
