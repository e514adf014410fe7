"""What the configuration says of the retrieval strategies: the strategy a memory uses when none is named
(:data:`DEFAULT_STRATEGY`) and the title setting every strategy that reads the chunks' text shares
(:class:`ReadTitles`, a base of those strategies' section models). The sections themselves are kept raw by
:class:`gemrag.config.Config` and validated by each strategy's own model (:mod:`gemrag.config`)."""

from __future__ import annotations

from pydantic import BaseModel

#: The strategy a memory uses when none is named (``strategy`` in a file, ``GEMRAG_STRATEGY``, ``--strategy``).
DEFAULT_STRATEGY = "fused"


class ReadTitles(BaseModel):
    """The title setting of every strategy that reads the chunks' text (a base of their section models, GEM's
    :class:`gemrag.strategies.gem.settings.GemConfig` too): whether the strategy reads a chunk as its document's
    title, a newline and its text.

    Attributes:
        read_titles: None (default): as the strategy's paper, its class attribute ``reads_titles`` (dense, bm25 and
            remem read titles, as HippoRAG 2 indexes ``title\ntext`` passages; gem, unweaver, hlgraph and raptor do
            not, their papers extract from the chunk alone: docs/papers.md, "Which method reads what"), except that
            a strategy already built keeps what its build read (an older memory's indexes stay as they were).
            True/False: read titles or not, whatever the paper or the build did (a build that read the other way is
            redone: its extractions, questions or vectors of the other input are not reused). Titles exist only
            where the memory records them (``memory.chunk_titles``): True in a memory without them is an error
            (:func:`gemrag.strategies.platform.titles.strategy_reads_titles`).
    """

    read_titles: bool | None = None
