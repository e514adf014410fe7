"""Index jobs on the web page of ``gemrag serve``, in Debian's chromium (the ``browser`` fixture): a ``gem`` build
with test doubles (HashEmbedder, a ScriptedLLM slowed down or held at a gate) reports stages, and the page shows them
as bars with ``n / total`` that advance to the end; a reload during the build reattaches to it; a second tab sees
the first tab's job; cancel says it waits for the LLM call in flight, disables its button while cancelling, and the
cancelled card says what was kept; the jobs list shows each job's outcome, calls and plan against what it did.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

from test_server_web import CAT, GARDEN, web_config
from test_web_page import TIMEOUT, WebPage, served

from fakes import HashEmbedder, ScriptedLLM
from gemrag.config import Config

LONG = "\n\n".join(
    [CAT, GARDEN]
    + [
        f"Chapter {i}: the ferry number {i} leaves the harbour at {i} o'clock and carries {i * 3} passengers to "
        f"the island market, where the baker sells bread {i} times a week to the fishermen of the northern bay."
        for i in range(1, 7)
    ]
)
"""Enough text for several chunks of 30 tokens: gem asks one LLM call per chunk, so its stages have many items."""


class SlowLLM(ScriptedLLM):
    """A ScriptedLLM taking ``delay`` seconds per call (the bars have time to be seen between calls)."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    def complete(self, messages: Any, **kwargs: Any) -> Any:
        time.sleep(self.delay)
        return super().complete(messages, **kwargs)


class GateLLM(ScriptedLLM):
    """A ScriptedLLM whose calls wait until ``go`` is set (``entered`` is set by the first call)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.go = threading.Event()

    def complete(self, messages: Any, **kwargs: Any) -> Any:
        self.entered.set()
        assert self.go.wait(60), "the test never released the LLM"
        return super().complete(messages, **kwargs)


def paste(web: WebPage, title: str, text: str) -> None:
    page = web.page
    web.tab("Documents")
    page.fill("#paste-title", title)
    page.fill("#paste-text", text)
    page.get_by_role("button", name="Add text").click()
    page.wait_for_function("document.querySelectorAll('#documents tbody tr[data-doc]').length >= 1", timeout=TIMEOUT)


def start_gem(web: WebPage) -> None:
    page = web.page
    web.tab("Index")
    page.locator("#index-strategies input[value='gem']").check()
    page.get_by_role("button", name="Start indexing").click()


def record_bars(web: WebPage) -> None:
    """Sample every bar of the job cards every 20 ms into ``window.bars`` ("n. stage|value|max|text" strings: gem has
    two stages of the same name, utility questions of the chunks, then of the summaries)."""
    web.page.evaluate(
        """() => { window.bars = [];
             setInterval(() => { document.querySelectorAll('#job .stage').forEach((s, i) => {
               const bar = s.querySelector('progress');
               if (bar) window.bars.push(`${i}. ${s.dataset.stage}|${bar.value}|${bar.max}|${s.textContent}`);
             }); }, 20); }"""
    )


def test_gem_progress_bars_show_n_of_total_and_advance(browser: Any, tmp_path: Path, config: Config) -> None:
    llm = SlowLLM(0.15)
    with served(tmp_path / "root", web_config(), embedder=HashEmbedder(), llm=llm) as url:
        web = WebPage(browser, url)
        try:
            web.open_namespace("notes")
            paste(web, "island", LONG)
            start_gem(web)
            record_bars(web)
            web.page.wait_for_selector(".job-status[data-status='succeeded']", timeout=TIMEOUT)
            card = web.page.inner_text("#job")
            bars = web.page.evaluate("window.bars")
        finally:
            web.close()
    assert "object" not in card and "null" not in card, card
    assert web.unexpected_errors() == []
    stages: dict[str, list[tuple[int, int, str]]] = {}
    for sample in bars:
        stage, value, top, text = sample.split("|", 3)
        stages.setdefault(stage, []).append((int(float(value)), int(float(top)), text))
    assert stages, "no bar was ever shown"
    longest = max(stages.values(), key=lambda seen: seen[0][1])
    total = longest[0][1]
    assert total >= 4, longest[0]
    values = [v for v, _, _ in longest]
    assert values == sorted(values)  # advancing, never back
    assert len({v for v in values if 0 < v < total}) >= 2, values  # seen part way, more than once
    assert values[-1] == total
    for value, top, text in longest:
        assert f"{value} / {top}" in text, text


def test_a_reload_and_a_second_tab_reattach_to_the_running_job(browser: Any, tmp_path: Path, config: Config) -> None:
    llm = SlowLLM(0.3)
    with served(tmp_path / "root", web_config(), embedder=HashEmbedder(), llm=llm) as url:
        web = WebPage(browser, url)
        other = WebPage(browser, url)
        try:
            web.open_namespace("notes")
            paste(web, "island", LONG)
            start_gem(web)
            web.page.wait_for_selector("#job .stage progress", timeout=TIMEOUT)

            other.open_namespace("notes")  # a second tab, opened after the job started
            other.tab("Index")
            other.page.wait_for_selector("#job .job-status[data-status='running']", timeout=10_000)
            other.page.wait_for_selector("#job .stage progress", timeout=10_000)

            web.page.reload()
            web.page.wait_for_selector("body[data-ready='1']", timeout=TIMEOUT)
            web.tab("Index")
            web.page.wait_for_selector("#job .job-status[data-status='running']", timeout=10_000)
            assert web.page.locator("#index-cancel").is_enabled()  # it can be cancelled from here
            web.page.wait_for_selector("#job .job-status[data-status='succeeded']", timeout=TIMEOUT)
            other.page.wait_for_selector("#job .job-status[data-status='succeeded']", timeout=TIMEOUT)
            assert re.search(r"\d+ / \d+", other.page.inner_text("#job"))
            listed = other.page.inner_text("#jobs")
            assert "gem" in listed and "succeeded" in listed, listed
        finally:
            web.close()
            other.close()
    assert web.unexpected_errors() == [] and other.unexpected_errors() == []


def test_cancel_says_what_it_waits_for_and_what_was_kept(browser: Any, tmp_path: Path, config: Config) -> None:
    llm = GateLLM()
    with served(tmp_path / "root", web_config(), embedder=HashEmbedder(), llm=llm) as url:
        web = WebPage(browser, url)
        try:
            page = web.page
            web.open_namespace("notes")
            paste(web, "island", LONG)
            start_gem(web)
            assert llm.entered.wait(30)  # the build is inside its first LLM call
            page.wait_for_selector("#job .job-status[data-status='running']", timeout=10_000)
            page.get_by_role("button", name="Cancel the job").click()
            page.wait_for_function("document.getElementById('job').textContent.includes('current LLM call')")
            assert page.locator("#index-cancel").is_disabled()  # no second click while it waits
            waiting = page.inner_text("#job")
            llm.go.set()
            page.wait_for_selector(".job-status[data-status='cancelled']", timeout=TIMEOUT)
            card = page.inner_text("#job")
            listed = page.inner_text("#jobs")
        finally:
            llm.go.set()
            web.close()
    assert "cancelling" in waiting.lower(), waiting
    kept = [(int(k), int(n)) for k, n in re.findall(r"(\d+) of (\d+) done", card)]
    assert any(1 <= k < n for k, n in kept), card  # the stage it stopped in: part of it kept
    assert "cached" in card and "next build" in card, card  # what happens to what was kept
    assert "cancelled" in listed, listed
    assert web.unexpected_errors() == []
