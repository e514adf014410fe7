"""The command-line contract, tested as a whole: every command and option of ``gemrag --help``, given a bad value,
prints ONE ``error:`` line naming the value (and what is accepted) on stderr, exits with code 2, and creates or
changes nothing; no input ever gives a Python traceback.

The table of cases is derived from the typer app itself: every parameter of every command must have bad values here
(numbers get theirs from their declared range) or be listed in ``ANY_VALUE`` with the reason any value is fine, so a
new option without a contract fails ``test_every_option_has_a_contract``. A hypothesis test then draws invocations
mixing valid values of several options with bad ones. The commands' real work (indexing, answering, serving, the
demo, evaluations, the doctor's model checks) is replaced by guards that fail the test if a bad value reaches it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from fakes import HashEmbedder, ScriptedLLM
from gemrag import cli
from gemrag.config import load_config
from gemrag.memory import Memory

ONNX_ID = "onnx:all-MiniLM-L6-v2-int8"
GROUP = typer.main.get_command(cli.app)
COMMANDS: dict[str, Any] = dict(GROUP.commands)  # type: ignore[attr-defined]

BASE: dict[str, dict[str, Any]] = {
    "index": {"memory": "mem"},
    "ask": {"question": "Who lit the lamp?", "memory": "mem"},
    "info": {"memory": "mem"},
    "demo": {},
    "eval": {"kind": "quality", "path": "data.jsonl"},
    "delete": {"document": "lighthouse", "memory": "mem"},
    "erase": {"memory": "mem"},
    "chat": {"memory": "mem", "persona": "Ava"},
    "mcp": {"memory": "mem"},
    "view": {"memory": "mem"},
    "serve": {"memory": "served"},
    "doctor": {},
    "config": {},
    "copy": {"source": "mem", "target": "copied"},
    "pg": {},  # a group: its commands' contract is test_pg_commands_keep_the_contract
}
"""Valid values of the required parameters (the memory ``mem`` exists; a delete of ``lighthouse`` would change it)."""

QUALITY = {
    "article_id": "light",
    "set_unique_id": "light_1",
    "title": "The Keeper",
    "article": "Amos lit the lamp of the lighthouse every night. The harbour master gave him a medal.",
    "questions": [
        {
            "question": "Who lit the lamp?",
            "options": ["Amos", "the harbour master"],
            "gold_label": 1,
            "question_unique_id": "q1",
            "difficult": 0,
        }
    ],
}
"""One QuALITY record (official v1.0 line format), so that ``eval quality data.jsonl`` is valid."""

READ_MEMORY = ["nowhere", "empty-dir", "file.txt", "garbage"]
WRITE_MEMORY = ["file.txt", "garbage"]  # a missing directory is created by these commands: not a bad value
ROOT = ["file.txt"]  # serve: a directory of memories (one per namespace)
EVAL_ROOT = [
    "file.txt",  # eval: only a PostgreSQL URL (its SQLite memories are directories under --out)
    "postgresql://me@db:notaport/app?schema=ev",  # a malformed URL (no server is asked)
    "postgresql://me@db:5432/app",  # no schema prefix
    "postgresql://me@db:5432/app?schema=Ev-Runs",  # not a lower-case SQL identifier
    f"postgresql://me@db:5432/app?schema={'e' * 45}",  # no room left for the memories' names
]

BAD: dict[str, list[Any]] = {
    "config": ["missing.toml", "bad.toml"],
    "publish": ["../escape", ".hidden"],
    "strategy": ["nosuch"],
    "set_": ["nosuch.key=1", "gem.nosuch=1", "memory.budget=0", "noequals"],
    "sets": ["nosuch.key=1", "gem.nosuch=1", "noequals"],
    "llm_provider": ["nosuch"],
    "ray": ["nosuch", "host:port"],
    "answer_form": ["nosuch"],
    "adversarial": ["nosuch"],
    "categories": ["nosuch", ","],
    "llm_model": ["nosuch-model"],
    "embedder_provider": ["nosuch"],
    "embedder_model": ["nosuch-model"],
    "paths": [["missing.txt"], ["binary.bin"], ["empty-dir"], ["file.txt", "missing.txt"]],
    "doc_id": [""],
    "question": ["", "   "],
    "choices": ["only one"],
    "search": ["nosuch"],
    "history": ["nosuch.txt"],
    "document": ["nothing-like-this"],
    "kind": ["nosuch"],
    "path": ["missing.jsonl", "empty-dir"],
    "strategies": ["gem,nosuch"],
    "ablation": ["questions", "eigen=zero"],
    "documents": ["@missing.txt"],
    "reference": ["nosuch"],
    "merge": ["nowhere"],
    "out": ["file.txt"],
    "sheet": ["sheet.jsonl"],  # with a dataset kind other than cmu_dog
    "verdicts": ["sheet.jsonl"],
    "persona": ["", "  "],
    "persona_file": ["missing.md", "binary.bin"],
    "user": [""],
    "output": ["nowhere/memory.html", "empty-dir"],
    "host": ["999.999.999.999"],
    "api_key": [""],
    "api_keys": ["missing.toml", "bad.toml"],
    "judge_model": ["", "some-model"],  # with quality: multiple choice, no free-form answer to judge
    "judge_base_url": ["http://127.0.0.1:9/v1"],
}
"""Bad values by parameter name (numbers get theirs from their declared range, memories by command)."""

ANY_VALUE = {
    "results_dir": "where --publish writes its record (created when missing); read only with --publish",
    "quiet": "a flag",
    "as_json": "a flag",
    "show_context": "a flag",
    "retrieve_only": "a flag",
    "build_missing": "a flag",
    "create": "a flag",
    "show_memories": "a flag",
    "allow_open": "a flag (refused without keys only for a non-loopback host: see the host cases)",
    "no_answer": "a flag",
    "per_question_corpus": "a flag",
    "no_plots": "a flag",
    "date_hint": "a flag",
    "abstain": "a flag",
    "verify": "a flag",
    "sync": "a flag; bad only without a directory (COMBINATIONS)",
    "keep_versions": "a flag; bad only without documents (COMBINATIONS)",
    "plan": "a flag (prints the cost plan and writes nothing)",
    "yes": "a flag (skips the question before a long build)",
    "recalibrate": "a flag (measures the model's speed again)",
    "llm_base_url": "an endpoint, reached only when its model is called",
    "embedder_base_url": "an endpoint, reached only when its model is called",
    "origin": "a flag",
    "seed": "any integer >= 0 (its range is checked like every number's)",
    "purge": "a flag",
    "rebuild": "a flag",
    "stream": "a flag (--stream/--no-stream); bad only with --json (COMBINATIONS)",
}

COMBINATIONS: list[tuple[str, dict[str, Any]]] = [
    ("index", {"sync": True}),
    ("index", {"keep_versions": True}),
    ("index", {"sync": True, "paths": ["file.txt"]}),
    ("index", {"doc_id": "notes", "paths": ["file.txt", "other.txt"]}),
    ("serve", {"host": "0.0.0.0"}),  # no keys and not --allow-open
    ("serve", {"port": "IN_USE"}),
    ("chat", {"memory": "nowhere", "create": False}),
    ("eval", {"kind": "cmu_dog", "runs": "0"}),
    ("eval", {"runs": "2"}),  # repeated runs sample free-form answers: quality is multiple choice
    ("ask", {"stream": True, "as_json": True}),  # --json never streams
]

VALID: dict[str, list[Any]] = {
    "quiet": [True],
    "as_json": [True],
    "strategy": ["dense", "bm25"],
    "set_": ["memory.budget=3", "bm25.k1=1.2"],
    "sets": ["memory.budget=3"],
    "config": ["good.toml"],
    "llm_provider": ["llama_cpp"],
    "llm_model": ["qwen2.5-coder-0.5b"],
    "embedder_provider": ["onnx"],
    "embedder_model": ["all-MiniLM-L6-v2"],
    "llm_base_url": ["http://127.0.0.1:9/v1"],
    "budget": ["2"],
    "wait": ["0.5"],
    "chunk_tokens": ["100"],
    "questions": ["3"],
    "paths": [["file.txt"]],
    "choices": ["a guard|a robot"],
    "search": ["rank"],
    "show_context": [True],
    "retrieve_only": [True],
    "history": ["lighthouse.txt"],
    "limit": ["2"],
    "output": ["out.html"],
    "min_weight": ["0.1"],
    "persona_file": ["file.txt"],
    "user": ["Kim"],
    "temperature": ["0.3"],
    "port": ["8799"],
    "api_keys": ["keys.toml"],
    "strategies": ["dense,bm25"],
    "workers": ["2"],
    "documents": ["doc-1"],
}
"""Valid values the hypothesis test mixes with bad ones."""


def annotation(param: Any) -> Any:
    return param.type_descriptor.annotation


def bad_values(command: str, param: Any) -> list[Any]:
    """The bad values of one parameter of one command (empty: it takes any value, see ANY_VALUE)."""
    name = param.name
    if name == "memory":
        if command == "serve":
            return ROOT
        if command == "eval":
            return EVAL_ROOT
        return READ_MEMORY if command in ("ask", "info", "delete", "erase", "view", "chat") else WRITE_MEMORY
    if command == "copy":
        return READ_MEMORY if name == "source" else WRITE_MEMORY
    if name == "history" and command == "chat":
        name = "chat_history"
    kind = annotation(param)
    if kind in (int, float):
        values: list[Any] = ["x"]
        if param.min is not None:
            values.append(str(param.min - 1))
        if param.max is not None:
            values.append(str(param.max + 1))
        return values
    return BAD.get(name, [])


def argv(command: str, values: dict[str, Any]) -> list[str]:
    """The command line of ``command`` with its base values updated by ``values`` (None removes one)."""
    chosen = {**BASE[command], **values}
    out = [command]
    for param in COMMANDS[command].params:
        value = chosen.get(param.name)
        if value is None or value is False:
            continue
        if param.param_type_name == "argument":
            out += value if isinstance(value, list) else [str(value)]
            continue
        flag = max(param.opts, key=len)
        out += [flag] if value is True else [flag, str(value)]
    return out


def cases() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for command, cmd in COMMANDS.items():
        for param in cmd.params:
            for value in bad_values(command, param):
                out.append((command, {param.name: value}))
    return out + COMBINATIONS


def snapshot(root: Path) -> dict[str, str]:
    """Every file and directory below ``root`` with a digest of its content."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(root.rglob("*"))
    }


class ReachedWork(AssertionError):
    """A command with a bad value reached its real work."""


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sandbox's files, made once: a memory ``mem`` (dense, built with a hashing embedder that answers to the
    onnx embedder's id), files good and bad."""
    root = tmp_path_factory.mktemp("template")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("gemrag.memory.facade.build_embedder", lambda settings: HashEmbedder(model_id=ONNX_ID))
        with Memory.open(root / "mem", load_config(None, {"memory": {"chunk_tokens": 100}}), llm=ScriptedLLM()) as mem:
            mem.add_text("Amos lit the lamp of the lighthouse every night.", "lighthouse")
            mem.index("dense")
    (root / "empty-dir").mkdir()
    (root / "garbage").mkdir()
    (root / "garbage" / "memory.sqlite").write_bytes(b"not a database at all")
    (root / "file.txt").write_text("A perfectly fine document. It has two sentences.\n")
    (root / "other.txt").write_text("Another fine document.\n")
    (root / "binary.bin").write_bytes(b"\x00\x01\x02binary")
    (root / "good.toml").write_text("[memory]\nbudget = 3\n")
    (root / "bad.toml").write_text("[gem\nbudget = \n")
    (root / "keys.toml").write_text('"k-1" = ["*"]\n')
    (root / "data.jsonl").write_text(json.dumps(QUALITY) + "\n")
    (root / "sheet.jsonl").write_text("{}\n")
    return root


@pytest.fixture
def sandbox(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A working directory holding a copy of the template's files, a listening socket (a port in use), and guards
    on every command's work."""
    for var in [v for v in __import__("os").environ if v.startswith("GEMRAG_")]:
        monkeypatch.delenv(var)
    shutil.copytree(template, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("gemrag.memory.facade.build_embedder", lambda settings: HashEmbedder(model_id=ONNX_ID))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def guard(what: str) -> Any:
        def reached(*args: Any, **kwargs: Any) -> Any:
            raise ReachedWork(f"{what} was reached with a bad value")

        return reached

    for target in (
        "gemrag.memory.facade.put_sources",  # adding documents
        "gemrag.cli.index.plan_index",  # the cost plan (it may load the model and time it)
        "gemrag.memory.facade.run_index",
        "gemrag.memory.retrieval.retrieve_published",
        "gemrag.memory.asking.answer_question",
        "gemrag.memory.deletion.remove_chunks",  # deleting
        "gemrag.memory.facade.erase",  # erasing
        "gemrag.memory.Memory.stats",
        "gemrag.cli.demo.run_demo",
        "gemrag.eval.runner.build_embedder",
        "gemrag.eval.acceptance.runner.run_acceptance",
        "gemrag.cli.chat.ChatSession",
        "gemrag.cli.view.write_html",
        "gemrag.mcp_server.create_server",
        "uvicorn.run",
        "gemrag.cli.doctor._doctor_build",
    ):
        monkeypatch.setattr(target, guard(target))
    try:
        yield {"root": tmp_path, "port": str(listener.getsockname()[1])}
    finally:
        listener.close()


def check_contract(sandbox: dict[str, Any], command: str, values: dict[str, Any]) -> None:
    """Run one invocation holding at least one bad value; assert the contract (see the module docstring)."""
    values = {k: sandbox["port"] if v == "IN_USE" else v for k, v in values.items()}
    root: Path = sandbox["root"]
    before = snapshot(root)
    args = argv(command, values)
    result = CliRunner().invoke(cli.app, args, input="")
    shown = f"gemrag {' '.join(args)}\nstdout: {result.stdout!r}\nstderr: {result.stderr!r}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{shown}\nraised {result.exception!r}") from result.exception
    assert "Traceback" not in result.output, shown
    assert result.exit_code == 2, shown
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), shown
    flat = [w for v in values.values() for w in (v if isinstance(v, list) else [v])]
    named = [str(v) for v in flat if isinstance(v, str) and v.strip()]
    words = {w for v in named for w in [v, *v.replace("=", " ").replace(",", " ").replace("@", " ").split()]}
    words |= {w for v in list(words) for w in v.split(".") if len(w) > 2}
    params = {p.name: p for p in COMMANDS[command].params}
    unnamed = [max(params[k].opts, key=len) for k, v in values.items() if v is True or not str(v).strip()]
    words |= {w for flag in unnamed for w in (flag, flag.lstrip("-"))}  # an empty value or a flag: its option
    assert any(w in lines[0] for w in words), f"the error names none of {sorted(words)}: {shown}"
    assert snapshot(root) == before, f"{shown}\nchanged the files"


def test_every_option_has_a_contract() -> None:
    """Every parameter of every command has bad values in the table, or a reason why any value is fine."""
    assert sorted(COMMANDS) == sorted(BASE)
    missing = [
        f"{command} {param.name}"
        for command, cmd in COMMANDS.items()
        for param in cmd.params
        if not bad_values(command, param) and param.name not in ANY_VALUE
    ]
    assert missing == []


@pytest.mark.parametrize(("command", "values"), cases(), ids=lambda v: str(v) if isinstance(v, str) else repr(v))
def test_a_bad_value_is_one_error_line_and_changes_nothing(
    sandbox: dict[str, Any], command: str, values: dict[str, Any]
) -> None:
    check_contract(sandbox, command, values)


@st.composite
def invocations(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A command, one or two bad values, and valid values of some other options."""
    command = draw(st.sampled_from(sorted(c for c in COMMANDS if any(bad_values(c, p) for p in COMMANDS[c].params))))
    params = COMMANDS[command].params
    with_bad = [p for p in params if bad_values(command, p)]
    chosen: dict[str, Any] = {}
    for param in draw(st.lists(st.sampled_from(with_bad), min_size=1, max_size=2, unique_by=lambda p: p.name)):
        chosen[param.name] = draw(st.sampled_from(bad_values(command, param)))
    valid = [p for p in params if p.name in VALID and p.name not in chosen]
    for param in draw(st.lists(st.sampled_from(valid), max_size=4, unique_by=lambda p: p.name)) if valid else []:
        chosen[param.name] = draw(st.sampled_from(VALID[param.name]))
    return command, chosen


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(invocation=invocations())
def test_random_invocations_with_a_bad_value_keep_the_contract(
    sandbox: dict[str, Any], invocation: tuple[str, dict[str, Any]]
) -> None:
    check_contract(sandbox, *invocation)


def test_read_commands_create_no_file(sandbox: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """With valid values, the read commands answer and leave no new file behind (``info``, ``ask
    --retrieve-only``, ``info --history``); a warning is one ``warning:`` line."""
    monkeypatch.undo()  # the real commands, with the sandbox's files
    monkeypatch.chdir(sandbox["root"])
    monkeypatch.setattr("gemrag.memory.facade.build_embedder", lambda settings: HashEmbedder(model_id=ONNX_ID))
    root: Path = sandbox["root"]
    runner = CliRunner()
    for args in (
        ["info", "--memory", "mem"],
        ["info", "--memory", "mem", "--history", "lighthouse"],
        ["ask", "Who lit the lamp?", "--memory", "mem", "--strategy", "dense", "--retrieve-only"],
    ):
        before = set(snapshot(root))
        result = runner.invoke(cli.app, args)
        assert result.exit_code == 0, (args, result.output)
        assert set(snapshot(root)) == before, args
    with Memory.open(root / "mem", load_config(), llm=ScriptedLLM()) as mem:
        mem.add_text("Marta grew tomatoes.", "garden")  # dense is stale now
    result = runner.invoke(cli.app, ["ask", "Who grew tomatoes?", "--memory", "mem", "-s", "dense", "--retrieve-only"])
    assert result.exit_code == 0, result.output
    warning = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(warning) == 1 and warning[0].startswith("warning: strategy 'dense' is stale"), result.stderr


@pytest.mark.parametrize("subcommand", ["start", "stop"])
def test_pg_commands_keep_the_contract(sandbox: dict[str, Any], subcommand: str) -> None:
    """``gemrag pg start|stop --dir FILE``: one error line naming it, nothing changed, no server started."""
    root: Path = sandbox["root"]
    before = snapshot(root)
    result = CliRunner().invoke(cli.app, ["pg", subcommand, "--dir", "file.txt"])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: --dir file.txt"), result.output
    assert snapshot(root) == before
