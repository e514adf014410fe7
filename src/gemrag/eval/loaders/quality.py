"""QuALITY loader (multiple-choice questions over long stories).

Source: Pang et al., "QuALITY: Question Answering with Long Input Texts, Yes!" (NAACL 2022),
https://github.com/nyu-mll/quality. Three line formats are accepted, detected per line:

* **L-Eval normalized** (``quality_dev5.jsonl``): ``{doc_index, title_guess, article, questions: [{question,
  options, gold_label (1-based), gold_letter}]}``. No HARD flag, so ``difficult`` is ``None``.
* **Official v1.0** (``QuALITY.v1.0.1[.htmlstripped].{train,dev,test}``): one question set per line,
  ``{article_id, set_unique_id, title, article (HTML or stripped), questions: [{question, options,
  gold_label, difficult (0/1), speed_validation, question_unique_id, ...}]}``; test lines have no gold.
* **Official v0** (old flat format): ``{article_id, unique_id, title, article: [html lines],
  question1, question1option1..4, question1_gold_label, question1_annotator_speed_answers, ...}``.

HARD: the official ``difficult`` flag when present; otherwise computed from the speed validation as in the
QuALITY README: HARD when fewer than 50% of the speed annotators chose the gold option.

Documents are keyed by ``article_id`` (official) or ``quality-<doc_index>`` (L-Eval); the two question
sets written for one article share the document. An exact repeat of a question (same id, same content) is
dropped; a conflicting repeat is an error. HTML articles are converted to plain text with paragraphs
separated by blank lines.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from gemrag.eval.datasets import Dataset, Document, Question, build_dataset, register_loader
from gemrag.eval.loaders._io import fail, opt_str, read_records, req_dict, req_list, req_str, str_list

__all__ = ["html_to_text", "load_quality"]

_BLOCK_TAGS = {
    "p", "div", "hr", "li", "tr", "blockquote", "pre", "h1", "h2", "h3", "h4", "h5", "h6",
}  # fmt: skip
_SKIP_TAGS = {"head", "script", "style", "title"}
_BREAK = "\x00"  # paragraph break
_LINE = "\x01"  # line break (<br>)
_HTML_HINT = re.compile(r"<\s*(?:!doctype|html|body|p|br|div|h[1-6])\b", re.IGNORECASE)


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP_TAGS:
            self._skipping += 1
        elif tag == "br":
            self.parts.append(_LINE)
        elif tag in _BLOCK_TAGS:
            self.parts.append(_BREAK)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "br":
            self.parts.append(_LINE)
        elif tag in _BLOCK_TAGS:
            self.parts.append(_BREAK)

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TAGS:
            self._skipping = max(0, self._skipping - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append(_BREAK)

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """Convert an HTML article to plain text.

    Block elements (``p``, ``h1``..``h6``, ``div``, ...) become paragraph breaks (a blank line), ``br``
    a line break; other whitespace is collapsed to single spaces, as a browser renders it; ``head``,
    ``script`` and ``style`` content is dropped; entities are decoded.
    """
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    paragraphs = []
    for block in "".join(parser.parts).split(_BREAK):
        lines = [" ".join(line.split()) for line in block.split(_LINE)]
        paragraph = "\n".join(line for line in lines if line)
        if paragraph:
            paragraphs.append(paragraph)
    return "\n\n".join(paragraphs)


def _article_text(value: Any, where: str) -> str:
    if isinstance(value, list):
        text = "".join(str_list(value, where, "field 'article'"))
    elif isinstance(value, str):
        text = value
    else:
        raise fail(where, "field 'article' must be a string or a list of strings")
    return html_to_text(text) if _HTML_HINT.search(text[:2000]) else text.strip()


def _gold_index(label: Any, n_options: int, where: str) -> int | None:
    """1-based ``gold_label`` -> 0-based index; ``None`` for missing/unlabelled (None, 0, -1)."""
    if label is None or label in (0, -1):
        return None
    if isinstance(label, str) and label.strip().lstrip("-").isdigit():
        label = int(label)
    if isinstance(label, bool) or not isinstance(label, int) or not 1 <= label <= n_options:
        raise fail(where, f"gold_label must be an integer in 1..{n_options}, got {label!r}")
    return label - 1


def _hardness(
    flag: Any, speed_answers: list[Any] | None, gold: int | None, where: str
) -> tuple[bool | None, float | None]:
    """Return ``(difficult, speed_accuracy)`` from the official flag or the speed answers (1-based)."""
    accuracy = None
    if speed_answers and gold is not None:
        accuracy = sum(1 for a in speed_answers if a == gold + 1) / len(speed_answers)
    if flag is not None:
        if flag not in (0, 1):  # also accepts True/False
            raise fail(where, f"'difficult' must be 0 or 1, got {flag!r}")
        return bool(flag), accuracy
    return (None if accuracy is None else accuracy < 0.5), accuracy


def _make_question(
    qid: str,
    doc_id: str,
    text: str,
    options: list[str],
    gold: int | None,
    hard: tuple[bool | None, float | None],
) -> Question:
    metadata: dict[str, Any] = {} if hard[1] is None else {"speed_accuracy": hard[1]}
    return Question(
        id=qid,
        doc_ids=[doc_id],
        question=text,
        choices=options,
        answer=None if gold is None else options[gold],
        gold_index=gold,
        difficult=hard[0],
        metadata=metadata,
    )


def _questions_list_record(rec: dict[str, Any], where: str, index: int) -> tuple[Document, list[Question]]:
    """L-Eval normalized or official v1.0 line: the questions are a list of objects."""
    official = "article_id" in rec or "set_unique_id" in rec
    if official:
        doc_id = req_str(rec, "article_id", where, allow_numbers=True)
        title = opt_str(rec, "title", where, "") or ""
        set_id = opt_str(rec, "set_unique_id", where) or f"{doc_id}_line{index}"
    else:
        doc_index = opt_str(rec, "doc_index", where)
        doc_id = f"quality-{doc_index if doc_index is not None else index}"
        title = " ".join((opt_str(rec, "title_guess", where, "") or "").split())
        title = "" if title.startswith("<") else title
        set_id = doc_id
    document = Document(id=doc_id, title=title, text=_article_text(rec.get("article"), where))
    questions = []
    for j, raw in enumerate(req_list(rec, "questions", where), start=1):
        q_where = f"{where}, question {j}"
        q = req_dict(raw, q_where, "question")
        options = [o.strip() for o in str_list(q.get("options"), q_where, "field 'options'")]
        gold = _gold_index(q.get("gold_label"), len(options), q_where)
        speed = q.get("speed_validation")
        speed_answers = (
            [s.get("speed_answer") for s in speed if isinstance(s, dict)] if isinstance(speed, list) else None
        )
        qid = opt_str(q, "question_unique_id", q_where) or f"{set_id}_{j}"
        hard = _hardness(q.get("difficult"), speed_answers, gold, q_where)
        text = req_str(q, "question", q_where).strip()
        questions.append(_make_question(qid, doc_id, text, options, gold, hard))
    return document, questions


def _flat_record(rec: dict[str, Any], where: str, index: int) -> tuple[Document, list[Question]]:
    """Official v0 line: ``question<k>``, ``question<k>option<m>``, ``question<k>_gold_label``, ..."""
    doc_id = req_str(rec, "article_id", where, allow_numbers=True)
    set_id = opt_str(rec, "unique_id", where) or f"{doc_id}_line{index}"
    document = Document(
        id=doc_id, title=opt_str(rec, "title", where, "") or "", text=_article_text(rec.get("article"), where)
    )
    numbers = sorted(int(m.group(1)) for key in rec if (m := re.fullmatch(r"question(\d+)", key)))
    questions = []
    for k in numbers:
        q_where = f"{where}, question{k}"
        options = []
        option = 1
        while f"question{k}option{option}" in rec:
            options.append(req_str(rec, f"question{k}option{option}", q_where).strip())
            option += 1
        if len(options) < 2:
            raise fail(q_where, f"expected fields question{k}option1..N with at least 2 options")
        gold = _gold_index(rec.get(f"question{k}_gold_label"), len(options), q_where)
        speed = rec.get(f"question{k}_annotator_speed_answers")
        hard = _hardness(None, speed if isinstance(speed, list) else None, gold, q_where)
        text = req_str(rec, f"question{k}", q_where).strip()
        questions.append(_make_question(f"{set_id}_{k}", doc_id, text, options, gold, hard))
    return document, questions


@register_loader("quality")
def load_quality(path: Path, *, kind: str = "quality") -> Dataset:
    """Load a QuALITY file (JSON Lines, or a JSON list of the same records).

    Returns:
        A :class:`Dataset` with one document per article and 0-based ``gold_index``.

    Raises:
        InputError: unreadable file, invalid JSON (with line number), an unrecognized record, a bad
            ``gold_label``, or conflicting repeated ids.
    """
    records, _ = read_records(path)
    documents: dict[str, Document] = {}
    questions: dict[str, Question] = {}
    for index, record in enumerate(records, start=1):
        rec = req_dict(record.value, record.where)
        if isinstance(rec.get("questions"), list):
            document, new_questions = _questions_list_record(rec, record.where, index)
        elif any(re.fullmatch(r"question\d+", key) for key in rec):
            document, new_questions = _flat_record(rec, record.where, index)
        else:
            raise fail(
                record.where,
                "unrecognized QuALITY record: expected a 'questions' list (L-Eval or official v1.0) "
                "or flat 'question1', 'question1option1', ... fields (official v0)",
            )
        known = documents.setdefault(document.id, document)
        if known.text != document.text:
            raise fail(record.where, f"article {document.id!r} appeared before with a different text")
        for q in new_questions:
            previous = questions.setdefault(q.id, q)
            if previous != q:
                raise fail(record.where, f"question id {q.id!r} appeared before with different content")
    return build_dataset(path, kind, list(documents.values()), list(questions.values()))
