"""The LLM calls of a build on Ray actors (``llm.ray``, models/ray_pool.py) with a real local Ray cluster and the
stand-in OpenAI-compatible server (tests/standin_openai.py): a worker killed with SIGKILL mid-build loses no item and
repeats at most the calls it held; a single-process build from that memory's LLM cache makes no LLM call and
publishes the same build; without ``llm.ray`` nothing imports Ray. Under CI=true a missing Ray fails."""

from __future__ import annotations

import importlib.util
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from fakes import HashEmbedder
from gemrag import Memory, load_config
from realparts import require_real
from standin_openai import StandIn, serve
from test_memory import DOC_A, DOC_B

ACTORS, PER_ACTOR = 2, 2


@pytest.fixture(scope="module")
def ray_local() -> Iterator[object]:
    """A local Ray cluster for this module (started by the first RayLLM), shut down afterwards."""
    if importlib.util.find_spec("ray") is None:
        require_real("Ray is not installed (pip install 'gemrag[cluster]')")
    import ray

    yield ray
    ray.shutdown()


def config(url: str, ray: str | None) -> object:
    llm = {"provider": "openai", "model": "standin", "base_url": url, "api_key": "x", "concurrency": 4}
    if ray:
        llm |= {"ray": ray, "ray_actors": ACTORS, "ray_actor_concurrency": PER_ACTOR}
    return load_config(None, {"strategy": "gem", "llm": llm, "memory": {"chunk_tokens": 16}, "progress": False})


def build(path: Path, cfg: object) -> Memory:
    mem = Memory.open(path, cfg, embedder=HashEmbedder())  # type: ignore[arg-type]
    mem.add_text(DOC_A)
    mem.add_text(DOC_B, "garden")
    return mem


def published(mem: Memory) -> dict[str, object]:
    """What a GEM build published, in comparable form: question texts per chunk text, summary texts, W."""
    arrays = mem.store.load_published("gem").arrays
    questions = sorted((mem.store.node(nid).text, text) for _, nid, text in mem.store.questions())
    summaries = sorted(n.text for n in mem.store.nodes("summary"))
    w = arrays["weights"]
    return {"questions": questions, "summaries": summaries, "weights": w.toarray() if sp.issparse(w) else np.array(w)}


def test_killed_worker_loses_nothing_and_the_cache_serves_a_single_process_build(
    ray_local: object, tmp_path: Path
) -> None:
    state = StandIn(slots=4, latency=0.25)
    server, url = serve(state)
    try:
        with build(tmp_path / "cluster", config(url, "local")) as mem:
            pool = mem.llm().inner  # type: ignore[attr-defined]
            ray = ray_local
            pids = ray.get([actor.pid.remote() for actor in pool.actors])  # type: ignore[attr-defined]
            assert len(set(pids)) == ACTORS

            def kill_one_mid_build() -> None:
                while sum(state.bodies.values()) < 6:
                    time.sleep(0.02)
                os.kill(pids[0], signal.SIGKILL)

            killer = threading.Thread(target=kill_one_mid_build)
            killer.start()
            report = mem.index()
            killer.join()
            assert report.failures == 0
            chunks = mem.store.nodes("chunk")
            assert len(chunks) > 10
            asked = {node for node, *_ in ((n.id,) for n in chunks)}
            answered = {nid for _, nid, _ in mem.store.questions()}
            assert asked <= answered  # no item lost: every chunk has its questions
            repeated = sum(count - 1 for count in state.bodies.values())
            assert repeated <= PER_ACTOR  # at most the calls the killed worker held
            new_pids = ray.get([actor.pid.remote() for actor in pool.actors])  # type: ignore[attr-defined]
            assert pids[0] not in new_pids  # Ray restarted the killed actor
            first = published(mem)
            calls_before = sum(state.bodies.values())

        single = tmp_path / "single"
        with build(single, config(url, None)) as mem:
            pass
        with sqlite3.connect(single / "memory.sqlite") as db:  # the cluster build's LLM cache, nothing else
            db.execute("ATTACH ? AS c", (str(tmp_path / "cluster" / "memory.sqlite"),))
            db.execute("INSERT INTO llm_cache SELECT * FROM c.llm_cache")
        with Memory.open(single, config(url, None), embedder=HashEmbedder()) as mem:  # type: ignore[arg-type]
            report = mem.index()
            assert report.llm_calls == 0 and sum(state.bodies.values()) == calls_before
            second = published(mem)
        assert second["questions"] == first["questions"] and second["summaries"] == first["summaries"]
        np.testing.assert_allclose(second["weights"], first["weights"], atol=1e-12)  # type: ignore[arg-type]
    finally:
        server.shutdown()


def test_without_llm_ray_nothing_imports_ray(tmp_path: Path) -> None:
    code = (
        "import sys; sys.path.insert(0, 'tests')\n"
        "from fakes import HashEmbedder, ScriptedLLM\n"
        "from gemrag import Memory, load_config\n"
        "import gemrag.cli, gemrag.models.factory\n"
        f"m = Memory.open({str(tmp_path / 'm')!r}, load_config(None, {{'strategy': 'gem', 'progress': False}}),"
        " llm=ScriptedLLM(), embedder=HashEmbedder())\n"
        "m.add_text('The lighthouse keeper counts puffins. They return in spring.'); m.index(); m.close()\n"
        "assert 'ray' not in sys.modules, 'ray was imported'\n"
    )
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    from gemrag.models.ray_pool import ray_address  # importing the module does not import Ray either

    assert ray_address("local") == "local" and ray_address("auto") == "auto"
