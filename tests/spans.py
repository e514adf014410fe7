"""OpenTelemetry's in-memory span exporter for the tests of gemrag's traces (:mod:`gemrag.tracing`).

The global tracer provider can be set once per process: :func:`memory_exporter` sets an SDK provider exporting to one
:class:`InMemorySpanExporter` the first time, and hands out that exporter, cleared, every time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

_exporter: Any = None


def memory_exporter() -> Any:
    """The process's in-memory exporter (cleared); skips the test when the OpenTelemetry SDK is not installed."""
    global _exporter
    pytest.importorskip("opentelemetry.sdk.trace", reason="the OpenTelemetry SDK (gemrag[otel]) is not installed")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    if _exporter is None:
        _exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_exporter))
        trace.set_tracer_provider(provider)
    _exporter.clear()
    return _exporter


def by_name(spans: Sequence[Any], name: str) -> list[Any]:
    """The finished spans called ``name``."""
    return [s for s in spans if s.name == name]


def one(spans: Sequence[Any], name: str) -> Any:
    """The one finished span called ``name`` (fails when there are none or several)."""
    found = by_name(spans, name)
    assert len(found) == 1, f"{len(found)} spans called {name!r}: {sorted({s.name for s in spans})}"
    return found[0]


def parent_of(spans: Sequence[Any], span: Any) -> Any:
    """The finished span that is ``span``'s parent (None for a root, or a parent not among ``spans``: a remote one)."""
    if span.parent is None:
        return None
    return next((s for s in spans if s.context.span_id == span.parent.span_id), None)


def ancestors(spans: Sequence[Any], span: Any) -> list[str]:
    """The names of ``span``'s ancestors, nearest first."""
    out = []
    node = parent_of(spans, span)
    while node is not None:
        out.append(node.name)
        node = parent_of(spans, node)
    return out
