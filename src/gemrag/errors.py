"""Exceptions raised by gemrag.

Every error a user can cause (bad input, a missing model, an incompatible memory) is a subclass of
:class:`GemragError`, so the CLI can print a clear one-line message instead of a traceback.
"""

from __future__ import annotations


class GemragError(Exception):
    """Base class of every error gemrag raises on purpose."""


class InputError(GemragError):
    """A document could not be read: missing, a directory, binary, not UTF-8, or empty."""


class ConfigError(GemragError):
    """The configuration (file, environment variables or flags) is invalid or incomplete."""


class UnknownStrategyError(ConfigError, KeyError):
    """A strategy name that no registered strategy has (the message lists the available ones).

    Also a :class:`KeyError`, which the registry raised before, so existing ``except KeyError`` code still works;
    its message is shown without the quotes ``KeyError`` adds.
    """

    __str__ = Exception.__str__


class ModelNotAvailableError(GemragError):
    """A model's weights or its runtime are not installed (for example the ``local`` extra is missing)."""


class ModelIntegrityError(GemragError):
    """Model weights on disk do not match their published sha256 checksum."""


class StructuredOutputError(GemragError):
    """An LLM kept returning output that is not valid JSON for the requested schema, after all retries."""


class IncompatibleMemoryError(GemragError):
    """A memory directory was built with a different embedder or chunking than the one requested."""


class MemoryNotIndexedError(GemragError):
    """A retrieval was requested from a memory that has no built graph yet (run ``index`` first)."""


class MemoryBusyError(GemragError):
    """Another process (or another :class:`~gemrag.memory.Memory` in this one) is building this memory: only one
    builder at a time may write a memory. Wait for it to finish, or retry (``gemrag index --wait SECONDS``)."""


class DatabaseLockedError(MemoryBusyError):
    """SQLite stayed locked by another connection for longer than the busy timeout (``database is locked``)."""


class ReadOnlyMemoryError(GemragError):
    """A write (adding documents, indexing) was asked of a memory opened read-only."""


class StaleGenerationError(GemragError):
    """The build generation being read was replaced by a newer one while it was read (its files are gone).

    Retrieval retries on it (the newer generation is then read); it escapes only when a memory keeps changing.

    Attributes:
        strategy: the strategy whose generation was read. generation: the generation that was replaced.
    """

    def __init__(self, message: str, strategy: str = "", generation: int = 0) -> None:
        super().__init__(message)
        self.strategy = strategy
        self.generation = generation


class DamagedMemoryError(GemragError):
    """A published build's files are missing or do not match its manifest (shape, dtype or size): the memory
    was damaged outside gemrag. Run ``gemrag index`` again to rebuild it."""


class ModelCrashError(GemragError):
    """The local model (llama.cpp) crashed, failed or hung when run once in a child process on a tiny prompt.

    Raised instead of letting a native crash (SIGSEGV, SIGILL...) kill gemrag with a bare ``Segmentation fault``;
    the message is one line naming the cause and the fix (usually a portable rebuild of llama-cpp-python, see
    :mod:`gemrag.models.llama.probe`). The CLI prints it and exits with code 2.
    """


class DecoderBusyError(GemragError):
    """A model backend was called while one of its own batches still held it: a ``complete_iter`` generator that
    was neither exhausted nor closed (:mod:`gemrag.models.batch`, the contract), or two interleaved. A programming
    error, not a property of one item: fatal, so that it stops the run instead of being recorded as an item's
    failure or an unjudged answer (:class:`gemrag.models.llama.batch.BatchDecoder`)."""


#: Errors that stop a whole build: recording them per item and going on would only repeat them for every item.
FATAL_ERRORS: tuple[type[GemragError], ...] = (
    ModelCrashError,
    ModelNotAvailableError,
    ModelIntegrityError,
    DecoderBusyError,
    ConfigError,
    MemoryBusyError,
    ReadOnlyMemoryError,
    DamagedMemoryError,
    IncompatibleMemoryError,
)


def is_fatal(exc: BaseException) -> bool:
    """True when ``exc`` must stop a build rather than be recorded as one item's failure (:data:`FATAL_ERRORS`)."""
    return isinstance(exc, FATAL_ERRORS)


class ForgottenTextError(GemragError):
    """A retrieval was about to return a hit resting on removed text: a node that no longer exists, or a derived node
    one of whose inputs was removed (DESIGN.md, "Forgetting"). Removing a chunk removes such nodes in the same
    transaction, so this names a strategy whose published generation or loaded arrays still hold them; nothing is
    returned. Run ``gemrag index`` to rebuild the strategy."""
