"""The facade: :class:`Memory`, the public API, each method delegating to the role module whose job it is (see
:mod:`gemrag.memory` for the map, an example, concurrency and traces)."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from gemrag.answers.answer import Answer
from gemrag.config import Config, load_config
from gemrag.errors import ReadOnlyMemoryError
from gemrag.ingest import Document
from gemrag.ingest.loader import decode_text
from gemrag.memory import asking, retrieval
from gemrag.memory.deletion import DeleteReport
from gemrag.memory.documents import check_compatible
from gemrag.memory.erasing import erase
from gemrag.memory.forgetting import forget
from gemrag.memory.index_plan import IndexPlan, plan_index
from gemrag.memory.indexing import IndexReport, run_index
from gemrag.memory.sources import Source, SourceReport, put_sources, read_sources, synced_directories
from gemrag.memory.states import strategy_states
from gemrag.memory.stats import memory_stats
from gemrag.models.base import LLM, Embedder
from gemrag.models.cache import CachedEmbedder, CachedLLM
from gemrag.models.factory import build_embedder, build_llm, check_model_settings
from gemrag.models.meter import UsageMeter
from gemrag.store import MemoryStore, open_store
from gemrag.store.erase import PurgeReport
from gemrag.store.lock import BuildLockHolder
from gemrag.strategies import StrategyContext, check_config, get_strategy
from gemrag.strategies.base import ProgressFactory, Strategy, no_progress
from gemrag.strategies.platform.common import LLM_MODEL_KEY
from gemrag.types import Hit


class Memory:
    """A graph memory stored in one directory.

    Use :meth:`open`; pass ``llm`` / ``embedder`` to inject your own backends (tests do), otherwise they are
    built from the config on first use.

    Attributes:
        build_wait: seconds :meth:`add` and :meth:`index` wait for another builder's lock (default 0: fail at
            once with :class:`~gemrag.errors.MemoryBusyError`).
    """

    READ_RETRIES = 3
    """Attempts of a retrieval whose generation is replaced while it is read (each sees a newer one)."""

    def __init__(
        self,
        store: MemoryStore,
        config: Config,
        *,
        llm: LLM | None = None,
        embedder: Embedder | None = None,
        progress: ProgressFactory | None = None,
    ) -> None:
        self.store = store
        self.config = config
        self.build_wait = 0.0
        self._lock = BuildLockHolder(store.build_lock)
        self.meter = UsageMeter(store)
        self._llm_backend = llm
        self._llm: LLM | None = None
        base_embedder = embedder or build_embedder(config.embedder)
        self.embedder = CachedEmbedder(base_embedder, store, self.meter)
        check_compatible(store, self.embedder.model_id, config.memory)  # chunk size and titles, the embedder
        check_config(config)  # every strategy section names a registered strategy and is valid for its model
        self.strategy = get_strategy(config.strategy, config)
        self._strategies = {self.strategy.name: self.strategy}
        self.ctx = StrategyContext(store, self.embedder, self.llm, config, self.meter, progress or no_progress)

    @classmethod
    def open(
        cls,
        directory: str | Path,
        config: Config | None = None,
        *,
        llm: LLM | None = None,
        embedder: Embedder | None = None,
        progress: ProgressFactory | None = None,
        readonly: bool | None = None,
        pool_size: int = 1,
    ) -> Memory:
        """Open (or create) the memory in ``directory``, or in a PostgreSQL schema.

        Args:
            directory: the memory directory (created when missing, unless read-only), or a PostgreSQL URL
                ``postgresql://user@host:port/db?schema=NAME`` (one memory per schema, created when missing).
            config: the configuration (default: :func:`~gemrag.config.load_config`).
            llm: an LLM backend to use instead of building it from the config.
            embedder: an embedder backend to use instead of building it from the config.
            progress: progress-bar factory for ``index``.
            readonly: open without writing anything (retrieval and answers work; caches and usage are not
                recorded). None (default): read-only exactly when the directory or its database is not writable
                (a PostgreSQL memory: read-write).
            pool_size: PostgreSQL connections kept for concurrent readers (``gemrag serve``); ignored for SQLite.

        Raises:
            IncompatibleMemoryError: the memory was built with another embedder or chunk size.
            ConfigError: the default strategy or a strategy section of ``config`` names no registered strategy
                (register user strategies before opening), a section is invalid for its strategy's model, or a
                model name is not accepted (:func:`~gemrag.models.factory.check_model_settings`); nothing is
                created then.
            GemragError: the directory is not usable.
        """
        config = config or load_config()
        check_config(config)  # before anything is created: a bad configuration leaves no empty memory behind
        check_model_settings(None if llm else config.llm, None if embedder else config.embedder)
        embedder = embedder or build_embedder(config.embedder)
        store = open_store(directory, readonly=readonly, pool_size=pool_size)
        try:
            return cls(store, config, llm=llm, embedder=embedder, progress=progress)
        except BaseException:
            store.close()
            raise

    @property
    def readonly(self) -> bool:
        """True when the memory was opened read-only."""
        return self.store.readonly

    def close(self) -> None:
        """Write pending usage rows, release the build lock if held, and close the store."""
        try:
            self.meter.flush()
        finally:
            self._lock.release()
            self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def llm(self) -> LLM:
        """The LLM (cached and metered), loaded on first use."""
        if self._llm is None:
            backend = self._llm_backend or build_llm(self.config.llm, self.config.cache_dir)
            self._llm = CachedLLM(backend, self.store, self.meter)
            self.ctx.state[LLM_MODEL_KEY] = self._llm.model_id  # recorded in build manifests
        return self._llm

    def get_strategy(self, name: str | None = None) -> Strategy:
        """The strategy ``name`` (default: the configured one), instantiated once per Memory with its validated
        section of this memory's configuration (``[raptor]`` for ``raptor``, ...).

        All strategies share this memory's documents, chunks, embeddings, LLM cache and usage meter, so they
        can be compared side by side on the same data.

        Raises:
            KeyError: no strategy has that name.
            ConfigError: the strategy's configuration section is invalid.
        """
        name = name or self.strategy.name
        if name not in self._strategies:
            self._strategies[name] = get_strategy(name, self.config)
        return self._strategies[name]

    def add(
        self, paths: Sequence[str | Path], *, id: str | None = None, sync: bool = False, keep_versions: bool = False
    ) -> SourceReport:
        """Put .txt/.md files, directories and ``"-"`` (standard input) in the memory, each identified by its
        resolved path (or ``id``, for one document): new sources are added, a source whose text changed replaces its
        previous version atomically, an unchanged one costs nothing (:mod:`gemrag.memory.sources`). Every file is read
        and checked first, so a bad file changes nothing.

        Args:
            id: the identity of the one document read (default: its resolved path; stdin: anonymous).
            sync: also remove the documents of the given directories whose files are gone.
            keep_versions: keep the text of replaced and removed versions in the history.

        Raises:
            InputError: a file is missing, binary, not UTF-8, empty or of an unsupported type; ``id`` with several.
            MemoryBusyError: another process is building this memory. ReadOnlyMemoryError: opened read-only.
        """
        sources = read_sources(paths, key=id, sync=sync)
        directories = synced_directories(paths) if sync else []
        return self.put(sources, sync=directories, keep_versions=keep_versions)

    def put(self, sources: Sequence[Source], *, sync: Sequence[str] = (), keep_versions: bool = False) -> SourceReport:
        """Put loaded sources in the memory (:func:`gemrag.memory.sources.put_sources`, in one transaction).

        Raises:
            MemoryBusyError: another process is building this memory. ReadOnlyMemoryError: opened read-only.
        """
        with self.building():
            return put_sources(self, sources, sync=sync, keep_versions=keep_versions)

    def add_text(
        self,
        text: str,
        title: str = "text",
        source: str = "<text>",
        *,
        id: str | None = None,
        rests_on: Sequence[int] = (),
    ) -> tuple[int, bool]:
        """Add a document given as a string: anonymous (deduplicated by text), or identified by ``id`` (a new text
        under an existing ``id`` replaces that document). Returns ``(doc_id, created)`` as :meth:`add_document`.

        Args:
            rests_on: chunk ids an anonymous document was made from (a chat exchange: the chunks its reply
                recalled); removing any of them withdraws the document too (DESIGN.md "Forgetting").

        Raises:
            InputError: the text is empty.
            MemoryBusyError: another process is building this memory. ReadOnlyMemoryError: opened read-only.
        """
        doc = Document(source, title, decode_text(text.encode("utf-8"), source))
        return self.put([Source(doc, id, tuple(int(i) for i in rests_on))]).results[0]

    def add_document(self, doc: Document, *, key: str | None = None) -> tuple[int, bool]:
        """Store a loaded document, identified by ``key`` (None: anonymous, deduplicated by text).

        Returns:
            ``(doc_id, created)``: created is False when the same text is already stored (under ``key``).

        Raises:
            MemoryBusyError: another process is building this memory (see :attr:`build_wait`).
            ReadOnlyMemoryError: the memory is open read-only.
        """
        return self.put([Source(doc, key)]).results[0]

    def building(self, wait: float | None = None) -> AbstractContextManager[None]:
        """Hold the memory's build lock (re-entrant within this Memory): ``gemrag index`` holds it from its cost plan
        to the end of the build, so a second builder stops before planning.

        Raises:
            MemoryBusyError: another builder holds it for longer than ``wait`` (default :attr:`build_wait`).
            ReadOnlyMemoryError: the memory is open read-only.
        """
        if self.readonly:
            raise ReadOnlyMemoryError(
                f"the memory {self.store.location} is open read-only; adding documents and indexing need write access"
            )
        return self._lock.hold(self.build_wait if wait is None else wait)

    def index(self, strategy: str | None = None, *, wait: float | None = None) -> IndexReport:
        """Chunk new documents and (re)build the strategy's structures, published as a new build generation.
        Resumable after an interruption (even ``kill -9``): what an unpublished build left is removed first,
        and cached LLM answers make redoing it free.

        Args:
            strategy: which registered strategy to build (default: the configured one).
            wait: seconds to wait for another builder's lock (default :attr:`build_wait`).

        Raises:
            MemoryNotIndexedError: there is nothing to index.
            MemoryBusyError: another process is building this memory.
            ReadOnlyMemoryError: the memory is open read-only.
            GemragError: a model could not be loaded.
        """
        with self.building(wait):
            return run_index(self, strategy)

    def plan_index(self, strategy: str | None = None, *, calibrate: bool = True) -> IndexPlan:
        """What :meth:`index` would cost, before any LLM call: per pass its chunks, LLM calls, prompt and completion
        tokens and minutes (:func:`gemrag.memory.index_plan.plan_index`, which also prices sources not put yet); writes
        nothing. ``calibrate``: time a model run here once per machine (seconds).

        Raises:
            UnknownStrategyError: no such strategy. GemragError: the model could not be loaded.
        """
        return plan_index(self, strategy, calibrate=calibrate)

    def delete(
        self, document: int | str, *, wait: float | None = None, purge: bool = False, rebuild: bool = False
    ) -> DeleteReport:
        """Delete a document, its chunks and every derived node resting on them, atomically and with no LLM call
        (:mod:`gemrag.memory.forgetting`); the strategies are then stale until the next :meth:`index`, which spends LLM
        calls only on what changed. Naming one source of a document other sources hold too deletes only that source
        (``DeleteReport.kept_by`` lists the others).

        Args:
            document: the document's id, or its source path or title (see ``stats()["documents"]``); an id
                deletes the document whatever holds it.
            wait: seconds to wait for another builder's lock (default :attr:`build_wait`).
            purge: then erase (:meth:`erase`): every copy of text the memory no longer states goes from the
                caches, kept versions and files.
            rebuild: rebuild the strategies it changed now (``DeleteReport.rebuilt``) rather than at the next index.

        Raises:
            GemragError: no such document, or a name matching several documents.
            MemoryBusyError: another process is building this memory.
            ReadOnlyMemoryError: the memory is open read-only.
        """
        with self.building(wait), self.meter.phase("index"):
            return forget(self, document, purge=purge, rebuild=rebuild)

    def erase(self, *, wait: float | None = None) -> PurgeReport:
        """Erase every byte of text no current document states (:mod:`gemrag.memory.erasing`): what deletes, edits
        and ``--sync`` removed since the last erase, from the LLM and embedding caches, kept versions, failure
        messages, unpublished array files and the database's free pages, write-ahead log and dead rows. Runs at
        any time, again after an incomplete or interrupted erase; no LLM call.

        Args:
            wait: seconds to wait for another builder's lock (default :attr:`build_wait`).

        Returns:
            What was erased (:class:`~gemrag.store.erase.PurgeReport`); ``erasure.complete`` is False while another
            process reads old bytes (``erasure.detail`` names the file or tables): erase again once it is done.

        Raises:
            MemoryBusyError: another process is building this memory.
            ReadOnlyMemoryError: the memory is open read-only. DatabaseLockedError: the database stayed locked.
        """
        with self.building(wait):
            return erase(self)

    def strategy_states(self) -> dict[str, Any]:
        """Each strategy's build state (:class:`~gemrag.store.graph_rows.BuildState`: built / stale / never built),
        for every registered strategy and every strategy built in this memory."""
        return dict(strategy_states(self))

    def retrieve(
        self, question: str, budget: int | None = None, strategy: str | None = None, *, build: bool = False
    ) -> list[Hit]:
        """The context for ``question``: at most ``budget`` nodes (default: the strategy's ``default_budget`` if it
        has one, e.g. REMem's ``qa_top_k``, else ``config.memory.budget``), from
        ``strategy`` (default: the configured one, which must have been built by :meth:`index`).

        Answers from the strategy's last published generation, also while another process builds the next one.
        A strategy built before documents were added or deleted still answers, with one
        :class:`~gemrag.memory.states.StaleStrategyWarning` (stderr); ``build=True`` builds a strategy never built.

        Returns:
            The hits, best first, each with its :class:`~gemrag.types.Provenance`: the chunks it was made from (itself
            for a chunk), each with its document (id, title, source, version), ordinal and character span in that
            version's text (:func:`gemrag.answers.provenance.with_provenance`).

        Raises:
            MemoryNotIndexedError: the strategy has not been built (and ``build`` is False).
            DamagedMemoryError: the published generation's files are missing or do not match its manifest.
            ValueError: empty question or budget < 1.
        """
        return retrieval.retrieve(self, question, budget, strategy, build=build, attempts=self.READ_RETRIES)

    def ask(
        self,
        question: str,
        choices: Sequence[str] | None = None,
        budget: int | None = None,
        strategy: str | None = None,
        *,
        build: bool = False,
    ) -> Answer:
        """Retrieve context and answer; with ``choices``, the LLM picks exactly one option, and retrieval is asked
        as ``[answer] choice_retrieval`` says (the question alone by default, else with its options in the query:
        :mod:`gemrag.memory.choice_queries`) (``build``: see :meth:`retrieve`). With ``[answer] cite`` (the
        default) the answer names the context passages it rests on:
        ``[n]`` markers in its text, ``Answer.cited`` / ``Answer.citations`` (each cited hit with its provenance) and
        ``Answer.dropped_citations`` (markers naming no passage, removed).

        Raises:
            MemoryNotIndexedError: the strategy has not been built (and ``build`` is False).
            ValueError: empty question, or more than 10 choices.
        """
        return asking.ask(self, question, choices, budget, strategy, build)

    def ask_stream(
        self,
        question: str,
        choices: Sequence[str] | None = None,
        budget: int | None = None,
        strategy: str | None = None,
        *,
        build: bool = False,
    ) -> Generator[str | Answer, None, None]:
        """:meth:`ask` with the answer read as the LLM writes it: retrieves now (so a bad question or an unbuilt
        strategy raises here, before anything is streamed), then returns a generator that yields the answer's text
        in pieces (``str``, non-empty) and, last, the :class:`~gemrag.answers.answer.Answer` — text, hits (with their
        provenance), usage and citations (``cited``, ``dropped_citations``, ``citations``), as :meth:`ask` returns
        them (:func:`gemrag.answers.streaming.answer_stream`). Citing, the pieces are the model's raw text, ``[n]``
        markers as it writes them, also one that names no passage; the Answer's text has that one removed and counted in
        ``dropped_citations``.

        A cached answer streams at once (its whole text as one piece); a multiple-choice answer is not streamed
        token by token (the chosen option's text comes as one piece). Usage is recorded when the stream ends. The
        LLM is held while the stream is being read: read it to its Answer, or close it (``close()``, or
        ``with contextlib.closing(mem.ask_stream(q)) as stream``) to stop the generation early, from the thread
        that read it. Example::

            for item in mem.ask_stream("Who is Korvin?"):
                if isinstance(item, str):
                    print(item, end="", flush=True)
                else:
                    print(); answer = item  # item.hits, item.usage

        Raises:
            MemoryNotIndexedError: the strategy has not been built (and ``build`` is False).
            ValueError: empty question, or fewer than 2 or more than 10 choices.
            GemragError: the LLM failed (raised by the generator, before or between pieces).
        """
        return asking.ask_stream(self, question, choices, budget, strategy, build)

    def answer(
        self,
        question: str,
        hits: Sequence[Hit],
        choices: Sequence[str] | None = None,
        retrieval_seconds: float = 0.0,
        *,
        abstain: bool = False,
        short: bool = False,
    ) -> Answer:
        """Answer ``question`` from a given context: :func:`gemrag.answers.answering.answer_question` with this memory's
        LLM, meter and store, citing the passages used when ``config.answer.cites(short=short)`` (by default not
        in the short form; ``abstain``, ``short`` — the span-answer form —, an agent's answer, choices, citations:
        there).

        Raises:
            ValueError: fewer than 2 or more than 10 choices.
        """
        return asking.answer(self, question, hits, choices, retrieval_seconds, abstain=abstain, short=short)

    def stats(self) -> dict[str, Any]:
        """Documents, the sources holding each (``sources``: document id -> source paths, primary first, for the
        documents several sources hold), nodes, models, parameters, tokens and seconds per phase, failures, the
        strategy's report (for GEM: the spectrum report with Remarks 2 and 3), every strategy's build state and, as
        ``titles``, whether each built strategy that reads chunk text read the chunks' titles (name -> bool,
        :func:`gemrag.strategies.platform.titles.build_titles`)."""
        self.meter.flush()
        return memory_stats(self, self.strategy)
