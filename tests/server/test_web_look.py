"""How the web page of ``gemrag serve`` reads, in Debian's chromium (the ``browser`` fixture, test doubles): every
tab in light and dark mode and on a 375 px screen, where nothing scrolls sideways and no table breaks a word across
lines (the cost plan and the jobs list become one card per row); each strategy explained where it
is chosen (what it builds, its LLM calls to index, when to use it), the default marked; a delete asks first and
"Keep it" keeps the document; a declined answer is shown as "not found in the memory", a weak citation as weak;
retrieve-only shows hits without an LLM call; the chat keeps its history across a reload and shows each reply's
recalled memories.

``$GEMRAG_WEB_SCREENSHOTS`` (a directory, read at import) saves a screenshot of each tab in each look there as
``web-<tab>-<light|dark|narrow>.png`` (the documentation's: ``docs/img``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_server_web import CAT, GARDEN, web_config
from test_web_page import QUESTION, TIMEOUT, ask_question, served

from fakes import HashEmbedder, StreamingLLM
from gemrag.config import Config

SHOTS = os.environ.get("GEMRAG_WEB_SCREENSHOTS")
"""Read at import: the ``config`` fixture clears every ``GEMRAG_*`` variable before the test runs."""
LOOKS = {
    "light": {"viewport": {"width": 1280, "height": 860}, "color_scheme": "light"},
    "dark": {"viewport": {"width": 1280, "height": 860}, "color_scheme": "dark"},
    "narrow": {"viewport": {"width": 375, "height": 740}, "color_scheme": "light"},
}
TABS = ["Documents", "Index", "Ask", "Chat", "Graph"]


HARBOUR = "The harbour froze in the winter of 1947. The ferry to the island stopped for six weeks."
"""The documents :func:`seed` adds after the builds: each strategy is then stale with new and deleted chunks."""


def _add(client: httpx.Client, text: str, title: str) -> None:
    r = client.post("/v1/namespaces/notes/documents", json={"documents": [{"text": text, "title": title}]})
    assert r.status_code == 201, r.text


def seed(url: str, stale: bool = False) -> None:
    """Two documents built with dense and bm25 through the API; ``stale``: then one removed and another added, so that
    both strategies are stale with the longest state line (new and deleted chunks, the generation)."""
    with httpx.Client(base_url=url, timeout=60) as client:
        _add(client, CAT, "cat")
        _add(client, GARDEN, "garden")
        for strategy in ("dense", "bm25"):
            job = client.post("/v1/namespaces/notes/index", json={"strategy": strategy}).json()
            for _ in range(600):
                if client.get(f"/v1/namespaces/notes/jobs/{job['id']}").json()["status"] not in ("queued", "running"):
                    break
                time.sleep(0.05)
        if stale:
            assert client.delete("/v1/namespaces/notes/documents/garden").status_code == 200
            _add(client, HARBOUR + " " + GARDEN, "harbour and garden")


def open_page(browser: Any, url: str, look: str) -> tuple[Any, Any, list[str]]:
    """A new context in ``look`` with the page open on namespace "notes"; also the list its script errors go to."""
    context = browser.new_context(**LOOKS[look])
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url + "/")
    page.wait_for_selector("body[data-ready='1']", timeout=TIMEOUT)
    page.fill("#ns", "notes")
    page.click("#ns-form button[type=submit]")
    # the switch reloads the rows the first load showed: wait until it is done, or its status overwrites a later one
    page.wait_for_selector("#documents[aria-busy='false']", timeout=TIMEOUT)
    page.wait_for_function("document.querySelectorAll('#documents tbody tr').length === 2", timeout=TIMEOUT)
    return context, page, errors


@contextmanager
def seeded_page(
    browser: Any, server: AbstractContextManager[str], look: str = "light", *, stale: bool = False
) -> Iterator[tuple[Any, list[str]]]:
    """The page in ``look`` (:func:`open_page`) on the server that ``server`` starts (:func:`~test_web_page.served`;
    its URL), seeded first (:func:`seed`, ``stale``): yields the page and the list its script errors go to, and closes
    the browser context at the end (then the server)."""
    with server as url:
        seed(url, stale=stale)
        context, page, errors = open_page(browser, url, look)
        try:
            yield page, errors
        finally:
            context.close()


def sideways(page: Any) -> int:
    """How many pixels the page scrolls sideways (0: none)."""
    return int(page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth"))


SPLIT_WORDS = """() => {
  const split = [];
  for (const cell of document.querySelectorAll("th, td")) {
    if (!cell.getClientRects().length) continue; // not shown
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const word of node.data.matchAll(/[A-Za-z]{2,}/g)) {
        const range = document.createRange();
        range.setStart(node, word.index);
        range.setEnd(node, word.index + word[0].length);
        const lines = new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top)));
        if (lines.size > 1) split.push(word[0]);
      }
    }
  }
  return split;
}"""
"""The words of the shown table cells that break across lines (letters only; a table squeezed below its words)."""


def split_words(page: Any) -> list[str]:
    """The words of the page's shown table cells (headers included) broken across two lines (empty: none)."""
    return list(page.evaluate(SPLIT_WORDS))


@pytest.mark.parametrize("look", list(LOOKS))
def test_every_tab_in_light_dark_and_narrow(browser: Any, tmp_path: Path, config: Config, look: str) -> None:
    llm = StreamingLLM("The keeper's cat is named Pilot [1].")
    server = served(tmp_path / "root", web_config(), embedder=HashEmbedder(), llm=llm)
    with seeded_page(browser, server, look, stale=True) as (page, errors):
        background = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
        for tab in TABS:
            page.get_by_role("tab", name=tab).click()
            if tab == "Index":
                page.locator("#index-strategies input[value='dense']").check()
                page.get_by_role("button", name="Show the cost plan").click()
                page.wait_for_selector("#plan-table", timeout=TIMEOUT)
            if tab == "Ask":
                ask_question(page, QUESTION)
                page.locator("#answer-text a.cite[data-marker='1']").click()
                page.locator("#reader-text mark#cited-span").wait_for(timeout=TIMEOUT)
            if tab == "Chat":
                page.fill("#chat-message", "Tell me about the cat.")
                page.click("#chat-send")
                page.wait_for_selector("#chat-log li.exchange", timeout=TIMEOUT)
            if tab == "Graph":
                page.get_by_role("button", name="Show the graph").click()
                page.frame_locator("#graph-frame").locator("body[data-ready='1']").wait_for(timeout=TIMEOUT)
            assert sideways(page) == 0, f"{tab} scrolls sideways in {look}"
            assert split_words(page) == [], f"{tab} breaks words of its tables in {look}"
            if SHOTS:
                Path(SHOTS).mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(Path(SHOTS) / f"web-{tab.lower()}-{look}.png"), full_page=look != "narrow")
        if look == "narrow":
            page.get_by_role("tab", name="Documents").click()
            delete = page.get_by_role("button", name="Delete cat")
            box = delete.bounding_box()
            assert box is not None and box["x"] + box["width"] <= 375  # Delete on screen
    assert errors == []
    dark = background not in ("rgb(255, 255, 255)", "rgba(0, 0, 0, 0)")
    assert dark == (look == "dark"), background


def test_strategies_explained_delete_asks_and_answer_states(browser: Any, tmp_path: Path, config: Config) -> None:
    llm = StreamingLLM("The text does not mention the lighthouse's colour.")
    server = served(tmp_path / "root", web_config(), embedder=HashEmbedder(), llm=llm)
    with seeded_page(browser, server) as (page, errors):
        page.get_by_role("tab", name="Index").click()
        gem = page.inner_text("#index-strategies label[data-strategy='gem']")
        assert "one LLM call per chunk" in gem and "use it for" in gem, gem
        dense = page.inner_text("#index-strategies label[data-strategy='dense']")
        assert "no LLM call to index" in dense and "default" in dense.lower(), dense  # web_config's default
        assert "never built never built" not in page.inner_text("#index-strategies")

        page.get_by_role("tab", name="Documents").click()
        page.get_by_role("button", name="Delete cat").click()
        page.locator("dialog#confirm").wait_for()
        page.click("#confirm-cancel")
        # the dialog's close event, which settles the confirmation, is queued as a task after the click returns
        page.wait_for_function("document.querySelector('#status').innerText.includes('kept')", timeout=TIMEOUT)
        assert page.locator("#documents tbody tr").count() == 2  # kept

        page.get_by_role("tab", name="Ask").click()
        page.fill("#question", "What colour is the lighthouse?")
        page.click("#retrieve-button")
        page.wait_for_function("document.querySelectorAll('#hits > li').length > 0", timeout=TIMEOUT)
        assert "no LLM call" in page.inner_text("#answer-meta")
        assert llm.calls == 0
        page.click("#ask-button")
        page.wait_for_selector("#answer-state [data-state='not-found']", timeout=TIMEOUT)
        assert "Not found in the memory" in page.inner_text("#answer-state")
        assert page.inner_text("#hits-order")  # the order of the hits is said
    assert errors == []


def test_the_chat_keeps_its_history_and_shows_its_memories(browser: Any, tmp_path: Path, config: Config) -> None:
    server = served(tmp_path / "root", web_config(), embedder=HashEmbedder(), llm=StreamingLLM())
    with seeded_page(browser, server) as (page, errors):
        page.get_by_role("tab", name="Chat").click()
        page.fill("#persona", "Keeper")
        for n, message in enumerate(("What is the cat named?", "Where does Pilot sleep?"), start=1):
            page.fill("#chat-message", message)
            page.click("#chat-send")
            page.wait_for_function(
                f"document.querySelectorAll('#chat-log li.exchange').length === {n}", timeout=TIMEOUT
            )
        last = page.locator("#chat-log li.exchange").last
        assert "Where does Pilot sleep?" in last.inner_text() and "Keeper:" in last.inner_text()
        assert "Recalled" in last.locator("details.recalled summary").inner_text()
        last.locator("details.recalled summary").click()
        assert "Pilot" in last.locator("details.recalled").inner_text()  # the memory the reply was given
        page.reload()
        page.wait_for_selector("body[data-ready='1']", timeout=TIMEOUT)
        page.get_by_role("tab", name="Chat").click()
        page.fill("#persona", "Keeper")
        page.click("#chat-load")
        page.wait_for_function("document.querySelectorAll('#chat-log li.exchange').length === 2", timeout=TIMEOUT)
        assert "What is the cat named?" in page.inner_text("#chat-log")
    assert errors == []
