"""Chunk titles: a memory records whether its chunks have their document's title (``memory.chunk_titles``), each
strategy reads them as its paper does (dense, bm25, remem: ``title\\ntext``; gem, unweaver, hlgraph, raptor: the text
alone) unless its ``read_titles`` says otherwise, the stored text is unchanged, every build records what it read, and a
build made before that choice existed keeps reading titles until an explicit setting rebuilds it (issues 29, 38)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory
from gemrag.config import Config, load_config
from gemrag.errors import IncompatibleMemoryError
from gemrag.strategies.gem.settings import gem_config
from gemrag.strategies.gem.strategy import QUESTIONS_TITLES_META
from gemrag.strategies.platform.titles import READ_TITLES, TITLES_META
from gemrag.strategies.raptor.strategy import RaptorParams, RaptorStrategy
from test_memory import DOC_A, DOC_B

TITLE, OTHER = "Zanzibar Beacon", "Quillfeather Almanac"
PAPER = {"gem": False, "unweaver": False, "hlgraph": False, "dense": True, "bm25": True, "remem": True}
"""Each strategy's default: whether its paper reads a chunk with its document's title."""


class RecordingEmbedder(HashEmbedder):
    """The hashing embedder, keeping every text it was asked to embed (cache misses only: a fresh memory each)."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += list(texts)
        return super().embed(texts)


def _config(
    config: Config, gem: dict[str, Any] | None = None, memory: dict[str, Any] | None = None, **sections: dict[str, Any]
) -> Config:
    base, chunks = (
        gem_config(config).model_dump(exclude={READ_TITLES}),
        config.memory.model_dump(exclude={"chunk_titles"}),
    )
    return load_config(None, {"memory": {**chunks, **(memory or {})}, "gem": {**base, **(gem or {})}, **sections})


def _with_setting(config: Config, strategy: str, value: bool | None) -> Config:
    """``config`` with ``<strategy>.read_titles = value`` (None: unset); UnWeaver elects by AV (no abcvoting)."""
    setting = {} if value is None else {READ_TITLES: value}
    sections: dict[str, dict[str, Any]] = {"unweaver": {"rule": "av"}}
    if strategy == "gem":
        return _config(config, setting, **sections)
    sections[strategy] = {**sections.get(strategy, {}), **setting}
    return _config(config, **sections)


def _titled(texts: Sequence[str], title: str = TITLE) -> list[str]:
    return [t for t in texts if f"{title}\n" in t]


def test_titles_are_indexed_not_stored(tmp_path: Path, config: Config) -> None:
    emb = HashEmbedder()
    with Memory.open(tmp_path / "m", config, llm=ScriptedLLM(), embedder=emb) as mem:
        assert mem.store.get_meta(TITLES_META) is True  # the default, recorded by the new memory
        mem.add_text(DOC_A, title=TITLE)
        mem.add_text(DOC_B)  # the default title "text" names nothing: no header
        mem.index(strategy="dense")
        mem.index(strategy="bm25")
        chunks = mem.store.nodes("chunk")
        a = [c for c in chunks if c.doc_id == chunks[0].doc_id]
        b = [c for c in chunks if c.doc_id != chunks[0].doc_id]
        assert all(not c.text.startswith("Zanzibar") for c in chunks)  # the stored text is the passage
        vectors = mem.store.load_published("dense").arrays["vectors"]
        expected = emb.embed([f"{TITLE}\n{c.text}" for c in a] + [c.text for c in b])
        np.testing.assert_allclose(vectors, expected, atol=1e-6)
        # BM25 finds the titled chunks by a word only their title has; the hit's text is the plain chunk
        hits = mem.retrieve("Zanzibar", len(chunks), strategy="bm25")
        assert {h.node_id for h in hits if h.score > 0} == {c.id for c in a}
        assert hits[0].text == mem.store.node(hits[0].node_id).text
        assert mem.stats()["params"]["chunk_titles"] is True
        assert mem.stats()["titles"] == {"bm25": True, "dense": True}  # what `gemrag info` prints
        assert mem.store.manifest("dense").params[READ_TITLES] is True  # recorded by the build


@pytest.mark.parametrize("override", [None, "other"])
@pytest.mark.parametrize("strategy", sorted(PAPER))
def test_each_method_reads_titles_as_its_paper_unless_overridden(
    tmp_path: Path, config: Config, strategy: str, override: str | None
) -> None:
    reads = PAPER[strategy] if override is None else not PAPER[strategy]
    llm, emb = ScriptedLLM(), RecordingEmbedder()
    cfg = _with_setting(config, strategy, None if override is None else reads)
    with Memory.open(tmp_path / "m", cfg, llm=llm, embedder=emb) as mem:
        mem.add_text(DOC_A, title=TITLE)
        mem.index(strategy=strategy)
        n = len(mem.store.nodes("chunk"))
        titled = _titled(llm.prompts + emb.texts)
        if not reads:
            assert titled == []  # no prompt and no embedded text carries the title
        elif strategy == "bm25":  # no model reads it: the index does
            assert all(h.score > 0 for h in mem.retrieve("Zanzibar", n, strategy="bm25"))
        else:
            uses_llm = strategy != "dense"
            assert len(_titled(llm.prompts)) >= n * uses_llm  # every chunk's extraction prompt carries the title
            assert len(_titled(emb.texts)) >= (n if strategy in ("gem", "dense", "remem") else 0)
        if not reads and strategy == "bm25":
            assert all(h.score == 0 for h in mem.retrieve("Zanzibar", n, strategy="bm25"))
        assert mem.stats()["titles"] == {strategy: reads}
        assert mem.store.manifest(strategy).params[READ_TITLES] is reads


def _pca(X: np.ndarray, n_components: int, n_neighbors: int) -> np.ndarray:
    centred = X - X.mean(axis=0)
    return centred @ np.linalg.svd(centred, full_matrices=False)[2][:n_components].T


@pytest.mark.parametrize("reads", [False, True])
def test_raptor_embeds_its_leaves_without_titles_by_default(tmp_path: Path, config: Config, reads: bool) -> None:
    llm, emb = ScriptedLLM(), RecordingEmbedder()
    cfg = _config(config, raptor={READ_TITLES: True}) if reads else config
    with Memory.open(tmp_path / "m", cfg, llm=llm, embedder=emb) as mem:
        mem.add_text(DOC_A + " " + DOC_B, title=TITLE)
        mem.index(strategy="full")  # chunks the document
        RaptorStrategy(RaptorParams(reducer=_pca, reduction_dim=2, read_titles=reads or None)).build(mem.ctx)
        n = len(mem.store.nodes("chunk"))
        assert mem.store.nodes("summary", strategy="raptor")  # a layer was summarized
        assert _titled(llm.prompts) == []  # the summaries read the chunks' own text either way
        assert len(_titled(emb.texts)) == (n if reads else 0)
        assert mem.store.manifest("raptor").params[READ_TITLES] is reads


def _as_built_before_issue_38(mem: Memory, *strategies: str) -> None:
    """Make the memory look as an older gemrag left it: builds that recorded nothing about titles, questions whose
    input is not recorded (every strategy then read titles exactly when the memory had them)."""
    with mem.store.transaction() as c:
        for name in strategies:
            c.execute("UPDATE builds SET params = json_remove(params, '$.read_titles') WHERE strategy = ?", (name,))
    mem.store.set_meta(QUESTIONS_TITLES_META, None)
    assert all(READ_TITLES not in mem.store.manifest(name).params for name in strategies)


def test_an_older_build_keeps_reading_titles_until_a_setting_rebuilds_it(tmp_path: Path, config: Config) -> None:
    before_38 = _config(config, {READ_TITLES: True}, unweaver={"rule": "av", READ_TITLES: True})
    with Memory.open(tmp_path / "m", before_38, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A, title=TITLE)
        mem.index(strategy="gem")
        mem.index(strategy="unweaver")
        _as_built_before_issue_38(mem, "gem", "unweaver")
    defaults = _with_setting(config, "gem", None)
    llm = ScriptedLLM()
    with Memory.open(tmp_path / "m", defaults, llm=llm, embedder=HashEmbedder()) as mem:
        first = {c.id for c in mem.store.nodes("chunk")}
        questions = [q for q in mem.store.questions() if q[1] in first]
        mem.add_text(DOC_B, title=OTHER)
        mem.index(strategy="gem")
        mem.index(strategy="unweaver")
        new = [c for c in mem.store.nodes("chunk") if c.id not in first]
        # only the new chunks were asked about (the old chunks keep their questions and entities), and as the old
        # builds read: with their title, once by GEM and once by UnWeaver
        assert [q for q in mem.store.questions() if q[1] in first] == questions
        assert _titled(llm.prompts) == []
        assert all(sum(f"{OTHER}\n{c.text}" in p for p in llm.prompts) == 2 for c in new)
        assert mem.stats()["titles"] == {"gem": True, "unweaver": True}  # now recorded by the builds
        assert mem.store.manifest("unweaver").params[READ_TITLES] is True
    llm = ScriptedLLM()
    rebuilt = _config(config, {READ_TITLES: False}, unweaver={"rule": "av", READ_TITLES: False})
    with Memory.open(tmp_path / "m", rebuilt, llm=llm, embedder=HashEmbedder()) as mem:
        mem.index(strategy="gem")  # the explicit setting: every chunk's questions again, from its text alone
        mem.index(strategy="unweaver")  # and every chunk's entities (artefacts of the other input are not read)
        chunks = mem.store.nodes("chunk")
        assert _titled(llm.prompts) == _titled(llm.prompts, OTHER) == []
        assert all(sum(p.count(c.text) for p in llm.prompts) >= 2 for c in chunks)
        assert mem.stats()["titles"] == {"gem": False, "unweaver": False}
    llm = ScriptedLLM()
    with Memory.open(tmp_path / "m", defaults, llm=llm, embedder=HashEmbedder()) as mem:
        mem.add_text("Ivo Marlow repaired the lighthouse lens in the spring.", title=TITLE)
        mem.index(strategy="gem")  # the default again: as the rebuilt build read, without titles
        assert _titled(llm.prompts) == [] and llm.calls > 0
        assert mem.stats()["titles"]["gem"] is False


def test_read_titles_needs_a_memory_with_titles(tmp_path: Path, config: Config) -> None:
    off = _config(config, memory={"chunk_titles": False})
    with Memory.open(tmp_path / "m", off, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem:
        mem.add_text(DOC_A, title=TITLE)
        mem.index(strategy="dense")
        assert mem.stats()["titles"] == {"dense": False}  # no strategy reads titles the memory does not have
    asking = _config(config, dense={READ_TITLES: True})
    with (
        Memory.open(tmp_path / "m", asking, llm=ScriptedLLM(), embedder=HashEmbedder()) as mem,
        pytest.raises(IncompatibleMemoryError, match="dense.read_titles = true"),
    ):
        mem.index(strategy="dense")


def test_switched_off_and_recorded(tmp_path: Path, config: Config) -> None:
    off = _config(config, memory={"chunk_titles": False})
    emb = HashEmbedder()
    with Memory.open(tmp_path / "m", off, llm=ScriptedLLM(), embedder=emb) as mem:
        mem.add_text(DOC_A, title=TITLE)
        mem.index(strategy="dense")
        chunks = mem.store.nodes("chunk")
        np.testing.assert_allclose(
            mem.store.load_published("dense").arrays["vectors"], emb.embed([c.text for c in chunks]), atol=1e-6
        )
    # the default (not given explicitly) keeps the memory's record; an explicit other value is refused
    with Memory.open(tmp_path / "m", config, llm=ScriptedLLM(), embedder=emb) as mem:
        assert mem.store.get_meta(TITLES_META) is False
    with pytest.raises(IncompatibleMemoryError, match="without their document titles"):
        Memory.open(tmp_path / "m", _config(config, memory={"chunk_titles": True}), llm=ScriptedLLM(), embedder=emb)


def test_a_memory_chunked_before_the_setting_keeps_working(tmp_path: Path, config: Config) -> None:
    emb = HashEmbedder()
    with Memory.open(tmp_path / "m", config, llm=ScriptedLLM(), embedder=emb) as mem:
        mem.add_text(DOC_A, title=TITLE)
        mem.index(strategy="dense")
        before = np.array(mem.store.load_published("dense").arrays["vectors"])
        mem.store.set_meta(TITLES_META, None)  # as an older gemrag left it: chunks, nothing recorded
        _as_built_before_issue_38(mem, "dense")
    with Memory.open(tmp_path / "m", config, llm=ScriptedLLM(), embedder=emb) as mem:
        assert mem.store.get_meta(TITLES_META) is False  # recorded as chunked without titles
        mem.index(strategy="dense")
        chunks = mem.store.nodes("chunk")
        after = mem.store.load_published("dense").arrays["vectors"]
        np.testing.assert_allclose(after, emb.embed([c.text for c in chunks]), atol=1e-6)
        assert not np.allclose(before, after)  # the titled build it had was a different index
