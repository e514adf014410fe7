"""The server's trace context: each HTTP request is one ``SERVER`` span that continues the caller's trace.

The request's W3C Trace Context headers (``traceparent``, ``tracestate``: https://www.w3.org/TR/trace-context/) are
read with OpenTelemetry's propagator API and the request's span is opened under them, so the spans of the retrieval,
the answer and the model calls (run in FastAPI's thread pool, which copies the context) join the caller's trace. A
request without ``traceparent`` starts a new trace.

FastAPI versions with native OpenTelemetry support (the ``fastapi.telemetry`` package) do exactly this themselves
once a tracer provider is set; :func:`install` then adds nothing. With an older FastAPI it adds
:class:`TraceContextMiddleware`, an ASGI middleware doing the same (:func:`gemrag.tracing.traced_context`). Without
OpenTelemetry installed neither records anything.

The span follows the HTTP server conventions (https://opentelemetry.io/docs/specs/semconv/http/http-spans/): named
``<method> <route>`` once the route is known (``POST /v1/namespaces/{ns}/ask``), with ``http.request.method``,
``url.path``, ``http.route`` and ``http.response.status_code``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import FastAPI

from gemrag import tracing

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class TraceContextMiddleware:
    """ASGI middleware: one span per HTTP request, a child of the incoming ``traceparent`` (see the module).

    Args:
        app: the ASGI application to wrap.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection; HTTP requests are traced, other scopes (lifespan) pass through."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        method = scope.get("method", "GET")
        attributes = {"http.request.method": method, "url.path": scope.get("path", "")}
        with tracing.traced_context(headers), tracing.span(f"{method}", attributes, kind="SERVER") as span:

            async def traced_send(message: Message) -> None:
                if message["type"] == "http.response.start":
                    span.set_attribute("http.response.status_code", int(message["status"]))
                await send(message)

            try:
                await self.app(scope, receive, traced_send)
            finally:
                route = getattr(scope.get("route"), "path", None)  # set by the router once it matched
                if route and span.is_recording():
                    span.set_attribute("http.route", route)
                    span.update_name(f"{method} {route}")


def fastapi_traces_requests() -> bool:
    """True when the installed FastAPI has native OpenTelemetry support (``fastapi.telemetry``): a server span per
    request under the incoming ``traceparent``, once a tracer provider is set."""
    return importlib.util.find_spec("fastapi.telemetry") is not None


def install(app: FastAPI) -> None:
    """Make each request of ``app`` a span continuing the caller's trace: FastAPI's own telemetry when it has it
    (:func:`fastapi_traces_requests`), else :class:`TraceContextMiddleware`."""
    if not fastapi_traces_requests():
        app.add_middleware(TraceContextMiddleware)
