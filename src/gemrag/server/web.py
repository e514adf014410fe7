"""The web page of ``gemrag serve``: a place to work with a memory in a browser, served at ``/``.

The page is plain HTML, CSS and JavaScript shipped as package data in ``gemrag/server/web/`` (``index.html``,
``app.css``, and one script per job: ``core.js`` the API client and helpers, ``strategies.js``, ``documents.js``,
``indexing.js``, ``ask.js``, ``notes.js`` the notes under an answer, ``chat.js``, ``app.js`` the tabs, the graph and the
start; no framework, no build step, nothing fetched from another origin), so it works offline.
It speaks only to the JSON API under ``/v1`` of the same server, with the API key the user entered once per browser
session as the bearer key, and shows:

* documents: each document's title, source, version, chunk count and per strategy built / stale / never built
  (``GET .../build-state``); upload or paste text; delete, with the purge option;
* index: the chosen strategies' cost plan (``POST .../index/plan``), then jobs one strategy after another, their
  stages and progress polled live, cancel (``POST .../jobs/{id}/cancel``);
* ask: the answer streamed token by token (``POST .../ask`` with ``"stream": true``), its ``[n]`` markers as links
  to the hits; a cited passage opens its document (``GET .../documents/{id}/text``) with the passage's character
  span marked; every hit with score, strategy, document and span, derived nodes with their member passages;
  latency, tokens and calls;
* graph: the memory view of a strategy (``GET .../view``, :mod:`gemrag.view`) with the last question's
  retrieval path, in a sandboxed frame.

Routes (outside the OpenAPI schema): ``GET /`` the page, ``GET /web/{file}`` its assets.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from gemrag.memory import Memory
from gemrag.view import render_html, retrieval_path, view_data

__all__ = ["ASSETS", "HTML_RESPONSE", "PAGE_HEADERS", "install_web", "memory_view", "page_html"]

ASSETS = "web"
"""The folder of the page's files inside the :mod:`gemrag.server` package."""

PAGE_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
"""Headers of the page: revalidated on each load, never framed by another site, no referrer sent."""

HTML_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "A self-contained HTML page (no external reference).",
        "content": {"text/html": {"schema": {"type": "string"}}},
    }
}
"""The OpenAPI entry of a route answering with an HTML page."""


def page_html() -> str:
    """The page's HTML (``web/index.html``, package data)."""
    return resources.files("gemrag.server").joinpath(ASSETS).joinpath("index.html").read_text(encoding="utf-8")


def install_web(app: FastAPI) -> None:
    """Serve the page at ``/`` and its assets at ``/web/`` (both left out of the OpenAPI schema)."""
    app.mount("/web", StaticFiles(packages=[("gemrag.server", ASSETS)]), name="web")

    @app.get("/", include_in_schema=False, response_class=HTMLResponse)
    def page() -> HTMLResponse:
        """The web page."""
        return HTMLResponse(page_html(), headers=PAGE_HEADERS)


def memory_view(memory: Memory, namespace: str, strategy: str | None, question: str | None, budget: int | None) -> str:
    """The memory view page (:func:`gemrag.view.render_html`) of a strategy's published graph in ``memory``.

    Args:
        memory: an open memory (read-only is enough). namespace: its name, in the page title.
        strategy: the strategy whose graph to show (None: the memory's configured one).
        question: when given, its retrieval (``budget`` nodes, default the strategy's) is highlighted.

    Returns:
        The HTML text.

    Raises:
        MemoryNotIndexedError: a question is given and the strategy has no build to retrieve from.
        GemragError: the view's graph library (the ``view`` extra, pyvis) is not installed.
    """
    name = strategy or memory.strategy.name
    path = None
    if question is not None:
        path = retrieval_path(question, name, memory.retrieve(question, budget, name))
    data = view_data(memory.store, name, config=memory.config, path=path)
    return render_html(data, f"{namespace} · {name}")
