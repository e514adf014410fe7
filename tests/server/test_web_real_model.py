"""The web page with the real models, in Debian's chromium: the real MiniLM embedder and the embedded
Qwen2.5-Coder-0.5B (llama.cpp), built by the server from its configuration. A person's flow, as short as it can be:
upload a tiny file (two sentences, two chunks), build ``gem`` (its LLM passes report stages) and watch each bar
advance to its end, ask, and open a citation to find the cited span marked in the document.

About 1-2 minutes on an idle 2-core machine (five to ten LLM calls: two chunks' utility questions, one eigentheme
summary and its questions, the answer, its sentence check). Under ``CI=true`` a missing model, chromium or
playwright fails the test (:func:`realparts.require_small_model`, the ``browser`` fixture).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from test_server_web import CAT
from test_web_jobs import record_bars
from test_web_page import QUESTION, WebPage, ask_question, served

from gemrag.config import Config, load_config
from realparts import require_small_model

pytestmark = pytest.mark.integration

TIMEOUT = 600_000  # ms: a loaded machine makes each 0.5B call slow


def test_gem_with_the_small_model_bars_answer_and_citation(browser: Any, tmp_path: Path, config: Config) -> None:
    require_small_model()
    cfg = load_config(
        None,
        {
            "strategy": "gem",
            "memory": {"chunk_tokens": 30},
            "gem": {"questions": 2, "eigen": 1, "eigen_top": 2, "summary_words": 30},
            "llm": {"model": "qwen2.5-coder-0.5b", "n_ctx": 2048},
        },
    )
    with served(tmp_path / "root", cfg) as url:
        web = WebPage(browser, url)
        try:
            page = web.page
            web.open_namespace("notes")
            tiny = {"name": "cat.txt", "mimeType": "text/plain", "buffer": CAT.encode()}
            page.set_input_files("#files", files=[tiny])
            page.get_by_role("button", name="Upload").click()
            page.wait_for_function(  # the first upload loads the real embedder
                "document.querySelectorAll('#documents tbody tr[data-doc]').length === 1", timeout=TIMEOUT
            )

            web.tab("Index")
            page.locator("#index-strategies input[value='gem']").check()
            record_bars(web)
            page.get_by_role("button", name="Start indexing").click()
            ended = ", ".join(f".job-status[data-status='{s}']" for s in ("succeeded", "failed", "cancelled"))
            page.wait_for_selector(ended, timeout=TIMEOUT)  # a failed build fails the test now, in words
            bars = page.evaluate("window.bars")
            card = page.inner_text("#job")
            assert page.locator(".job-status[data-status='succeeded']").count() == 1, card

            ask_question(page, QUESTION, timeout=TIMEOUT)
            answer = page.inner_text("#answer-text")
            page.locator("#answer-text a.cite").first.click()
            mark = page.locator("#reader-text mark#cited-span")
            mark.wait_for(timeout=30_000)
            cited = mark.inner_text()
            reader = page.inner_text("#reader-text")
        finally:
            web.close()
    assert web.foreign_requests() == [] and web.unexpected_errors() == []
    assert "object" not in card and "null" not in card, card
    ends: dict[str, tuple[int, int]] = {}
    seen: dict[str, set[int]] = {}
    for sample in bars:
        stage, value, top, text = sample.split("|", 3)
        assert f"{int(float(value))} / {int(float(top))}" in text, text  # each bar says n / total
        ends[stage] = (int(float(value)), int(float(top)))
        seen.setdefault(stage, set()).add(int(float(value)))
    assert ends, "no bar was ever shown"
    assert all(value == top for value, top in ends.values()), ends  # every bar reached its end
    assert any(len(values) >= 2 for values in seen.values()), seen  # a bar was seen advancing
    assert answer.strip() and re.search(r"\[\d+\]", answer), answer
    assert cited.strip() and cited in CAT, cited  # the cited span, marked in the uploaded text
    assert " ".join(reader.split()) == " ".join(CAT.split())
