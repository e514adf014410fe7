"""The web page's states in Debian's chromium (the ``browser`` fixture, test doubles): a 422 names its field and
message (FastAPI's ``detail`` list); the document reader is hidden until a citation opens it and follows the current
answer (a new question or Stop hides the old one); Stop is no error; a question over the limit says the limit; a
citation is weak by its evidence score whatever the strategy (``bm25`` here, whose own scores are no cosine); "not
found in the memory" follows the answer's abstention flag, the reply's wording only when it has none.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from test_server_web import CAT, GARDEN, web_config
from test_web_look import seeded_page
from test_web_page import ANSWER_ENDED, ANSWERED, TIMEOUT, WebPage, ask_question, served

from fakes import HashEmbedder, StreamingLLM
from gemrag.config import Config, load_config
from gemrag.server.schemas import MAX_TEXT_CHARS


def index_dense(web: WebPage) -> None:
    page = web.page
    page.set_input_files(
        "#files",
        files=[
            {"name": "cat.txt", "mimeType": "text/plain", "buffer": CAT.encode()},
            {"name": "garden.md", "mimeType": "text/markdown", "buffer": GARDEN.encode()},
        ],
    )
    page.get_by_role("button", name="Upload").click()
    page.wait_for_function("document.querySelectorAll('#documents tbody tr').length === 2", timeout=TIMEOUT)
    web.tab("Index")
    page.locator("#index-strategies input[value='dense']").check()
    page.get_by_role("button", name="Start indexing").click()
    page.wait_for_selector(".job-status[data-status='succeeded']", timeout=TIMEOUT)


WRITTEN = "document.getElementById('answer-text').textContent.length > 0"
"""A condition for ``page.wait_for_function``: the answer box shows some text."""


def ask(web: WebPage, question: str, *, wait: bool = True) -> None:
    ask_question(web.page, question, until=ANSWERED if wait else None)


def test_a_422_shows_its_field_and_message(browser: Any, tmp_path: Path, config: Config) -> None:
    with served(tmp_path / "root", web_config(), embedder=HashEmbedder(), llm=StreamingLLM()) as url:
        web = WebPage(browser, url)
        try:
            page = web.page
            web.open_namespace("notes")
            page.fill("#paste-title", "huge")
            page.evaluate(f"document.getElementById('paste-text').value = 'a'.repeat({MAX_TEXT_CHARS + 1})")
            page.get_by_role("button", name="Add text").click()
            page.wait_for_selector("#message[data-status='422']", timeout=TIMEOUT)
            message = page.inner_text("#message")
            status = page.inner_text("#status")
        finally:
            web.close()
    assert "[object Object]" not in message, message
    assert "text" in message.lower() and f"at most {MAX_TEXT_CHARS} characters" in message, message
    assert status == "", status  # no stale status line beside the error


def test_the_reader_hides_and_follows_the_current_answer(browser: Any, tmp_path: Path, config: Config) -> None:
    llm = StreamingLLM("The keeper's cat is named Pilot [1]. " + "It sleeps in the lamp room. " * 30, delay=0.03)
    with served(tmp_path / "root", web_config(), embedder=HashEmbedder(), llm=llm) as url:
        web = WebPage(browser, url)
        try:
            page = web.page
            web.open_namespace("notes")
            index_dense(web)
            web.tab("Ask")
            assert not page.locator("#reader").is_visible()  # nothing to read before any question

            ask(web, "What is the keeper's cat named?")
            page.locator("#answer-text a.cite").first.click()  # the sentence's marker (re-cited where [1] is wrong)
            page.locator("#reader-text mark#cited-span").wait_for(timeout=TIMEOUT)
            assert page.locator("#reader").is_visible()

            ask(web, "What does Marta grow?", wait=False)  # a new question: the old document goes
            page.wait_for_function("document.getElementById('answer').getAttribute('aria-busy') === 'true'")
            assert not page.locator("#reader").is_visible()
            assert page.inner_text("#reader-text") == ""
            page.wait_for_function(
                "document.getElementById('answer').getAttribute('aria-busy') === 'false'", timeout=TIMEOUT
            )

            page.locator("#answer-text a.cite").first.click()  # the sentence's marker (re-cited where [1] is wrong)
            page.locator("#reader-text mark#cited-span").wait_for(timeout=TIMEOUT)
            ask(web, "Where does Pilot sleep?", wait=False)
            page.wait_for_function("document.getElementById('answer-text').textContent.length > 0", timeout=TIMEOUT)
            page.get_by_role("button", name="Stop").click()
            page.wait_for_function("document.getElementById('answer').getAttribute('aria-busy') === 'false'")
            assert not page.locator("#reader").is_visible()
            assert page.locator("#message").is_hidden()  # Stop is not an error
            assert "Stopped" in page.inner_text("#status")

            page.fill("#question", "why " * 2600)  # 10,400 characters: over the limit, said, not cut
            page.click("#ask-button")
            page.wait_for_selector("#message:not([hidden])")
            message = page.inner_text("#message")
            assert "10,000" in message or "10000" in message, message
            assert len(page.input_value("#question")) == len("why " * 2600)
        finally:
            web.close()
    assert web.unexpected_errors() == []


def test_weak_citations_are_judged_by_evidence_for_every_strategy(browser: Any, tmp_path: Path, config: Config) -> None:
    # bm25 ranks the garden passage third for this question (a BM25 score, on no cosine scale); the answer cites it
    llm = StreamingLLM("The keeper's cat is named Pilot [1]. Marta grows tomatoes [3].")
    server = served(tmp_path / "root", web_config(), embedder=HashEmbedder(), llm=llm)
    with seeded_page(browser, server) as (page, errors):
        ask_question(page, "What is the keeper's cat named?", strategy="bm25")
        state = page.inner_text("#answer-state")
        weak = page.locator("#hits > li.weak").evaluate_all("items => items.map((li) => li.id)")
        first, third = page.inner_text("#hit-1 .hit-head"), page.inner_text("#hit-3 .hit-head")
        rule = page.inner_text("#weak-rule")
    assert errors == []
    assert "Weak evidence" in state and "[3]" in state and "[1]" not in state, state
    assert "below 0.30" in state, state  # the threshold is stated
    assert weak == ["hit-3"], weak
    assert "bm25" in first and "evidence 0.55" in first and "weak" not in first, first
    assert "evidence 0.17 (weak: below 0.30)" in third and "Marta" not in third, third
    assert "below 0.30" in rule and "every strategy" in rule, rule


def served_abstaining(tmp_path: Path, below: float, llm: StreamingLLM) -> Any:
    """The page's server with ``[answer] abstain_below = below`` (dense by default, small chunks)."""
    cfg = load_config(None, {"strategy": "dense", "memory": {"chunk_tokens": 30}, "answer": {"abstain_below": below}})
    return served(tmp_path / f"root{below}", cfg, embedder=HashEmbedder(), llm=llm)


def test_not_found_follows_the_abstention_flag_not_the_wording(browser: Any, tmp_path: Path, config: Config) -> None:
    declining = "The text does not mention the lighthouse's colour."
    seen = {}
    for below in (-1.0, 0.99):  # -1: the evidence always suffices (abstained: false); 0.99: never (abstained: true)
        llm = StreamingLLM(declining)
        server = served_abstaining(tmp_path, below, llm)
        with seeded_page(browser, server) as (page, errors):
            ask_question(page, "What colour is the lighthouse?", until=f"{ANSWER_ENDED} && {WRITTEN}")
            box = page.locator("#answer-state [data-state='not-found']")
            seen[below] = {
                "not_found": box.count(),
                "from": box.get_attribute("data-from") if box.count() else None,
                "text": page.inner_text("#answer-text"),
                "calls": llm.calls,
            }
        assert errors == []
    # checked and sufficient: the reply's wording does not make it "not found"
    assert seen[-1.0]["not_found"] == 0 and seen[-1.0]["text"].startswith(declining), seen
    # abstained: "not found", from the flag, with no LLM call
    assert seen[0.99] == {"not_found": 1, "from": "abstained", "text": "Not found in the memory.", "calls": 0}, seen


def test_a_citation_added_after_the_answer_and_an_uncited_sentence_are_shown_as_such(
    browser: Any, tmp_path: Path, config: Config
) -> None:
    # the second sentence has no marker and the cat passage states it; the third has none and no passage states it
    llm = StreamingLLM(
        "The keeper's cat is named Pilot [1]. Pilot sleeps on the warm floor of the lamp room every night. "
        "The keeper owns a golden dragon named Ember."
    )
    server = served(tmp_path / "root", web_config(), embedder=HashEmbedder(), llm=llm)
    with seeded_page(browser, server) as (page, errors):
        ask_question(page, "What is the keeper's cat named?")
        added = page.locator("#answer-text .cited-after a.cite.added")
        marker = added.get_attribute("data-marker")
        title = added.get_attribute("title")
        cited_after = page.inner_text("#answer-text .cited-after")
        uncited = page.inner_text("#answer-text .unsupported.uncited")
        plain_unsupported = page.locator("#answer-text .unsupported:not(.uncited)").count()
        states = page.locator("#answer-state > p").evaluate_all("ps => ps.map((p) => p.dataset.state)")
        note = page.inner_text("#answer-state [data-state='cited-after']")
        passage = page.inner_text(f"#hit-{marker} .hit-text")
    assert errors == []
    assert cited_after.startswith("Pilot sleeps") and cited_after.endswith(f"every night [{marker}]."), cited_after
    assert "warm floor of the lamp room" in passage, passage  # the passage found is the one that states it
    assert "after the answer" in (title or ""), title
    assert uncited.startswith("The keeper owns a golden dragon") and uncited.endswith("uncited"), uncited
    assert plain_unsupported == 0 and states == ["uncited", "cited-after"], states
    assert f"[{marker}]" in note, note


class _Miscites(StreamingLLM):
    """Answers with the cat's sleeping place, citing a passage of the context that does not state it."""

    def _pick(self, messages: Any) -> None:
        content = messages[-1]["content"]
        if "Answer briefly." in content:
            numbered = re.findall(r"^\[(\d+)\] (.*)$", content, re.M)
            holder = next(n for n, t in numbered if "warm floor" in t)
            other = next(n for n, _ in numbered if n != holder)
            self.reply = f"Pilot sleeps on the warm floor of the lamp room every night [{other}]."

    def complete(self, messages: Any, **kwargs: Any) -> Any:
        self._pick(messages)
        return super().complete(messages, **kwargs)

    def complete_stream(self, messages: Any, **kwargs: Any) -> Any:
        self._pick(messages)
        return super().complete_stream(messages, **kwargs)


def test_a_recited_sentence_is_shown_with_the_passage_that_supports_it(
    browser: Any, tmp_path: Path, config: Config
) -> None:
    server = served(tmp_path / "root", web_config(), embedder=HashEmbedder(), llm=_Miscites())
    with seeded_page(browser, server) as (page, errors):
        ask_question(page, "Where does the keeper's cat sleep?")
        added = page.locator("#answer-text .cited-after a.cite.added")
        marker, title = added.get_attribute("data-marker"), added.get_attribute("title")
        sentence = page.inner_text("#answer-text .cited-after")
        states = page.locator("#answer-state > p").evaluate_all("ps => ps.map((p) => p.dataset.state)")
        note = page.inner_text("#answer-state [data-state='recited']")
        passage = page.inner_text(f"#hit-{marker} .hit-text")
        flagged = page.locator("#answer-text .unsupported").count()
    assert errors == []
    assert "warm floor of the lamp room" in passage, passage  # the marker now names the passage that states it
    assert sentence.endswith(f"every night [{marker}]."), sentence
    assert states == ["recited"] and flagged == 0, states
    assert f"→ [{marker}]" in note and "Re-cited" in note, note
    assert (title or "").startswith("Re-cited: the sentence named ["), title  # not "had no marker"


def test_a_hypothetical_question_and_an_answer_citing_nothing_are_said_as_such(
    browser: Any, tmp_path: Path, config: Config
) -> None:
    # no marker at all: the sentence is checked against the whole context, which does not state it
    llm = StreamingLLM("Likely yes, since the keeper owns a golden dragon named Ember.")
    cfg = load_config(
        None,
        {"strategy": "dense", "memory": {"chunk_tokens": 30}, "gem": {"questions": 2},
         "answer": {"hypotheticals": "auto"}},
    )  # fmt: skip
    with seeded_page(browser, served(tmp_path / "root", cfg, embedder=HashEmbedder(), llm=llm)) as (page, errors):
        ask_question(page, "Would the keeper's cat like a dragon?")
        states = page.locator("#answer-state > p").evaluate_all("ps => ps.map((p) => p.dataset.state)")
        unsupported = page.inner_text("#answer-state [data-state='unsupported']")
        read_as = page.inner_text("#answer-state [data-state='question-form']")
        title = page.locator("#answer-text .unsupported").get_attribute("title")
    assert errors == []
    assert states == ["unsupported", "question-form"], states
    assert "not supported by the context (the answer cites no passage)" in unsupported, unsupported
    assert 'a hypothetical question ("Would")' in read_as and "inference" in read_as, read_as
    assert (title or "").startswith("The context does not support this sentence"), title


def test_a_sentence_quoting_what_its_passage_does_not_hold_says_so(
    browser: Any, tmp_path: Path, config: Config
) -> None:
    # the quotation is in no passage of the context: flagged for it, whatever a judge would say of its other words
    llm = StreamingLLM('The keeper wrote [1]: "The golden dragon Ember guards the lamp room every single night."')
    with seeded_page(browser, served(tmp_path / "root", web_config(), embedder=HashEmbedder(), llm=llm)) as (
        page,
        errors,
    ):
        ask_question(page, "What guards the lamp room?")
        title = page.locator("#answer-text .unsupported").get_attribute("title")
        flag = page.inner_text("#answer-text .unsupported .flag")
        note = page.inner_text("#answer-state [data-state='unsupported']")
    assert errors == []
    assert title == "It quotes text that its citations do not hold" and flag.strip() == "unsupported", title
    assert note.endswith(
        "1 sentence of the answer is not supported by the passages cited (it quotes text the passages cited do not "
        "hold): it is marked."
    ), note
