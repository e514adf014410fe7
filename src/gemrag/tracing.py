"""OpenTelemetry traces of gemrag's work, at no cost when OpenTelemetry is absent.

gemrag opens a span per CLI command, index run and phase (chunking, each strategy's build and each of its LLM
passes, publishing), LLM call, embedding batch, retrieval and answer (docs/architecture.md, "Traces"). The spans
carry the attributes of the OpenTelemetry semantic conventions for generative AI (``gen_ai.operation.name``,
``gen_ai.system``, ``gen_ai.request.model``, ``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``:
https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/) and gemrag's own (``gemrag.cache_hit``,
``gemrag.strategy``, ``gemrag.memory``, node counts).

The OpenTelemetry API is imported on the first span, and only if it is installed (``pip install "gemrag[otel]"``);
without it every function here returns a do-nothing object and gemrag imports nothing more. With it but while no
tracer provider is set, spans are the same do-nothing object (no OpenTelemetry call). Nothing is sent anywhere
unless the user configures an exporter: a program embedding gemrag sets its own tracer provider, and the ``gemrag``
command and server call :func:`configure_from_env`, which reads the standard ``OTEL_*`` environment variables.

This module imports nothing of gemrag (the lowest layer), so every layer may trace.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from importlib.metadata import entry_points
from typing import Any, Protocol, TypeVar

__all__ = [
    "Span",
    "configure_from_env",
    "current",
    "each_within",
    "gen_ai_attributes",
    "span",
    "start_span",
    "traced_context",
    "usage_attributes",
]

AttributeValue = str | bool | int | float | Sequence[str] | Sequence[bool] | Sequence[int] | Sequence[float]
"""A span attribute's value (OpenTelemetry's ``AttributeValue``: a primitive or a homogeneous sequence)."""

TRACER_NAME = "gemrag"
"""The instrumentation scope of gemrag's spans."""


class Span(Protocol):
    """What gemrag calls on a span: OpenTelemetry's ``Span``, or :class:`_NoSpan` when OpenTelemetry is absent."""

    def set_attribute(self, key: str, value: AttributeValue) -> None: ...
    def set_attributes(self, attributes: Mapping[str, AttributeValue]) -> None: ...
    def is_recording(self) -> bool: ...
    def update_name(self, name: str) -> None: ...
    def end(self) -> None: ...


class _NoSpan:
    """The span of a process without OpenTelemetry (or without a tracer provider): every method does nothing, and as
    a context manager it is itself."""

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        return None

    def set_attributes(self, attributes: Mapping[str, AttributeValue]) -> None:
        return None

    def is_recording(self) -> bool:
        return False

    def update_name(self, name: str) -> None:
        return None

    def end(self) -> None:
        return None


NO_SPAN = _NoSpan()
_UNSET: Any = object()
_api: Any = _UNSET  # opentelemetry.trace once imported, None when it is not installed
_tracer: Any = None  # (the provider, gemrag's tracer of it)


def _trace_api() -> Any:
    """The module ``opentelemetry.trace``, imported on first use; None when OpenTelemetry is not installed."""
    global _api
    if _api is _UNSET:
        try:
            from opentelemetry import trace
        except ImportError:
            trace = None  # type: ignore[assignment]
        _api = trace
    return _api


def _active_tracer() -> Any:
    """gemrag's tracer of the global tracer provider; None without OpenTelemetry, or while no provider is set (the
    API's proxy and no-op providers record nothing, so gemrag skips even their no-op spans)."""
    global _tracer
    trace = _trace_api()
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    if _tracer is None or _tracer[0] is not provider:
        _tracer = (provider, provider.get_tracer(TRACER_NAME))
    return _tracer[1]


def _clean(attributes: Mapping[str, Any] | None) -> dict[str, AttributeValue]:
    """``attributes`` without the None values (OpenTelemetry drops them with a warning)."""
    return {k: v for k, v in (attributes or {}).items() if v is not None}


def span(
    name: str, attributes: Mapping[str, Any] | None = None, *, kind: str = "INTERNAL"
) -> AbstractContextManager[Span]:
    """Open a span as the current one for a ``with`` block (its children are the spans opened inside it).

    An exception leaving the block is recorded on the span (status ERROR) and raised again.

    Args:
        name: the span name (e.g. ``"gemrag.retrieve"``, ``"chat <model>"``).
        attributes: initial attributes (None values are left out).
        kind: ``"INTERNAL"``, ``"CLIENT"`` (a model call) or ``"SERVER"`` (an incoming request).

    Returns:
        A context manager yielding the span (set more attributes on it); without OpenTelemetry or without a tracer
        provider, the do-nothing :data:`NO_SPAN` (no OpenTelemetry call at all).
    """
    tracer = _active_tracer()
    if tracer is None:
        return NO_SPAN
    return tracer.start_as_current_span(name, kind=getattr(_api.SpanKind, kind), attributes=_clean(attributes))


def start_span(name: str, attributes: Mapping[str, Any] | None = None, *, kind: str = "INTERNAL") -> Span:
    """Start a span that is a child of the current one but is not made current; the caller ends it with ``end()``.

    For work that a generator does across its ``yield``s (an LLM batch answered piece by piece), where attaching a
    context inside the generator would leak into the consumer's code between two items.

    Args:
        name, attributes, kind: as :func:`span`.

    Returns:
        The started span, or the do-nothing :data:`NO_SPAN` without OpenTelemetry or a tracer provider.
    """
    tracer = _active_tracer()
    if tracer is None:
        return NO_SPAN
    return tracer.start_span(name, kind=getattr(_api.SpanKind, kind), attributes=_clean(attributes))


def current(span: Span) -> AbstractContextManager[Any]:
    """Make ``span`` (from :func:`start_span`) the current span for a ``with`` block without ending it, so the spans
    opened inside are its children: for one step of a generator's work at a time, never across a ``yield``.

    Args:
        span: a started span (the do-nothing one: the block runs as it is).
    """
    if span is NO_SPAN or _api is None or _api is _UNSET:
        return NO_SPAN
    return _api.use_span(span, end_on_exit=False)


T = TypeVar("T")
_END = object()


def each_within(span: Span, items: Iterator[T], each: Callable[[T], None] | None = None) -> Generator[T, None, None]:
    """Yield the items of ``items`` with ``span`` current while each one is produced (:func:`current`, so the spans
    opened by that step are its children; never across a ``yield``), and end ``span`` when the items end, fail, or
    this generator is closed (which first closes ``items`` when it can be closed).

    Args:
        span: a started span (:func:`start_span`), ended here.
        items: the work, one item per step (e.g. an answer's text pieces, then the answer).
        each: called with every item before it is yielded (e.g. to set attributes from the last one).
    """
    try:
        while True:
            with current(span):
                item = next(items, _END)
            if item is _END:
                return
            if each is not None:
                each(item)  # type: ignore[arg-type]
            yield item  # type: ignore[misc]
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()
        span.end()


def usage_attributes(usage: Any) -> dict[str, AttributeValue]:
    """The ``gemrag.usage.*`` attributes of a summed model usage (a :class:`gemrag.models.base.Usage`: prompt,
    completion and embedding tokens, backend calls, cache hits), e.g. of a retrieval and its answer."""
    keys = ("prompt_tokens", "completion_tokens", "embedding_tokens", "calls", "cached")
    return {f"gemrag.usage.{k}": int(getattr(usage, k)) for k in keys}


def gen_ai_attributes(
    operation: str,
    model_id: str,
    *,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cache_hit: bool | None = None,
) -> dict[str, AttributeValue]:
    """The GenAI semantic-convention attributes of one model call.

    Args:
        operation: ``gen_ai.operation.name``: ``"chat"`` for an LLM call, ``"embeddings"`` for an embedding batch.
        model_id: gemrag's model id (``"llama.cpp:<name>-<quant>:<sha>"``, ``"openai:<base_url>:<model>"``,
            ``"onnx:all-MiniLM-L6-v2-int8"``): ``gen_ai.request.model``, and its prefix ``gen_ai.system`` (also
            given as ``gen_ai.provider.name``, the newer conventions' name for it).
        input_tokens, output_tokens: ``gen_ai.usage.input_tokens`` (prompt or embedded tokens) and
            ``gen_ai.usage.output_tokens`` (completion tokens); for a cache hit the tokens of the original call.
        cache_hit: ``gemrag.cache_hit``: True when the persistent cache answered (no model ran).

    Returns:
        The attributes, without the ones given as None.
    """
    system = model_id.split(":", 1)[0] if ":" in model_id else model_id
    out: dict[str, Any] = {
        "gen_ai.operation.name": operation,
        "gen_ai.system": system,
        "gen_ai.provider.name": system,
        "gen_ai.request.model": model_id,
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
        "gemrag.cache_hit": cache_hit,
    }
    return _clean(out)


@contextmanager
def traced_context(carrier: Mapping[str, str]) -> Iterator[None]:
    """Make the trace context of an incoming request's headers current for the block (W3C ``traceparent`` and
    ``tracestate``, read by the globally configured propagator, W3C Trace Context by default).

    Without a ``traceparent`` the block gets an empty context, so its spans start a new trace (not one under a
    span the serving process happens to have open). Without OpenTelemetry: does nothing.

    Args:
        carrier: the request's headers, keys in lower case.
    """
    if _trace_api() is None:
        yield
        return
    from opentelemetry import context, propagate

    token = context.attach(propagate.extract(carrier))
    try:
        yield
    finally:
        context.detach(token)


_configured = False


def configure_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """Set up a tracer provider exporting to what the standard ``OTEL_*`` variables name, if they name anything.

    A provider is set up when OpenTelemetry's SDK is installed, no tracer provider was set before (a program that
    embeds gemrag keeps its own), ``OTEL_SDK_DISABLED`` is not ``true``, and ``OTEL_TRACES_EXPORTER`` names
    exporters (comma-separated, e.g. ``otlp`` or ``console``; ``none``: none) or, when it is unset,
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set (then ``otlp``). Exporters are
    found by name as the SDK's own auto-configuration finds them (entry points ``opentelemetry_traces_exporter``;
    ``otlp`` is ``otlp_proto_grpc``, or ``otlp_proto_http`` when ``OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL`` is
    ``http/protobuf``); each reads its own variables (endpoint, headers, timeout). The resource reads
    ``OTEL_SERVICE_NAME`` (default ``gemrag``) and ``OTEL_RESOURCE_ATTRIBUTES``, the sampler ``OTEL_TRACES_SAMPLER``.
    Spans are batched and flushed at exit.

    Args:
        environ: the variables (default ``os.environ``).

    Returns:
        True when a provider was set up by this call or an earlier one.

    Raises:
        ValueError: an exporter name no installed package provides, or an unknown OTLP protocol.
    """
    global _configured
    env = os.environ if environ is None else environ
    if _configured:
        return True
    names = _exporter_names(env)
    if not names or env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" or _trace_api() is None:
        return False
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:  # the API without the SDK: nothing can export
        return False
    trace = _trace_api()
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return False  # the embedding program set its own provider
    exporters = [_exporter_class(name)() for name in names]
    service = {"service.name": env.get("OTEL_SERVICE_NAME") or "gemrag"}
    provider = TracerProvider(resource=Resource.create(service))
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    _configured = True
    return True


_OTLP_BY_PROTOCOL = {"grpc": "otlp_proto_grpc", "http/protobuf": "otlp_proto_http"}


def _exporter_names(env: Mapping[str, str]) -> list[str]:
    """The entry-point names of the trace exporters the variables ask for (see :func:`configure_from_env`)."""
    raw = env.get("OTEL_TRACES_EXPORTER")
    if raw is None:
        endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        raw = "otlp" if endpoint else ""
    names = [n.strip() for n in raw.split(",") if n.strip() and n.strip().lower() != "none"]
    protocol = (env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "").strip()
    if protocol and protocol not in _OTLP_BY_PROTOCOL:
        raise ValueError(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r}: use grpc or http/protobuf")
    otlp = _OTLP_BY_PROTOCOL.get(protocol, "otlp_proto_grpc")
    return list(dict.fromkeys(otlp if n == "otlp" else n for n in names))


def _exporter_class(name: str) -> Any:
    """The span-exporter class an installed package registers under ``name``.

    Raises:
        ValueError: no installed package provides it.
    """
    found = list(entry_points(group="opentelemetry_traces_exporter", name=name))
    if not found:
        hint = " (pip install opentelemetry-exporter-otlp)" if name.startswith("otlp") else ""
        raise ValueError(f"OTEL_TRACES_EXPORTER names {name!r}, which no installed package provides{hint}")
    return found[0].load()
