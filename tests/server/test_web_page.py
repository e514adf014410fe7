"""The web page of ``gemrag serve`` end to end in Debian's chromium (issue 56): a real uvicorn server on loopback,
the page opened at ``/``, driven like a person would (the ``browser`` fixture, :mod:`browserhelp`).

The flow: open a namespace, upload two texts, see the cost plan, index them with ``dense`` and watch the job
succeed, ask a question, see the answer stream in token by token, click its ``[1]`` citation and find the span
holding the answer marked in the document, see the graph with the retrieval path, delete the document (with
purge), ask again and no longer find it. With test doubles (HashEmbedder, StreamingLLM) in the unit test; with the
real MiniLM and the real Qwen2.5-Coder-0.5B in the integration test. The page may request nothing but its own
origin, and its files reference no external URL. Keys: with key A the page never shows namespace B's documents
(the 403 is shown as a message).

``$GEMRAG_WEB_SCREENSHOT`` (read at import) saves a screenshot of the page after the citation click (the README's).
Under ``CI=true`` a missing chromium or playwright fails the test (:func:`realparts.require_real`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from test_server_web import CAT, GARDEN, web_config

from fakes import HashEmbedder, StreamingLLM
from gemrag.config import Config, load_config
from gemrag.server import KeyRing, create_app
from realparts import require_small_model
from serverhelp import running

SCREENSHOT = os.environ.get("GEMRAG_WEB_SCREENSHOT")
"""Read at import: the ``config`` fixture clears every ``GEMRAG_*`` variable before the test runs."""
QUESTION = "What is the keeper's cat named?"
TIMEOUT = 60_000  # ms, for the fake flow; the real model gets more


class WebPage:
    """A browser page on the server at ``url``, recording console errors and every request it makes."""

    def __init__(self, browser: Any, url: str, key: str | None = None) -> None:
        self.url = url
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.context = browser.new_context(viewport={"width": 1400, "height": 900})
        self.page = self.context.new_page()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(url + "/")
        self.page.wait_for_selector("body[data-ready='1']", timeout=TIMEOUT)
        if key is not None:
            self.page.fill("#key", key)
            self.page.click("#key-form button[type=submit]")

    def tab(self, name: str) -> None:
        self.page.get_by_role("tab", name=name).click()

    def open_namespace(self, ns: str) -> None:
        self.page.fill("#ns", ns)
        self.page.click("#ns-form button[type=submit]")
        # done when the switch is (the table's aria-busy): a status of the namespace shown before does not count
        self.page.wait_for_selector("#documents[aria-busy='false']", timeout=TIMEOUT)
        self.page.wait_for_function(f"document.getElementById('status').textContent.includes({ns!r})")

    def close(self) -> None:
        self.context.close()

    def foreign_requests(self) -> list[str]:
        """Requests to anything but the page's own origin (``data:`` URLs are not requests)."""
        return [u for u in self.requests if not u.startswith(self.url + "/") and not u.startswith("data:")]

    def unexpected_errors(self) -> list[str]:
        """Console errors other than the 404 of a namespace that holds no memory yet (the page asks, then says so)."""
        return [e for e in self.errors if "status of 404" not in e]


ANSWERED = "document.getElementById('answer-meta').textContent.includes('Retrieval')"
"""A condition for ``page.wait_for_function``: the answer is final (its meta line names the retrieval)."""
ANSWER_ENDED = "document.getElementById('answer').getAttribute('aria-busy') === 'false'"
"""A condition for ``page.wait_for_function``: the answer box is no longer busy (an answer, none, or an error)."""


def ask_question(
    page: Any, question: str, *, strategy: str | None = None, until: str | None = ANSWERED, timeout: int = TIMEOUT
) -> None:
    """On ``page`` (a playwright page showing the web page), open the Ask tab, choose ``strategy`` (None: the page's
    default), ask ``question`` and wait (``timeout`` ms) until the JavaScript condition ``until`` holds (None: no
    wait)."""
    page.get_by_role("tab", name="Ask").click()
    if strategy is not None:
        page.select_option("#ask-strategy", strategy)
    page.fill("#question", question)
    page.click("#ask-button")
    if until is not None:
        page.wait_for_function(until, timeout=timeout)


def ask(web: WebPage, timeout: int) -> dict[str, Any]:
    """Ask :data:`QUESTION` on the Ask tab and wait for the final answer; returns what the answer box showed while the
    model was writing (``seen``: its successive texts) and the hits' texts."""
    page = web.page
    page.evaluate(
        """() => { const box = document.getElementById('answer-text'); window.seen = [];
                   new MutationObserver(() => window.seen.push(box.textContent))
                     .observe(box, {childList: true, characterData: true, subtree: true}); }"""
    )
    ask_question(page, QUESTION, timeout=timeout)
    return {
        "seen": page.evaluate("window.seen"),
        "text": page.inner_text("#answer-text"),
        "hits": page.locator("#hits .hit-text").all_inner_texts(),
    }


def run_flow(web: WebPage, answer_word: str, timeout: int = TIMEOUT) -> None:
    """The issue's flow on the page (module docstring); ``answer_word``: a word the cited span must hold."""
    page = web.page
    web.open_namespace("notes")
    page.set_input_files(
        "#files",
        files=[
            {"name": "cat.txt", "mimeType": "text/plain", "buffer": CAT.encode()},
            {"name": "garden.md", "mimeType": "text/markdown", "buffer": GARDEN.encode()},
        ],
    )
    page.get_by_role("button", name="Upload").click()
    page.wait_for_function("document.querySelectorAll('#documents tbody tr').length === 2", timeout=timeout)
    assert page.locator("#documents tbody tr").first.inner_text().startswith("cat\tupload:cat.txt\t1\tnot chunked")

    web.tab("Index")
    page.get_by_role("checkbox", name=re.compile(r"^ ?dense ")).check()
    page.get_by_role("button", name="Show the cost plan").click()
    page.wait_for_selector("#plan-table tr.plan-strategy[data-strategy='dense']", timeout=timeout)
    assert page.inner_text("#plan-table tr.plan-strategy").split("\t")[2] == "0"  # dense makes no LLM call
    page.get_by_role("button", name="Start indexing").click()
    page.wait_for_selector(".job-status[data-status='succeeded']", timeout=timeout)
    job = page.inner_text("#job")  # dense reports no stage; its plan and its report are shown
    assert "Plan: 0 LLM calls" in job and re.search(r"2 documents, \d+ chunks \(\d+ new\)", job), job
    web.tab("Documents")
    page.wait_for_function(
        "document.querySelectorAll('#documents tbody [data-strategy=dense][data-state=built]').length === 2"
    )
    assert "dense: built" in page.inner_text("#documents tbody tr")

    first = ask(web, timeout)
    final = first["text"]
    assert final.strip()
    streamed = first["seen"][:-1]  # what the box showed before the final answer replaced it (markers linked)
    assert len(streamed) >= 2 and streamed[0], first["seen"]  # it appeared piece by piece, growing
    growing = zip(streamed, streamed[1:], strict=False)
    assert all(b.startswith(a) and len(b) > len(a) for a, b in growing), first["seen"]
    assert any(answer_word in h for h in first["hits"])
    assert page.locator("#hits > li").count() == len(first["hits"]) and "dense" in page.inner_text("#hits")
    assert re.search(
        r"Retrieval [\d.]+ s · answer [\d.]+ s · \d+ prompt \+ \d+ completion tokens", page.inner_text("#answer-meta")
    )

    page.locator("#answer-text a.cite[data-marker='1']").click()
    mark = page.locator("#reader-text mark#cited-span")
    mark.wait_for(timeout=timeout)
    assert answer_word in mark.inner_text() and mark.is_visible()
    text = page.inner_text("#reader-text")
    assert " ".join(text.split()) == " ".join(CAT.split())  # the whole document, the span marked in it
    if SCREENSHOT:
        Path(SCREENSHOT).parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=SCREENSHOT, full_page=True)

    web.tab("Graph")
    page.get_by_role("button", name="Show the graph").click()
    frame = page.frame_locator("#graph-frame")
    frame.locator("body[data-ready='1']").wait_for(timeout=timeout)
    assert frame.locator("#path-panel ol.steps li").count() >= 1  # the question's retrieval path

    web.tab("Documents")
    page.check("#purge")
    page.get_by_role("button", name="Delete cat").click()
    dialog = page.locator("dialog#confirm")
    dialog.wait_for()  # asked first: a purge cannot be undone
    assert "cannot be undone" in dialog.inner_text()
    page.click("#confirm-ok")
    page.wait_for_function("document.querySelectorAll('#documents tbody tr').length === 1", timeout=timeout)
    assert 'Deleted "cat"' in page.inner_text("#status") and "purged" in page.inner_text("#status")
    again = ask(web, timeout)
    assert again["hits"] and not any(answer_word in h for h in again["hits"])


@contextmanager
def served(root: Path, config: Config, **backends: Any) -> Iterator[str]:
    with running(create_app(root, config, **backends)) as url:
        yield url


def test_the_web_page_end_to_end(browser: Any, tmp_path: Path, config: Config) -> None:
    llm = StreamingLLM("The keeper's cat is named Pilot [1].", delay=0.05)
    with served(tmp_path / "root", web_config(), embedder=HashEmbedder(), llm=llm) as url:
        web = WebPage(browser, url)
        try:
            run_flow(web, "Pilot")
        finally:
            web.close()
    assert web.foreign_requests() == []
    assert web.unexpected_errors() == []
    assert llm.streams == 2 and llm.closed_early == 0


@pytest.mark.integration
def test_the_web_page_with_the_small_model(browser: Any, tmp_path: Path, config: Config) -> None:
    require_small_model()
    cfg = load_config(
        None,
        {"strategy": "dense", "memory": {"chunk_tokens": 30}, "llm": {"model": "qwen2.5-coder-0.5b", "n_ctx": 2048}},
    )
    with served(tmp_path / "root", cfg) as url:
        web = WebPage(browser, url)
        try:
            run_flow(web, "Pilot", timeout=600_000)
        finally:
            web.close()
    assert web.foreign_requests() == []
    assert web.unexpected_errors() == []


def test_a_key_never_shows_another_namespace(browser: Any, tmp_path: Path, config: Config) -> None:
    keys = KeyRing({"key-a": ["alpha"], "key-b": ["beta"]})
    with served(tmp_path / "root", web_config(), keys=keys, embedder=HashEmbedder(), llm=StreamingLLM()) as url:
        import httpx

        for ns, key, text, title in (("alpha", "key-a", GARDEN, "garden"), ("beta", "key-b", CAT, "secret-cat")):
            r = httpx.post(
                f"{url}/v1/namespaces/{ns}/documents",
                json={"documents": [{"text": text, "title": title}]},
                headers={"Authorization": f"Bearer {key}"},
            )
            assert r.status_code == 201, r.text
        nobody = WebPage(browser, url)  # no key: 401, shown
        try:
            nobody.page.wait_for_selector("#message[data-status='401']")
            assert "API key" in nobody.page.inner_text("#message")
        finally:
            nobody.close()
        web = WebPage(browser, url, key="key-a")
        try:
            page = web.page
            page.wait_for_function("document.getElementById('key-state').textContent.includes('key is set')")
            # the namespace list loads after the key is set (a second request): wait for it, then check what it holds
            page.wait_for_function("document.querySelectorAll('#ns-list option').length > 0")
            assert page.evaluate("Array.from(document.querySelectorAll('#ns-list option')).map(o => o.value)") == [
                "alpha"
            ]
            web.open_namespace("alpha")
            page.wait_for_function("document.querySelectorAll('#documents tbody tr').length === 1")
            assert "garden" in page.inner_text("#documents")
            page.fill("#ns", "beta")
            page.click("#ns-form button[type=submit]")
            page.wait_for_selector("#message[data-status='403']")
            assert 'may not use namespace "beta"' in page.inner_text("#message")
            assert page.locator("#documents tbody tr").count() == 0
            ask_question(page, "What is the cat named?", until=ANSWER_ENDED)
            assert page.locator("#hits > li").count() == 0
            assert "secret-cat" not in page.content() and "Pilot" not in page.content()
            assert "key-a" not in page.content()  # the key itself is never shown
        finally:
            web.close()
        assert web.foreign_requests() == []


def test_the_page_references_nothing_outside_its_origin() -> None:
    web = resources.files("gemrag.server").joinpath("web")
    names = sorted(p.name for p in web.iterdir())
    assert names == [
        "app.css",
        "app.js",
        "ask.js",
        "chat.js",
        "core.js",
        "documents.js",
        "index.html",
        "indexing.js",
        "notes.js",
        "strategies.js",
    ]
    for name in names:
        text = web.joinpath(name).read_text(encoding="utf-8")
        assert "http://" not in text and "https://" not in text and "//cdn" not in text, name
        assert not re.search(r"""(?:src|href)\s*=\s*["']//""", text), name
        assert not re.search(r"""url\(\s*["']?(?!data:)[a-z]+:""", text), name
