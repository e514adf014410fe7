"""Property-based run of schemathesis against the OpenAPI schema of a real ``gemrag serve`` on loopback: every
operation gets generated (valid and invalid) requests, and no response may be a 5xx; responses must also match
the documented statuses, content types and schemas. Not checked: that every schema-valid request succeeds
(``positive_data_acceptance``): a schema-valid request can still be bad input for a memory (a whitespace-only
question, an upload that is not ``.txt``/``.md``, an unknown strategy name) and gets a 400 with a message.

Bounded to a few dozen examples per operation (well under a minute on 2 busy cores). The server has the real
MiniLM embedder, ``dense`` as its default strategy, the scripted test-double LLM for ``ask``, one API key for
every namespace (sent with each request) and a namespace ``demo`` with an indexed document, so generated
requests reach the memory code and not only the validation layer."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from fakes import ScriptedLLM
from gemrag.config import load_config
from gemrag.models.onnx_embedder import OnnxMiniLMEmbedder
from gemrag.server import KeyRing, create_app
from serverhelp import running, wait_job
from test_memory import DOC_A

KEY = {"Authorization": "Bearer schema-key", "X-API-Key": "schema-key"}
EXAMPLES = 20


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cfg = load_config(None, {"strategy": "dense", "memory": {"chunk_tokens": 30}})
    app = create_app(
        tmp_path_factory.mktemp("schema") / "root",
        cfg,
        keys=KeyRing({"schema-key": ["*"]}),
        embedder=OnnxMiniLMEmbedder(),
        llm=ScriptedLLM(),
    )
    with running(app) as url, httpx.Client(base_url=url, headers=KEY, timeout=30) as client:
        client.post("/v1/namespaces/demo/documents", json={"documents": [{"text": DOC_A, "title": "lighthouse"}]})
        assert wait_job(client, "demo", client.post("/v1/namespaces/demo/index").json()["id"])["status"] == "succeeded"
        yield url


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_server_errors(served: str, mode: GenerationMode) -> None:
    """Each operation: ``EXAMPLES`` generated requests (schema-valid ones, then schema-violating ones); no 5xx,
    and every response conforms to the schema (schemathesis's default checks)."""
    schema = schemathesis.openapi.from_url(f"{served}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12
    seen: dict[int, int] = {}
    inputless: list[str] = []
    for operation in operations:

        @given(case=operation.as_strategy(mode))
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case: schemathesis.Case) -> None:
            response = case.call(headers=KEY, timeout=30)
            seen[response.status_code] = seen.get(response.status_code, 0) + 1
            assert response.status_code < 500, (case.method, case.formatted_path, response.text[:300])
            case.validate_response(response, headers=KEY, excluded_checks=[positive_data_acceptance])

        try:
            check()
        except Unsatisfiable:  # no input to make invalid (no parameters, no body)
            inputless.append(f"{operation.method.upper()} {operation.path}")
    assert set(inputless) <= {"GET /v1/health", "GET /v1/namespaces"}, inputless
    assert not any(code >= 500 for code in seen), seen
    assert sum(seen.values()) >= len(operations) * 5  # really exercised
    print(f"schemathesis {mode.value}: {len(operations)} operations, responses by status {dict(sorted(seen.items()))}")
    if mode is GenerationMode.POSITIVE:
        assert seen.get(200, 0) + seen.get(201, 0) + seen.get(202, 0) > 0, seen  # and some requests succeeded
