"""A real two-node Ray cluster on this machine builds GEM over a 10-chunk excerpt of the demo story with the real
0.5B model on each node (issue 28, point 6).

The test starts both nodes itself (``ray start --head --block`` and ``ray start --address ... --block``, one CPU
each, so the two actors land on different nodes) and stops exactly those processes afterwards. One node's worker is
killed with SIGKILL mid-build: the build completes, every chunk has its questions, and the calls started twice
(counted by the workers' call log, ``GEMRAG_RAY_CALL_LOG``) are at most the one call that worker held. A
single-process build made afterwards from the cluster build's LLM cache makes 0 LLM calls and publishes the same
questions, summaries and W. Under CI=true a missing Ray or 0.5B model fails the test.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from test_ray_pool import published

from gemrag import Memory, load_config
from gemrag.ingest import chunk_text, minilm_tokenizer
from paths import REPO
from realparts import require_real, require_small_model

pytestmark = pytest.mark.integration

STORY = REPO / "examples" / "quality" / "lost_in_translation.txt"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``(address, call log)`` of a two-node cluster started by this fixture (and stopped by it)."""
    if importlib.util.find_spec("ray") is None:
        require_real("Ray is not installed (pip install 'gemrag[cluster]')")
    require_small_model()
    log = tmp_path_factory.mktemp("ray") / "calls.log"
    # loopback only, no token (Ray 2.60 defaults to token authentication for clusters started by `ray start`)
    settings_env = {"GEMRAG_RAY_CALL_LOG": str(log), "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    saved = {k: os.environ.get(k) for k in settings_env}
    os.environ.update(settings_env)  # the driver (this process) too
    env = dict(os.environ)
    ray_cli = str(Path(sys.executable).parent / "ray")
    port = free_port()
    common = ["--num-cpus=1", "--object-store-memory=100000000", "--block", "--disable-usage-stats"]
    common.append("--node-ip-address=127.0.0.1")
    head = subprocess.Popen(
        [ray_cli, "start", "--head", f"--port={port}", "--include-dashboard=false", *common],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    address = f"127.0.0.1:{port}"
    time.sleep(5)
    node = subprocess.Popen(
        [ray_cli, "start", f"--address={address}", *common],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        import ray

        ray.init(address=address, log_to_driver=False)
        deadline = time.time() + 120
        while len([n for n in ray.nodes() if n["Alive"]]) < 2:
            assert time.time() < deadline, "the second Ray node did not join"
            time.sleep(1)
        yield address, log
    finally:
        import ray

        ray.shutdown()
        for proc in (node, head):  # `ray start --block` stops its node's processes when terminated
            proc.terminate()
        for proc in (node, head):
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def excerpt(chunks: int = 10) -> str:
    """The first ``chunks`` chunks (T = 100 MiniLM tokens) of the demo story, as one text."""
    parts = chunk_text(STORY.read_text(encoding="utf-8"), minilm_tokenizer(), 100)[:chunks]
    return "\n\n".join(p.text for p in parts)


def settings(ray: str | None) -> object:
    llm: dict[str, object] = {"model": "qwen2.5-coder-0.5b", "n_ctx": 2048, "n_threads": 1}
    if ray:
        llm |= {"ray": ray, "ray_actors": 2, "ray_actor_concurrency": 1, "ray_actor_cpus": 1}
    return load_config(None, {"strategy": "gem", "llm": llm, "memory": {"chunk_tokens": 100}, "progress": False})


def test_two_nodes_build_survive_a_killed_worker_and_fill_the_cache(cluster: tuple[str, Path], tmp_path: Path) -> None:
    import ray

    address, log = cluster
    text = excerpt()
    with Memory.open(tmp_path / "cluster", settings(address)) as mem:  # type: ignore[arg-type]
        mem.add_text(text, title="excerpt")
        pool = mem.llm().inner  # type: ignore[attr-defined]
        pids = ray.get([actor.pid.remote() for actor in pool.actors])
        nodes = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
        assert len(nodes) == 2 and len(set(pids)) == 2

        def kill_one_mid_build() -> None:
            while not log.exists() or len(log.read_text().splitlines()) < 4:
                time.sleep(0.2)
            os.kill(pids[0], signal.SIGKILL)

        killer = threading.Thread(target=kill_one_mid_build, daemon=True)
        killer.start()
        report = mem.index()
        killer.join(timeout=5)
        chunks = mem.store.nodes("chunk")
        assert len(chunks) == 10 and report.chunks == 10
        answered = {nid for _, nid, _ in mem.store.questions()}
        failed = {n.id for n in chunks} - answered
        assert not failed or report.failures == len(failed)  # a chunk without questions is a recorded failure
        assert report.failures <= 1
        started = Counter(line.split()[1] for line in log.read_text().splitlines())
        repeated = sum(count - 1 for count in started.values())
        assert repeated <= 1  # the one call the killed worker held (ray_actor_concurrency = 1)
        assert pids[0] not in ray.get([actor.pid.remote() for actor in pool.actors])
        first = published(mem)

    single = tmp_path / "single"
    with Memory.open(single, settings(None)) as mem:  # type: ignore[arg-type]
        mem.add_text(text, title="excerpt")
    with sqlite3.connect(single / "memory.sqlite") as db:
        db.execute("ATTACH ? AS c", (str(tmp_path / "cluster" / "memory.sqlite"),))
        db.execute("INSERT INTO llm_cache SELECT * FROM c.llm_cache")
    with Memory.open(single, settings(None)) as mem:  # type: ignore[arg-type]
        report = mem.index()
        assert report.llm_calls == 0
        second = published(mem)
    assert second["questions"] == first["questions"] and second["summaries"] == first["summaries"]
    np.testing.assert_allclose(second["weights"], first["weights"], atol=1e-9)  # type: ignore[arg-type]
