"""``gemrag serve`` against a real uvicorn server on loopback, with the real MiniLM embedder and the ``dense``
strategy: add -> index job (polled) -> retrieve -> delete; file upload; namespaces isolated from each other;
API keys (401 without a known key, 403 on another namespace); bad input answered with 4xx and a message."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from fakes import ScriptedLLM
from gemrag.config import Config
from gemrag.models.base import Message, Scores, Usage
from gemrag.models.onnx_embedder import OnnxMiniLMEmbedder
from gemrag.server import KeyRing, create_app
from serverhelp import running, wait_job
from test_memory import DOC_A, DOC_B

DENSE = {"strategy": "dense"}


@pytest.fixture(scope="module")
def minilm() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


@pytest.fixture
def server(tmp_path: Path, config: Config, minilm: OnnxMiniLMEmbedder) -> Iterator[tuple[httpx.Client, Path]]:
    """An open server (no keys) over ``tmp_path / "root"``, and a client of it."""
    root = tmp_path / "root"
    app = create_app(root, config, embedder=minilm, llm=ScriptedLLM())
    with running(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client, root


def add(client: httpx.Client, ns: str, text: str, title: str) -> int:
    r = client.post(f"/v1/namespaces/{ns}/documents", json={"documents": [{"text": text, "title": title}]})
    assert r.status_code == 201, r.text
    return int(r.json()["documents"][0]["doc_id"])


def index(client: httpx.Client, ns: str) -> dict[str, Any]:
    r = client.post(f"/v1/namespaces/{ns}/index", json=DENSE)
    assert r.status_code == 202, r.text
    assert r.json()["status"] in ("queued", "running", "succeeded")
    job = wait_job(client, ns, r.json()["id"])
    assert job["status"] == "succeeded", job
    return job


def retrieve(client: httpx.Client, ns: str, question: str, budget: int = 3) -> list[dict[str, Any]]:
    r = client.post(f"/v1/namespaces/{ns}/retrieve", json={"question": question, "budget": budget, **DENSE})
    assert r.status_code == 200, r.text
    return r.json()["hits"]


def test_add_index_retrieve_delete(server: tuple[httpx.Client, Path]) -> None:
    client, root = server
    a = add(client, "notes", DOC_A, "lighthouse")
    add(client, "notes", DOC_B, "garden")
    job = index(client, "notes")
    report = job["report"]
    assert report["documents"] == 2 and report["chunks"] == report["new_chunks"] >= 4
    assert report["usage"]["embedding_tokens"] > 0 and job["finished"] >= job["started"] >= job["created"]
    assert (root / "notes" / "memory.sqlite").is_file()

    hits = retrieve(client, "notes", "What did Marta release to eat the aphids?")
    assert len(hits) == 3 and "ladybirds" in hits[0]["text"]
    assert [h["rank"] for h in hits] == [0, 1, 2]
    assert hits[0]["score"] >= hits[1]["score"] >= hits[2]["score"] and -1.0 <= hits[2]["score"] <= 1.0
    assert all(h["kind"] == "chunk" and isinstance(h["meta"], dict) for h in hits)
    [passage] = hits[0]["passages"]  # provenance (issue 39): the chunk's document and its span in the text
    assert hits[0]["documents"] == [passage["document"]] and passage["document"]["title"] == "garden"
    assert passage["chunk_id"] == hits[0]["node_id"] and hits[0]["strategy"] == "dense"
    assert " ".join(DOC_B[passage["start"] : passage["end"]].split()) == hits[0]["text"]

    stats = client.get("/v1/namespaces/notes/stats").json()
    assert [d["title"] for d in stats["documents"]] == ["lighthouse", "garden"] and stats["chunks"] == report["chunks"]
    listed = client.get("/v1/namespaces/notes/documents").json()["documents"]
    assert [(d["id"], d["chunked"]) for d in listed][0] == (a, True)

    r = client.delete("/v1/namespaces/notes/documents/garden")
    assert r.status_code == 200, r.text
    assert r.json()["document"]["title"] == "garden" and r.json()["chunks"] >= 1
    after = retrieve(client, "notes", "What did Marta release to eat the aphids?", budget=10)
    assert after and not any("Marta" in h["text"] or "aphids" in h["text"] for h in after)
    assert client.delete("/v1/namespaces/notes/documents/garden").status_code == 404
    assert [d["title"] for d in client.get("/v1/namespaces/notes/documents").json()["documents"]] == ["lighthouse"]


def test_delete_with_purge_and_rebuild_erases_the_text(server: tuple[httpx.Client, Path]) -> None:
    client, root = server
    add(client, "vault", DOC_A, "lighthouse")
    add(client, "vault", "The vault on Gull Island opens with TEAL-9031; only Ysolde Marrick knows it.", "vault")
    index(client, "vault")
    r = client.post("/v1/namespaces/vault/index", json={"strategy": "gem"})  # its utility questions are cached
    assert r.status_code == 202 and wait_job(client, "vault", r.json()["id"])["status"] == "succeeded"
    r = client.delete("/v1/namespaces/vault/documents/vault", params={"purge": "true", "rebuild": "true"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["document"]["title"] == "vault" and set(body["rebuilt"]) == {"dense", "gem"}
    assert body["llm_calls"] == sum(body["rebuilt"].values())
    assert body["purge"]["purged"]["llm_entries"] >= 1 and body["purge"]["erasure"]["complete"]
    assert body["purge"]["purged"]["embeddings"] >= 1 and body["purge"]["exchanges"] == []
    files = [p for p in (root / "vault").rglob("*") if p.is_file()]
    assert files and not [p.name for p in files if b"marrick" in p.read_bytes().lower()]
    hits = retrieve(client, "vault", "Who opens the vault?", budget=5)
    assert hits and {h["documents"][0]["title"] for h in hits} == {"lighthouse"}
    plain = client.delete("/v1/namespaces/vault/documents/lighthouse").json()
    assert plain["purge"] is None and plain["rebuilt"] == {}
    assert [p.name for p in (root / "vault").rglob("*") if p.is_file() and b"amos reed" in p.read_bytes().lower()]
    r = client.post("/v1/namespaces/vault/erase")  # later: what the plain delete removed
    assert r.status_code == 200, r.text
    erased = r.json()
    assert erased["erasure"]["complete"] and erased["fragments"] > 0 and erased["quarantined"] >= erased["fragments"]
    assert not [p.name for p in (root / "vault").rglob("*") if p.is_file() and b"amos reed" in p.read_bytes().lower()]
    assert client.post("/v1/namespaces/nowhere/erase").status_code == 404


def test_upload_files_then_ask(server: tuple[httpx.Client, Path]) -> None:
    client, _ = server
    files = [("files", ("garden.md", DOC_B.encode(), "text/markdown")), ("files", ("keeper.txt", DOC_A.encode()))]
    r = client.post("/v1/namespaces/up/documents/upload", files=files)
    assert r.status_code == 201, r.text
    assert [d["created"] for d in r.json()["documents"]] == [True, True]
    titles = {d["title"]: d["source"] for d in client.get("/v1/namespaces/up/documents").json()["documents"]}
    assert titles == {"garden": "upload:garden.md", "keeper": "upload:keeper.txt"}
    again = client.post("/v1/namespaces/up/documents/upload", files=files[:1]).json()["documents"]
    first = r.json()["documents"][0]["doc_id"]
    assert again == [{"doc_id": first, "created": False, "status": "unchanged", "version": 1}]  # same text
    edited = [("files", ("garden.md", DOC_B.replace("tomatoes", "melons").encode(), "text/markdown"))]
    newer = client.post("/v1/namespaces/up/documents/upload", files=edited).json()["documents"]
    assert [(d["doc_id"], d["status"], d["version"]) for d in newer] == [(first, "updated", 2)]  # replaces it
    listed = client.get("/v1/namespaces/up/documents").json()["documents"]
    assert sorted(d["source"] for d in listed) == ["upload:garden.md", "upload:keeper.txt"]
    bad = client.post("/v1/namespaces/up/documents/upload", files=[*files, ("files", ("x.pdf", b"%PDF-1.4"))])
    assert bad.status_code == 400 and "x.pdf" in bad.json()["detail"]
    assert len(client.get("/v1/namespaces/up/documents").json()["documents"]) == 2  # nothing of the bad batch
    index(client, "up")
    r = client.post("/v1/namespaces/up/ask", json={"question": "Who lit the lamp?", "budget": 2, **DENSE})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["text"] == "A free-form answer [1]." and len(body["hits"]) == 2  # the scripted LLM cites [1]
    assert body["cited"] == [1] and body["dropped_citations"] == 0
    [cited] = body["citations"]
    assert cited["marker"] == 1 and cited["node_id"] == body["hits"][0]["node_id"]
    assert cited["passages"] == body["hits"][0]["passages"] and cited["passages"][0]["document"]["source"]
    choice = client.post(
        "/v1/namespaces/up/ask",
        json={"question": "What ate the aphids?", "choices": ["ladybirds", "owls"], **DENSE},
    ).json()
    assert choice["choice"] == 0 and choice["text"] == "ladybirds"
    assert len(choice["cited"]) == 1 and "ladybirds" in choice["citations"][0]["text"]  # the passage it rests on


def test_re_adding_a_source_replaces_it(server: tuple[httpx.Client, Path]) -> None:
    """Issue 26's story over HTTP: a source re-added with a new text is one document, and only the new text is
    retrieved; an explicit id works the same way, and a document without source or id stays anonymous."""
    client, _ = server
    url = "/v1/namespaces/notes/documents"
    old = {"text": "The lighthouse keeper is called Ansel Brandt.", "title": "a", "source": "a.txt"}
    first = client.post(url, json={"documents": [old]}).json()["documents"][0]
    index(client, "notes")
    new = {**old, "text": "The lighthouse keeper is called Marguerite Vale."}
    second = client.post(url, json={"documents": [new]}).json()["documents"][0]
    assert (second["doc_id"], second["status"], second["version"]) == (first["doc_id"], "updated", 2)
    index(client, "notes")
    hits = retrieve(client, "notes", "What is the lighthouse keeper called?", budget=5)
    assert [h["text"] for h in hits] == [new["text"]]
    assert [d["source"] for d in client.get(url).json()["documents"]] == ["a.txt"]
    by_id = [{"text": "Note one.", "id": "n1"}, {"text": "Note one, edited.", "id": "n1"}]
    assert [d["status"] for d in client.post(url, json={"documents": by_id[:1]}).json()["documents"]] == ["added"]
    assert [d["status"] for d in client.post(url, json={"documents": by_id[1:]}).json()["documents"]] == ["updated"]
    anonymous = [{"text": "Anonymous one."}, {"text": "Anonymous two."}]
    assert [d["status"] for d in client.post(url, json={"documents": anonymous}).json()["documents"]] == [
        "added",
        "added",
    ]
    assert len(client.get(url).json()["documents"]) == 4


def test_namespaces_are_isolated(server: tuple[httpx.Client, Path]) -> None:
    client, root = server
    add(client, "alpha", DOC_A, "lighthouse")
    add(client, "beta", DOC_B, "garden")
    job_a = index(client, "alpha")
    index(client, "beta")
    hits = retrieve(client, "beta", "Who lit the great lamp on Gull Island?", budget=10)
    assert hits and all("Amos" not in h["text"] and "lighthouse" not in h["text"] for h in hits)
    assert [d["title"] for d in client.get("/v1/namespaces/beta/stats").json()["documents"]] == ["garden"]
    assert client.get(f"/v1/namespaces/beta/jobs/{job_a['id']}").status_code == 404  # alpha's job is not beta's
    assert client.delete("/v1/namespaces/beta/documents/lighthouse").status_code == 404
    assert client.get("/v1/namespaces").json()["namespaces"] == ["alpha", "beta"]
    assert sorted(p.name for p in root.iterdir()) == ["alpha", "beta"]
    # names that could leave the root are refused before any file is touched
    for name in ["..", ".alpha", "a.b", "-x", "a" * 65, "%2e%2e", "al pha"]:
        r = client.post(f"/v1/namespaces/{name}/documents", json={"documents": [{"text": "x"}]})
        assert r.status_code in (404, 422), (name, r.status_code)
    assert client.get("/v1/namespaces/..%2F..%2Fetc/stats").status_code in (404, 422)
    assert sorted(p.name for p in root.iterdir()) == ["alpha", "beta"]
    assert sorted(p.name for p in root.parent.iterdir()) == ["root"]


def test_bad_input_is_a_4xx_with_a_message(server: tuple[httpx.Client, Path]) -> None:
    client, _ = server
    r = client.post("/v1/namespaces/empty/retrieve", json={"question": "anything"})
    assert r.status_code == 404 and r.json()["error"] == "UnknownNamespaceError"
    assert client.post("/v1/namespaces/empty/index", json=DENSE).status_code == 404
    r = client.post("/v1/namespaces/n/documents", json={"documents": [{"text": "ok text"}, {"text": "bad\x00"}]})
    assert r.status_code == 400 and r.json()["error"] == "InputError", r.text
    assert client.get("/v1/namespaces/n/documents").status_code == 404  # the good one was not added either
    add(client, "n", DOC_A, "lighthouse")
    r = client.post("/v1/namespaces/n/retrieve", json={"question": "Who?", **DENSE})
    assert r.status_code == 409 and r.json()["error"] == "MemoryNotIndexedError"
    r = client.post("/v1/namespaces/n/index", json={"strategy": "nonesuch"})
    assert r.status_code == 400 and "unknown strategy 'nonesuch'" in r.json()["detail"]
    index(client, "n")
    r = client.post("/v1/namespaces/n/retrieve", json={"question": "   ", **DENSE})
    assert r.status_code == 400 and "empty" in r.json()["detail"]
    assert client.post("/v1/namespaces/n/retrieve", json={"question": "x", "budget": 0}).status_code == 422
    assert client.post("/v1/namespaces/n/retrieve", json={"question": "x", "bugdet": 3}).status_code == 422
    assert client.get("/v1/namespaces/n/jobs/0123").status_code == 404


@pytest.fixture
def keyed(tmp_path: Path, config: Config, minilm: OnnxMiniLMEmbedder) -> Iterator[str]:
    """A server whose key file gives ``ka`` namespace a, ``kb`` namespace b and ``kall`` every namespace."""
    from gemrag.server import load_key_file

    key_file = tmp_path / "keys.toml"
    key_file.write_text('ka = ["a"]\nkb = ["b"]\nkall = ["*"]\n', encoding="utf-8")
    app = create_app(tmp_path / "root", config, keys=KeyRing(load_key_file(key_file)), embedder=minilm)
    with running(app) as url:
        yield url


def test_api_keys(keyed: str) -> None:
    def call(key: str | None, ns: str, how: str = "bearer") -> httpx.Response:
        headers = {} if key is None else {"Authorization": f"Bearer {key}"} if how == "bearer" else {"X-API-Key": key}
        body = {"documents": [{"text": f"A note kept in namespace {ns}.", "title": ns}]}
        return httpx.post(f"{keyed}/v1/namespaces/{ns}/documents", json=body, headers=headers)

    assert call(None, "a").status_code == 401
    assert call("wrong", "a").status_code == 401 and call("wrong", "a").headers["www-authenticate"] == "Bearer"
    assert call("kb", "a").status_code == 403 and "'a'" in call("kb", "a").json()["detail"]
    assert call("ka", "a").status_code == 201
    assert call("kb", "b", how="header").status_code == 201
    assert call("kall", "c").status_code == 201
    assert httpx.get(f"{keyed}/v1/namespaces/b/stats", headers={"X-API-Key": "ka"}).status_code == 403
    listed = {k: httpx.get(f"{keyed}/v1/namespaces", headers={"X-API-Key": k}).json() for k in ("ka", "kall")}
    assert listed == {"ka": {"namespaces": ["a"]}, "kall": {"namespaces": ["a", "b", "c"]}}
    assert httpx.get(f"{keyed}/v1/namespaces").status_code == 401
    assert httpx.get(f"{keyed}/v1/health").json()["status"] == "ok"  # no key needed


def test_key_file_errors(tmp_path: Path) -> None:
    from gemrag.errors import ConfigError
    from gemrag.server import load_key_file

    good = tmp_path / "k.json"
    good.write_text(json.dumps({"k1": ["a", "b"]}), encoding="utf-8")
    assert load_key_file(good) == {"k1": ["a", "b"]}
    for name, text in [("k.json", '{"k": "a"}'), ("k.toml", "k = [1]"), ("k.yaml", "k: [a]"), ("k.json", "{")]:
        (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError):
            load_key_file(tmp_path / name)
    with pytest.raises(ConfigError, match="namespace"):
        KeyRing({"k": ["../x"]})
    with pytest.raises(ConfigError, match="list"):
        KeyRing({"k": "a"})  # type: ignore[dict-item]


class ScoringScriptedLLM(ScriptedLLM):
    """The scripted LLM that also scores continuations: a continuation naming "ladybirds" or ending in its letter
    (A) scores -0.1 a word, any other -2.0 a word."""

    def score_continuations(self, messages: Sequence[Message], continuations: Sequence[str]) -> Scores:
        def lp(c: str) -> float:
            return -0.1 if "ladybirds" in c or c.endswith('"A') else -2.0

        return Scores([[lp(c)] * max(1, len(c.split())) for c in continuations], Usage(prompt_tokens=30))


@pytest.mark.parametrize("scoring", ["likelihood", "letter_probability"])
def test_a_served_choice_is_scored_through_the_servers_model(
    tmp_path: Path, config: Config, minilm: OnnxMiniLMEmbedder, scoring: str
) -> None:
    """The server's one-call-at-a-time model forwards continuation scores: a multiple-choice answer chosen by
    likelihood or by the letters' probabilities, streamed or not, carries each option's score."""
    cfg = config.model_copy(update={"answer": config.answer.model_copy(update={"choice_scoring": scoring})})
    app = create_app(tmp_path / "root", cfg, embedder=minilm, llm=ScoringScriptedLLM())
    question = {"question": "What ate the aphids?", "choices": ["ladybirds", "owls"], **DENSE}
    with running(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        add(client, "s", DOC_A, "a")
        index(client, "s")
        body = client.post("/v1/namespaces/s/ask", json=question)
        streamed = client.post("/v1/namespaces/s/ask", json={**question, "stream": True})
    assert body.status_code == 200, body.text
    answer = body.json()
    assert answer["choice"] == 0 and answer["text"] == "ladybirds" and answer["choice_scoring"] == scoring
    assert (
        len(answer["option_scores"]) == 2 and answer["option_scores"][0]["score"] > answer["option_scores"][1]["score"]
    )
    assert streamed.status_code == 200 and '"choice_scoring": "' + scoring in streamed.text.replace('":"', '": "')
