"""The memory view in a real headless browser (issue 13, item 1): Debian's chromium (``apt-get install chromium``)
driven by playwright through ``executable_path``; nothing downloads a browser. The page must load with no console
error and no network request, show every node, and show a node's text when it is clicked. The screenshot is kept
as an artefact: ``$GEMRAG_VIEW_SCREENSHOT`` when set, else ``view.png`` in the test's tmp dir.

Under ``CI=true`` a missing chromium or playwright fails the test (:func:`realparts.require_real`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gemrag.config import Config
from gemrag.view import retrieval_path, view_data, write_html
from realparts import require_real
from test_view_data import QUESTION, build_gem_memory

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOT = os.environ.get("GEMRAG_VIEW_SCREENSHOT")
"""Read at import: the ``config`` fixture clears every ``GEMRAG_*`` variable before the test runs."""
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _browser(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)


def test_view_in_chromium(tmp_path: Path, config: Config) -> None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require_real("playwright is not installed: pip install -e '.[test]'")
    if not CHROMIUM.exists():
        require_real("Debian's chromium is missing: apt-get install -y chromium")

    with build_gem_memory(tmp_path / "m", config) as mem:
        hits = mem.retrieve(QUESTION, 4)
        data = view_data(mem.store, "gem", gem_settings=config.gem, path=retrieval_path(QUESTION, "gem", hits))
    page_file = write_html(data, tmp_path / "memory.html", "gemrag test memory")
    shot = Path(SCREENSHOT or tmp_path / "view.png")

    errors: list[str] = []
    requests: list[str] = []
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url) if not r.url.startswith("file:") else None)
            page.goto(page_file.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=60_000)

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
            browser.close()
    assert errors == []
    assert requests == []  # offline: the page fetched nothing
    assert shot.stat().st_size > 10_000
