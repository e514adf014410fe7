"""A character chat over a memory (``gemrag chat``): :class:`ChatSession` (:mod:`~gemrag.chat.session`) and its
prompt (:mod:`~gemrag.chat.prompts`). ``from gemrag.chat import ChatSession`` is the Python API."""

from gemrag.chat.session import DEFAULT_STRATEGY, ChatSession, check_name, exchange_source

__all__ = ["DEFAULT_STRATEGY", "ChatSession", "check_name", "exchange_source"]
