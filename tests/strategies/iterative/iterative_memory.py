"""The ``iterative`` tests' corpus and memories: five short documents (two two-hop chains and a distractor), a
memory over them built for ``iterative`` (over dense, named: a base of one ranking, over hashed bag-of-words
vectors) with a scripted LLM (:class:`steps_llm.StepLLM`), and the helpers the tests read hits with."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from steps_llm import StepLLM

from fakes import HashEmbedder
from gemrag import Memory
from gemrag.config import Config, load_config
from gemrag.strategies.gem.settings import gem_config
from gemrag.types import Hit

DOCS = {
    "Blue River": "Blue River is a 1994 film directed by Jane Roe. It was shot on the coast of Maine.",
    "Jane Roe": "Jane Roe was born in Tromsø in Norway. She studied painting before she made films.",
    "Red Hills": "Red Hills is a 1990 film about a mining town. Its director was Karl Berg.",
    "Karl Berg": "Karl Berg was born in Graz. He taught at a film school in Vienna.",
    "Tide tables": "Tide tables list the height of the sea for every hour of the day.",
}
QUESTION = "Where was the director of the film Blue River born?"

Opener = Callable[..., Memory]
"""``open_memory(llm, **settings)``: a new memory over :data:`DOCS` with ``[iterative]`` = ``settings``."""


def open_memory(path: Path, config: Config, llm: StepLLM, **settings: Any) -> Memory:
    """A memory at ``path`` over :data:`DOCS`, ``iterative`` built (its base dense unless given: the tests compare
    with dense's rankings), ``llm`` its LLM and ``settings`` its ``[iterative]`` section (``mode = "ircot"`` unless
    given: decompose is the default, and the IRCoT tests leave their mode unsaid)."""
    settings = {"mode": "ircot", "base": "dense", **settings}
    cfg = load_config(
        None, {"memory": {"chunk_tokens": 60}, "gem": gem_config(config).model_dump(), "iterative": settings}
    )
    mem = Memory.open(path / "m", cfg, llm=llm, embedder=HashEmbedder())
    for title, text in DOCS.items():
        mem.add_text(text, title=title)
    mem.index(strategy="iterative")
    return mem


@contextmanager
def memories(tmp_path: Path, config: Config) -> Iterator[Opener]:
    """An :data:`Opener` whose memories (each in its own folder under ``tmp_path``) are closed on exit."""
    made: list[Memory] = []

    def opener(llm: StepLLM, **settings: Any) -> Memory:
        made.append(open_memory(tmp_path / str(len(made)), config, llm, **settings))
        return made[-1]

    try:
        yield opener
    finally:
        for mem in made:
            mem.close()


def ids(hits: list[Hit]) -> list[int]:
    """The hits' node ids, in order."""
    return [h.node_id for h in hits]


def interleaved(lists: list[list[int]], budget: int) -> list[int]:
    """Round-robin by rank over the lists, a node once (the documented rule, written out independently)."""
    out: list[int] = []
    for rank in range(max(len(x) for x in lists)):
        for node_ids in lists:
            if rank < len(node_ids) and node_ids[rank] not in out:
                out.append(node_ids[rank])
    return out[:budget]


def doc_of(mem: Memory, hit_id: int) -> str:
    """The title of the document chunk ``hit_id`` comes from."""
    doc_id = mem.store.node(hit_id).doc_id
    return next(str(d["title"]) for d in mem.store.documents() if int(d["id"]) == doc_id)
