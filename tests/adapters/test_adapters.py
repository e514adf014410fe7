"""The LangChain and LlamaIndex retrievers (:mod:`gemrag.adapters`) over a real memory: the MiniLM embedder and
the ``dense`` strategy, three short documents. Each framework is a real part of the ``test`` extra: under
``CI=true`` a missing one fails these tests.
"""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys

import anyio
import pytest

from gemrag import Memory, load_config
from gemrag.errors import MemoryNotIndexedError
from gemrag.types import Hit
from paths import REPO
from realparts import require_real

TEXTS = {
    "lighthouse": "The lighthouse keeper Mara repaints the lighthouse tower red every spring, after the storms.",
    "orchard": "Old Tomas grows forty kinds of pear in the orchard behind the mill and sells cider at the market.",
    "physics": "Quantum tunnelling lets an electron cross a potential barrier it could not climb classically.",
}
QUESTION = "Who grows pears and sells cider?"


def _framework(module: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        require_real(f"{module} is not installed (pip install 'gemrag[{extra}]')")


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Memory:
    mem = Memory.open(tmp_path_factory.mktemp("mem"), load_config(None, {"strategy": "dense"}))
    for title, text in TEXTS.items():
        mem.add_text(text, title=title)
    mem.index()
    yield mem
    mem.close()


def _expected(memory: Memory, budget: int) -> list[Hit]:
    hits = memory.retrieve(QUESTION, budget)
    assert len(hits) == budget
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)  # dense: best first
    return hits


def test_langchain_documents_keep_order_scores_and_provenance(memory: Memory) -> None:
    _framework("langchain_core", "langchain")
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from gemrag.adapters.langchain import GemragRetriever

    retriever = GemragRetriever(memory=memory, budget=3)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke(QUESTION)  # LangChain's Runnable API
    hits = _expected(memory, 3)
    assert all(isinstance(d, Document) for d in docs)
    assert [d.page_content for d in docs] == [h.text for h in hits]
    assert [d.metadata["score"] for d in docs] == pytest.approx([h.score for h in hits])
    assert [d.metadata["node_id"] for d in docs] == [h.node_id for h in hits]
    assert [d.id for d in docs] == [f"gemrag:{h.node_id}" for h in hits]
    best = docs[0].metadata
    assert best["titles"] == ["orchard"] and best["document_ids"] == [2] and best["chunk_ids"] == [best["node_id"]]
    assert best["kind"] == "chunk" and best["strategy"] == "dense" and best["rank"] == 0
    assert [d.metadata["rank"] for d in docs] == [0, 1, 2]


def test_langchain_batch_async_and_errors(memory: Memory) -> None:
    _framework("langchain_core", "langchain")
    from pydantic import ValidationError

    from gemrag.adapters.langchain import GemragRetriever

    retriever = GemragRetriever(memory=memory, budget=1, strategy="dense")
    tower, cider = retriever.batch(["What colour is the tower?", "Where is cider sold?"])
    assert tower[0].metadata["titles"] == ["lighthouse"] and cider[0].metadata["titles"] == ["orchard"]
    electron = anyio.run(retriever.ainvoke, "Can an electron cross a barrier?")
    assert [d.metadata["titles"] for d in electron] == [["physics"]]
    with pytest.raises(ValidationError):
        GemragRetriever(memory=memory, budget=0)
    with pytest.raises(KeyError, match="unknown strategy"):
        GemragRetriever(memory=memory, strategy="nope").invoke(QUESTION)
    with pytest.raises(MemoryNotIndexedError):
        GemragRetriever(memory=memory, strategy="bm25").invoke(QUESTION)


def test_llamaindex_nodes_keep_order_scores_and_provenance(memory: Memory) -> None:
    _framework("llama_index.core", "llamaindex")
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

    from gemrag.adapters.llamaindex import GemragRetriever

    retriever = GemragRetriever(memory, budget=3)
    assert isinstance(retriever, BaseRetriever)
    nodes = retriever.retrieve(QUESTION)  # LlamaIndex's retriever API
    hits = _expected(memory, 3)
    assert all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in nodes)
    assert [n.node.get_content() for n in nodes] == [h.text for h in hits]
    assert [n.score for n in nodes] == pytest.approx([h.score for h in hits])
    assert [n.node.node_id for n in nodes] == [f"gemrag:{h.node_id}" for h in hits]
    best = nodes[0].node.metadata
    assert best["titles"] == ["orchard"] and best["document_ids"] == [2] and best["node_id"] == hits[0].node_id
    assert best["score"] == pytest.approx(nodes[0].score) and best["strategy"] == "dense"
    # the LLM and the embedder LlamaIndex drives see the node's text only, not the metadata
    assert nodes[0].node.get_content(metadata_mode=MetadataMode.LLM) == hits[0].text
    assert nodes[0].node.get_content(metadata_mode=MetadataMode.EMBED) == hits[0].text


def test_llamaindex_async_query_bundle_and_errors(memory: Memory) -> None:
    _framework("llama_index.core", "llamaindex")
    from llama_index.core.schema import QueryBundle

    from gemrag.adapters.llamaindex import GemragRetriever

    retriever = GemragRetriever(memory, budget=1)
    tower = retriever.retrieve(QueryBundle("What colour is the tower?"))
    assert tower[0].node.metadata["titles"] == ["lighthouse"]
    electron = anyio.run(retriever.aretrieve, "Can an electron cross a barrier?")
    assert electron[0].node.metadata["titles"] == ["physics"]
    with pytest.raises(ValueError, match="budget"):
        GemragRetriever(memory, budget=0)
    with pytest.raises(MemoryNotIndexedError):
        GemragRetriever(memory, strategy="bm25").retrieve(QUESTION)


@pytest.mark.parametrize(
    ("adapter", "framework", "extra"),
    [("langchain", "langchain_core", "langchain"), ("llamaindex", "llama_index", "llamaindex")],
)
def test_import_without_the_framework_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, adapter: str, framework: str, extra: str
) -> None:
    for name in [m for m in sys.modules if m == framework or m.startswith(framework + ".")] or [framework]:
        monkeypatch.setitem(sys.modules, name, None)  # as if the framework were not installed
    monkeypatch.delitem(sys.modules, f"gemrag.adapters.{adapter}", raising=False)
    with pytest.raises(ImportError, match=rf"pip install 'gemrag\[{extra}\]'"):
        importlib.import_module(f"gemrag.adapters.{adapter}")


def test_gemrag_imports_no_framework() -> None:
    """``import gemrag`` and ``gemrag.adapters`` load neither framework (they are optional and slow to import)."""
    code = "import sys, gemrag, gemrag.adapters; print(sorted({'langchain_core', 'llama_index'} & set(sys.modules)))"
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
