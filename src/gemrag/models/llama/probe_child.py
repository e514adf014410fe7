"""The child's side of the model check (:mod:`gemrag.models.llama.probe`): standard library and ``llama_cpp`` only.

The parent runs this file by path through :data:`gemrag.models.llama.probe.BOOT` (not as an installed module, so
that it starts in milliseconds and a ``./llama_cpp`` in the working directory cannot shadow the real one) and
reads the lines it prints that start with :data:`MARKER`: ``{"event": "phase" | "build" | "error" | "done",
...}``. The phases (start, import, load, chat, json, close) tell the parent where a native crash happened.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["DEFAULT_TARGET", "MARKER", "PROBE_SCHEMA", "child_main", "llama_target"]

#: The prefix of every line the child reports on stdout.
MARKER = "@@gemrag-probe@@ "
#: The child's code for a real check: load the GGUF, one chat and one JSON-schema completion.
DEFAULT_TARGET = "llama"

Emit = Callable[..., None]


def _emit(event: str, **data: Any) -> None:
    sys.stdout.write(MARKER + json.dumps({"event": event, **data}) + "\n")
    sys.stdout.flush()


PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "boolean"}},
    "required": ["answer"],
}


def llama_target(request: dict[str, Any], emit: Emit) -> dict[str, Any]:
    """The real check, run in the child: load the GGUF, one chat completion (4 tokens), one JSON-schema one.

    Returns:
        ``{"chat": text, "json": text}``.
    """
    emit("phase", phase="import")
    import llama_cpp

    emit(
        "build",
        version=llama_cpp.__version__,
        system_info=llama_cpp.llama_print_system_info().decode("utf-8", "replace"),
    )
    emit("phase", phase="load")
    kwargs: dict[str, Any] = {
        "model_path": request["model_path"],
        "n_ctx": request["n_ctx"],
        "n_batch": request["n_batch"],
        "n_gpu_layers": request["n_gpu_layers"],
        "seed": request["seed"],
        "chat_format": request["chat_format"],
        "verbose": False,
    }
    if request.get("n_threads"):
        kwargs["n_threads"] = kwargs["n_threads_batch"] = request["n_threads"]
    llm = llama_cpp.Llama(**kwargs)
    emit("phase", phase="chat")
    chat = llm.create_chat_completion(
        messages=[{"role": "user", "content": "Reply with the single word OK."}], max_tokens=4, temperature=0.0
    )
    emit("phase", phase="json")
    constrained = llm.create_chat_completion(
        messages=[{"role": "user", "content": "Is the sky blue? Answer in JSON."}],
        response_format={"type": "json_object", "schema": PROBE_SCHEMA},
        max_tokens=16,
        temperature=0.0,
    )
    emit("phase", phase="close")
    llm.close()
    return {"chat": _content(chat), "json": _content(constrained)}


def _content(response: Any) -> str:
    """The text of a non-streamed chat completion (llama-cpp-python annotates the union with the streamed form)."""
    return str(response["choices"][0]["message"].get("content") or "")


def _resolve_target(target: str) -> Callable[[dict[str, Any], Emit], dict[str, Any]]:
    if target == DEFAULT_TARGET:
        return llama_target
    where, _, name = target.rpartition(":")
    if where.endswith(".py"):
        spec = importlib.util.spec_from_file_location("_gemrag_probe_target", where)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {where}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    return getattr(module, name)


def child_main(argv: list[str]) -> int:
    """The child's entry point: ``argv = [target, request_json]``; reports on stdout; exit code 0 or 1."""
    _emit("phase", phase="start")
    try:
        fn = _resolve_target(argv[0])
        result = fn(json.loads(argv[1]), _emit)
    except Exception as e:  # reported to the parent, which turns it into a "failed" result
        _emit("error", type=type(e).__name__, message=str(e))
        return 1
    _emit("done", **(result or {}))
    return 0


if __name__ == "__main__":  # pragma: no cover - the parent uses the bootstrap, this is for manual runs
    sys.exit(child_main(sys.argv[1:]))
