"""gemrag's errors as HTTP statuses, with the error's class name and one-line message as the body
(:class:`~gemrag.server.schemas.ErrorOut`).

Bad input is a 4xx, never a 500: 400 for invalid values (:class:`~gemrag.errors.InputError`, ``ValueError``
from the library, an unknown strategy), 401/403 for keys, 404 for an unknown namespace, job or document, 409
for a state conflict (not indexed yet, another writer busy, a job already running, an ambiguous document
name). Only server-side conditions are 5xx: 503 when a model is missing, crashed or the memory is damaged.
"""

from __future__ import annotations

from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from gemrag import errors as ge
from gemrag.server.jobs import JobConflictError, UnknownJobError
from gemrag.server.namespaces import UnknownNamespaceError


class AuthError(ge.GemragError):
    """The request carries no API key, or one the server does not know (401)."""


class ForbiddenError(ge.GemragError):
    """The API key may not use this namespace (403)."""


class NotFoundError(ge.GemragError):
    """The named document does not exist in the namespace (404)."""


class ConflictError(ge.GemragError):
    """The request conflicts with the memory's state, e.g. a document name matching several documents (409)."""


STATUS: tuple[tuple[type[BaseException], int], ...] = (
    (AuthError, 401),
    (ForbiddenError, 403),
    (UnknownNamespaceError, 404),
    (UnknownJobError, 404),
    (NotFoundError, 404),
    (ConflictError, 409),
    (JobConflictError, 409),
    (ge.MemoryNotIndexedError, 409),
    (ge.MemoryBusyError, 409),
    (ge.ReadOnlyMemoryError, 409),
    (ge.IncompatibleMemoryError, 409),
    (ge.StaleGenerationError, 409),
    (ge.ModelNotAvailableError, 503),
    (ge.ModelIntegrityError, 503),
    (ge.ModelCrashError, 503),
    (ge.DamagedMemoryError, 503),
    (ge.InputError, 400),
    (ge.ConfigError, 400),
    (ge.StructuredOutputError, 502),
    (ge.GemragError, 400),
    (ValueError, 400),
)
"""Exception class -> HTTP status; the first matching entry wins (subclasses before their bases)."""


def status_of(exc: BaseException) -> int:
    """The HTTP status for ``exc`` (:data:`STATUS`), 500 for anything else."""
    return next((code for kind, code in STATUS if isinstance(exc, kind)), 500)


def error_body(exc: BaseException) -> dict[str, str]:
    """The JSON body for ``exc``: ``{"error": class name, "detail": message}``."""
    return {"error": type(exc).__name__, "detail": str(exc) or type(exc).__name__}


def install_handlers(app: FastAPI) -> None:
    """Answer gemrag errors and the library's ``ValueError`` with their status (:func:`status_of`), and the
    framework's own HTTP errors (an unparsable body, an unknown route) with the same body shape."""

    async def handle(request: Request, exc: Exception) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, AuthError) else None
        return JSONResponse(error_body(exc), status_code=status_of(exc), headers=headers)

    async def handle_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        body = {"error": HTTPStatus(exc.status_code).phrase.replace(" ", ""), "detail": str(exc.detail)}
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    app.add_exception_handler(ge.GemragError, handle)
    app.add_exception_handler(ValueError, handle)
    app.add_exception_handler(HTTPException, handle_http)
