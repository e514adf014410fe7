"""Answers: the :class:`~gemrag.answers.answer.Answer` type, answering a question from a retrieved context
(:mod:`~gemrag.answers.answering`: multiple choice, citations, the reading of the context; over
:mod:`~gemrag.answers.prompts`, the answer prompts, and :mod:`~gemrag.answers.replies`, the model's replies read;
streamed by :mod:`~gemrag.answers.streaming`) and where each hit comes from (:mod:`~gemrag.answers.provenance`:
provenance and the descriptions every surface hands out).

Below the memory (:mod:`gemrag.memory` answers through it) and above the strategies, which never answer."""

from gemrag.answers.answer import Answer

__all__ = ["Answer"]
