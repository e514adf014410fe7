"""The public API: :class:`Memory` — open a memory directory, add documents, index, retrieve, ask.

The CLI (``gemrag.cli``) only parses arguments and calls this class.

Example::

    from gemrag import Memory, load_config
    mem = Memory.open("my-memory", load_config())
    mem.add(["story.txt"])
    mem.index()
    for hit in mem.retrieve("Why was Korvin's door left unlocked?"):
        print(hit.node_id, hit.kind, round(hit.score, 3), hit.text[:80])
        for p in hit.provenance.passages:  # the chunks it was made from, with their documents and spans
            print("   ", p.document.source, p.ordinal, p.start, p.end)
    answer = mem.ask("Who is Korvin?")
    print(answer.text)  # with [n] markers naming the context passages it rests on
    for hit in answer.citations:
        print(hit.rank + 1, hit.provenance.documents[0].title if hit.provenance.documents else "?")
    for piece in mem.ask_stream("Who is Didyak?"):  # str pieces as the model writes, then the Answer
        print(piece if isinstance(piece, str) else "", end="", flush=True)

Concurrency: one process at a time builds a memory (adding documents and ``index`` take the directory's
build lock; a second builder gets :class:`~gemrag.errors.MemoryBusyError`), while any number of readers
retrieve from the last *published* build generation, also during a build (:mod:`gemrag.store.publish`). A
memory whose directory or database cannot be written is opened read-only automatically and still answers.

Traces (:mod:`gemrag.tracing`, with OpenTelemetry installed): ``index`` opens a ``gemrag.index`` span
(:mod:`gemrag.memory.indexing`), ``retrieve`` a ``gemrag.retrieve``, ``answer`` a ``gemrag.answer`` and ``ask`` a
``gemrag.ask`` over both; the model calls inside are their children (:mod:`gemrag.models.cache`).

The package, one module per job (each role module takes the memory as a small protocol,
:class:`~gemrag.memory.handle.MemoryHandle`, and none imports the facade):

* :mod:`~gemrag.memory.facade`: :class:`Memory` itself, each method delegating to the modules below;
* adding documents: :mod:`~gemrag.memory.sources` (reading and putting sources), :mod:`~gemrag.memory.source_plan`
  (which source holds which document), :mod:`~gemrag.memory.documents` (chunking, the memory's compatibility);
* building: :mod:`~gemrag.memory.indexing` (one ``index`` run), :mod:`~gemrag.memory.index_plan` (its cost plan),
  :mod:`~gemrag.memory.states` (build states, stale warnings);
* reading: :mod:`~gemrag.memory.retrieval` (the published generation, distinct texts, checked inputs, warm-up),
  :mod:`~gemrag.memory.asking` (retrieve, then answer with the memory's LLM);
* forgetting: :mod:`~gemrag.memory.deletion` (documents and chunks out of every build, one transaction),
  :mod:`~gemrag.memory.forgetting` (delete, purge, rebuild), :mod:`~gemrag.memory.erasing` (erasing what no current
  document states);
* reporting: :mod:`~gemrag.memory.stats`.
"""

from gemrag.answers.answer import Answer
from gemrag.memory.deletion import DeleteReport
from gemrag.memory.facade import Memory
from gemrag.memory.indexing import IndexReport
from gemrag.memory.sources import Source, SourceReport
from gemrag.memory.states import StaleStrategyWarning

__all__ = ["Answer", "DeleteReport", "IndexReport", "Memory", "Source", "SourceReport", "StaleStrategyWarning"]
