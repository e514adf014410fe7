"""The memory view in a real headless browser (issue 13, item 1): Debian's chromium (``apt-get install chromium``)
driven by playwright through ``executable_path`` (the ``browser`` fixture, :mod:`browserhelp`); nothing downloads a
browser. The page must load with no console error and no network request, show every node, and show a node's text
when it is clicked. The screenshot is kept
as an artefact: ``$GEMRAG_VIEW_SCREENSHOT`` when set, else ``view.png`` in the test's tmp dir.

Under ``CI=true`` a missing chromium or playwright fails the test (:func:`realparts.require_real`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from test_strategy_remem import DOCS as REMEM_DOCS
from test_view_data import QUESTION, build_gem_memory

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config, load_config
from gemrag.view import retrieval_path, view_data, write_html

SCREENSHOT = os.environ.get("GEMRAG_VIEW_SCREENSHOT")
"""Read at import: the ``config`` fixture clears every ``GEMRAG_*`` variable before the test runs."""


class Page:
    """A page of the browser opened on an HTML file, recording console errors and non-file requests."""

    def __init__(self, browser: Any, html: Path) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page = browser.new_page(viewport={"width": 1280, "height": 800})
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url) if not r.url.startswith("file:") else None)
        self.page.goto(html.as_uri())
        self.page.wait_for_selector("body[data-ready='1']", timeout=60_000)


def test_view_in_chromium(browser: Any, tmp_path: Path, config: Config) -> None:
    with build_gem_memory(tmp_path / "m", config) as mem:
        hits = mem.retrieve(QUESTION, 4)
        data = view_data(mem.store, "gem", config=config, path=retrieval_path(QUESTION, "gem", hits))
    page_file = write_html(data, tmp_path / "memory.html", "gemrag test memory")
    shot = Path(SCREENSHOT or tmp_path / "view.png")

    opened = Page(browser, page_file)
    errors, requests, page = opened.errors, opened.requests, opened.page
    try:
        assert page.get_attribute("#counts", "data-nodes") == str(len(data.nodes))
        assert page.evaluate("window.gemragView.nodes.length") == len(data.nodes)
        assert page.evaluate("Object.keys(window.gemragView.network.getPositions()).length") == len(data.nodes)
        assert page.locator("#path-panel ol.steps li").count() == len(hits)

        # a real mouse click on a chunk that is not on the path (its text is unique to it)
        target = next(n for n in data.nodes if n["kind"] == "chunk" and n["id"] not in {h.node_id for h in hits})
        point = page.evaluate(
            """id => { const net = window.gemragView.network;
                       const p = net.canvasToDOM(net.getPositions([id])[id]);
                       const box = document.getElementById('graph').getBoundingClientRect();
                       return {x: box.left + p.x, y: box.top + p.y}; }""",
            target["id"],
        )
        page.mouse.click(point["x"], point["y"])
        page.wait_for_selector("#node-text")
        assert page.inner_text("#node-text").split() == target["text"].split()
        for question in target["questions"]:
            assert question in page.inner_text("#details")

        # the search box finds nodes by their text
        page.fill("#search", "lighthouse")
        assert "match" in page.inner_text("#search-count")
        page.fill("#search", "")
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot))
    finally:
        page.close()
    assert errors == []
    assert requests == []  # offline: the page fetched nothing
    assert shot.stat().st_size > 10_000


def test_remem_graph_in_chromium(browser: Any, tmp_path: Path, config: Config) -> None:
    # `config`: the fixture isolates the environment (no GEMRAG_* variables, cwd = tmp_path)
    cfg = load_config(None, {"memory": {"chunk_tokens": 40}, "strategy": "remem"})
    with Memory.open(tmp_path / "r", cfg, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        for doc in REMEM_DOCS:
            mem.add_text(doc)
        mem.index(strategy="remem")
        question = "Where did the father of Alma Reyes die?"
        path = retrieval_path(question, "remem", mem.retrieve(question, 3, strategy="remem"))
        data = view_data(mem.store, "remem", path=path)
    opened = Page(browser, write_html(data, tmp_path / "remem.html", "remem"))
    try:
        assert opened.page.get_attribute("#counts", "data-nodes") == str(len(data.nodes))
        assert opened.page.evaluate("window.gemragView.edges.length") == len(data.edges)
        entity = next(n for n in data.nodes if n["kind"] == "entity")
        opened.page.evaluate("id => window.gemragView.focusNode(id)", entity["id"])
        assert opened.page.inner_text("#node-text") == entity["text"]
        assert "walk" not in opened.page.inner_text("#path")  # PPR reports no walk
    finally:
        opened.page.close()
    assert opened.errors == [] and opened.requests == []
