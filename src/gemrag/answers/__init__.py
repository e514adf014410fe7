"""Answers: the :class:`~gemrag.answers.answer.Answer` type, answering a question from a retrieved context
(:mod:`~gemrag.answers.answering`: the prompt, multiple choice, citations, streaming) and where each hit comes from
(:mod:`~gemrag.answers.provenance`: provenance and the descriptions every surface hands out).

Below the memory (:mod:`gemrag.memory` answers through it) and above the strategies, which never answer."""

from gemrag.answers.answer import Answer

__all__ = ["Answer"]
