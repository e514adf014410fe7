"""The ``gemrag`` command line: a thin layer over :class:`gemrag.memory.Memory`.

Commands: ``index``, ``ask``, ``info``, ``demo``, ``doctor``, ``eval``, ``delete``, ``chat``, ``mcp``, ``view``,
``serve``. ``--set section.key=value`` (any setting, including a strategy's own section such as
``raptor.summary_tokens=200``) overrides the model and endpoint flags, which override ``GEMRAG_*`` environment
variables, which override the config file (see :mod:`gemrag.config`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from gemrag.cli_chat import chat_command
from gemrag.cli_copy import copy_command
from gemrag.cli_delete import delete_command
from gemrag.cli_mcp import mcp_command
from gemrag.cli_pg import pg_app
from gemrag.cli_serve import serve_command
from gemrag.cli_view import view_command
from gemrag.config import Config, load_config, memory_location
from gemrag.console import cli_errors, err, fail
from gemrag.errors import GemragError
from gemrag.eval.cli import eval_command
from gemrag.ingest import expand_paths
from gemrag.memory import Memory
from gemrag.progress import rich_progress
from gemrag.store import location_exists
from gemrag.strategies import check_config

app = typer.Typer(
    help="gemrag: long-term graph memory for LLMs (GEM-RAG). Index documents, then ask questions.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
out = Console()

MemoryDir = Annotated[
    str | None,
    typer.Option(
        "--memory",
        "-m",
        help="Memory: a directory (created if missing) or postgresql://user@host:port/db?schema=NAME "
        "(default: GEMRAG_MEMORY, or memory in gemrag.toml).",
    ),
]
ConfigFile = Annotated[Path | None, typer.Option("--config", help="TOML config file (default ./gemrag.toml).")]
LLMProvider = Annotated[str | None, typer.Option("--llm-provider", help="llama_cpp (embedded) or openai.")]
LLMModel = Annotated[
    str | None,
    typer.Option("--llm-model", help="qwen2.5-coder-1.5b, qwen2.5-coder-0.5b, a .gguf path, or a served name."),
]
LLMUrl = Annotated[str | None, typer.Option("--llm-base-url", help="OpenAI-compatible endpoint for the LLM.")]
EmbProvider = Annotated[str | None, typer.Option("--embedder-provider", help="onnx (embedded MiniLM) or openai.")]
EmbModel = Annotated[str | None, typer.Option("--embedder-model", help="Embedding model name (openai provider).")]
EmbUrl = Annotated[str | None, typer.Option("--embedder-base-url", help="OpenAI-compatible endpoint for embeddings.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")]
StrategyOpt = Annotated[
    str | None, typer.Option("--strategy", "-s", help="gem (default), dense, bm25, raptor or full.")
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="section.key=value, e.g. raptor.summary_tokens=200 or gem.search=rank (repeatable; TOML values, "
        "quote strings that look like numbers). Overrides the config file, GEMRAG_* variables and the other "
        "flags; a strategy's section is validated by that strategy. A bad key or value is a one-line error.",
    ),
]


def _config(
    config_file: Path | None,
    gem: dict[str, Any] | None = None,
    strategy: str | None = None,
    sets: list[str] | None = None,
    **model_flags: str | None,
) -> Config:
    overrides: dict[str, Any] = {
        "strategy": strategy,
        "llm": {
            "provider": model_flags.get("llm_provider"),
            "model": model_flags.get("llm_model"),
            "base_url": model_flags.get("llm_base_url"),
        },
        "embedder": {
            "provider": model_flags.get("embedder_provider"),
            "model": model_flags.get("embedder_model"),
            "base_url": model_flags.get("embedder_base_url"),
        },
        "gem": gem or {},
    }
    return load_config(config_file, overrides, sets)


def _open(memory: str | None, config: Config, quiet: bool) -> Memory:
    return Memory.open(memory_location(memory, config), config, progress=None if quiet else rich_progress(err))


@app.command()
def index(
    memory: MemoryDir = None,
    paths: Annotated[
        list[str] | None,
        typer.Argument(help=".txt/.md files or directories; '-' reads standard input; none: rebuild only."),
    ] = None,
    chunk_tokens: Annotated[int | None, typer.Option(help="T: tokens per chunk (default 100).")] = None,
    questions: Annotated[int | None, typer.Option(help="m: utility questions per chunk (default 5).")] = None,
    eigen: Annotated[int | None, typer.Option(help="k: eigenvectors summarized (default 2).")] = None,
    eigen_top: Annotated[int | None, typer.Option(help="e: top components per eigenvector (default 5).")] = None,
    strategy: StrategyOpt = None,
    set_: SetOpt = None,
    config: ConfigFile = None,
    llm_provider: LLMProvider = None,
    llm_model: LLMModel = None,
    llm_base_url: LLMUrl = None,
    embedder_provider: EmbProvider = None,
    embedder_model: EmbModel = None,
    embedder_base_url: EmbUrl = None,
    quiet: Quiet = False,
    wait: Annotated[
        float, typer.Option("--wait", help="Seconds to wait while another process builds this memory (default: fail).")
    ] = 0.0,
) -> None:
    """Read documents, chunk them, write utility questions, embed, build the graph and the eigentheme
    summary nodes (GEM-RAG section III.B.1). Resumable: interrupt with Ctrl-C (or kill it) and run it again.
    One process builds a memory at a time: another one gets a one-line error (exit code 2) unless --wait."""
    gem = {"chunk_tokens": chunk_tokens, "questions": questions, "eigen": eigen, "eigen_top": eigen_top}
    with cli_errors():
        cfg = _config(
            config,
            gem,
            strategy,
            set_,
            llm_provider=llm_provider,
            llm_model=llm_model,
            llm_base_url=llm_base_url,
            embedder_provider=embedder_provider,
            embedder_model=embedder_model,
            embedder_base_url=embedder_base_url,
        )
        with _open(memory, cfg, quiet) as mem:
            mem.build_wait = wait  # MemoryBusyError (another builder) is a GemragError: one line, exit code 2
            added = mem.add(expand_paths(paths)) if paths else []
            new = sum(1 for _, created in added if created)
            err.print(f"{len(added)} document(s) read, {new} new")
            report = mem.index()
    u = report.usage
    out.print(
        f"indexed {report.documents} document(s): {report.chunks} chunks ({report.new_chunks} new), "
        f"{report.summary_nodes} summary nodes in {report.seconds:.1f} s; LLM calls {report.llm_calls}, "
        f"tokens {u.prompt_tokens} prompt + "
        f"{u.completion_tokens} completion, {u.embedding_tokens} embedding tokens, {u.cached} cache hits"
        + (f"; [yellow]{report.failures} recorded failure(s)[/] (see gemrag info)" if report.failures else "")
    )


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    memory: MemoryDir = None,
    budget: Annotated[
        int | None,
        typer.Option(help="B: context nodes to retrieve (default: gem.budget, 4; for remem: remem.qa_top_k, 5)."),
    ] = None,
    choices: Annotated[str | None, typer.Option(help="Multiple-choice options separated by '|'.")] = None,
    show_context: Annotated[bool, typer.Option("--show-context", help="Print the full context texts.")] = False,
    retrieve_only: Annotated[bool, typer.Option("--retrieve-only", help="Only retrieve; no LLM call.")] = False,
    search: Annotated[
        str | None, typer.Option(help="gem search: best_first (default), rank (Algorithm 1), fused.")
    ] = None,
    strategy: StrategyOpt = None,
    build_missing: Annotated[
        bool, typer.Option("--build-missing", help="Build the strategy first if it was never built in this memory.")
    ] = False,
    set_: SetOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    config: ConfigFile = None,
    llm_provider: LLMProvider = None,
    llm_model: LLMModel = None,
    llm_base_url: LLMUrl = None,
    embedder_provider: EmbProvider = None,
    embedder_model: EmbModel = None,
    embedder_base_url: EmbUrl = None,
) -> None:
    """Retrieve a context for QUESTION (GEM-RAG section III.B.2, Algorithm 1) and answer it."""
    with cli_errors("ask again", also=(ValueError,)):
        cfg = _config(
            config,
            {"budget": budget, "search": search},
            strategy,
            set_,
            llm_provider=llm_provider,
            llm_model=llm_model,
            llm_base_url=llm_base_url,
            embedder_provider=embedder_provider,
            embedder_model=embedder_model,
            embedder_base_url=embedder_base_url,
        )
        opts = [c.strip() for c in choices.split("|")] if choices else None
        with _open(memory, cfg, True) as mem:
            if retrieve_only:
                hits, answer = mem.retrieve(question, budget, build=build_missing), None
            else:
                answer = mem.ask(question, opts, budget, build=build_missing)
                hits = answer.hits
    if as_json:
        payload = {
            "answer": answer.text if answer else None,
            "choice": answer.choice if answer else None,
            "retrieval_seconds": answer.retrieval_seconds if answer else None,
            "context": [{"id": h.node_id, "kind": h.kind, "score": h.score, "text": h.text} for h in hits],
        }
        out.print_json(json.dumps(payload))
        return
    if answer is not None:
        letter = f"({'ABCDEFGHIJ'[answer.choice]}) " if answer.choice is not None else ""
        out.print(f"[bold]answer:[/] {letter}{answer.text}")
    table = Table("rank", "id", "kind", "score", "text", title="context")
    for h in hits:
        text = h.text if show_context else (h.text[:100] + ("…" if len(h.text) > 100 else ""))
        table.add_row(str(h.rank + 1), str(h.node_id), h.kind, f"{h.score:.3f}", text)
    out.print(table)


@app.command()
def info(
    memory: MemoryDir = None,
    config: ConfigFile = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    set_: SetOpt = None,
) -> None:
    """Documents, chunks, summary nodes, models, tokens and seconds per phase, failures, and the spectrum
    report (top eigenvalues, Remark 2's estimated number of themes, Remark 3's Λ = Σλ²)."""
    with cli_errors():
        cfg = load_config(config, None, set_)
        location = memory_location(memory, cfg)
        if not location_exists(location):
            fail(GemragError(f"{location} is not a gemrag memory (no memory.sqlite)"))
        with Memory.open(location, cfg) as mem:
            stats = mem.stats()
    if as_json:
        out.print_json(json.dumps(stats, default=str))
        return
    _print_stats(stats)


def _print_stats(stats: dict[str, Any]) -> None:
    out.print(f"[bold]memory[/] {stats['directory']}  strategy {stats['strategy']}")
    out.print(
        f"documents {len(stats['documents'])}, chunks {stats['chunks']} "
        f"(T = {stats['chunk_tokens']} tokens), summary nodes {stats['summary_nodes']}"
    )
    for d in stats["documents"]:
        out.print(f"  [{d['id']}] {d['title']} ({d['n_chars']} chars) from {d['source']}")
    states = stats.get("strategies") or {}
    if states:
        out.print("strategies: " + "; ".join(f"{name} {state}" for name, state in states.items()))
    out.print(f"models: {stats['models']}")
    out.print(f"parameters: {stats['params']}")
    out.print(f"index time (all runs): {stats['index_seconds']:.1f} s")
    rep = stats["strategy_report"] or {}
    if rep.get("phase_seconds"):
        out.print("index phases (all runs, s): " + ", ".join(f"{k} {v:.1f}" for k, v in rep["phase_seconds"].items()))
    table = Table(
        "phase",
        "prompt tokens",
        "completion tokens",
        "embedding tokens",
        "model seconds",
        "calls",
        "cache hits",
        title="usage (spent)",
    )
    for phase, u in stats["usage_by_phase"].items():
        table.add_row(
            phase,
            *(
                f"{u[k]:.1f}" if k == "seconds" else str(int(u[k] or 0))
                for k in (
                    "prompt_tokens",
                    "completion_tokens",
                    "embedding_tokens",
                    "seconds",
                    "calls",
                    "cached",
                )
            ),
        )
    out.print(table)
    spec = rep.get("spectrum")
    if spec:
        eig = ", ".join(f"{x:.4f}" for x in spec.get("top_eigenvalues", [])[:10])
        out.print(f"[bold]spectrum[/] of L (n = {spec.get('n')} chunks): eigenvalues by |λ|: {eig}")
        out.print(
            f"  Remark 2 estimated number of themes: {spec.get('estimated_themes')}; "
            f"Remark 3 Λ = Σλ² = {spec.get('spectral_energy', float('nan')):.4f}; trace {spec.get('trace', 0):.4f}"
        )
    sel = rep.get("eigen_selection")
    if sel:
        chosen = ", ".join(f"{x:.4f}" for x in sel.get("selected_eigenvalues", []))
        neg = ", ".join(f"{x:.4f}" for x in sel.get("negative_selected", [])) or "none"
        out.print(
            f"  summary eigenvectors ({rep.get('graph')} graph, skip_trivial={sel.get('skip_trivial')}): λ = {chosen};"
            f" negative among them: {neg}"
        )
    out.print(f"utility questions: {rep.get('utility_questions')}")
    fails = stats["failures"]
    out.print(f"recorded failures: {len(fails)}")
    for f in fails[-10:]:
        out.print(f"  [{f['phase']}] node {f['node_id']}: {f['message'][:160]}")


@app.command()
def demo(
    memory: Annotated[
        str | None,
        typer.Option("--memory", "-m", help="Where to keep the demo memory: a directory or a postgresql:// URL."),
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Answer only the first N questions.")] = None,
    config: ConfigFile = None,
    llm_model: LLMModel = None,
    set_: SetOpt = None,
    quiet: Quiet = False,
) -> None:
    """The main job on the shipped QuALITY story: index it (cached after the first run), answer all of its
    multiple-choice questions with the embedded models, print each answer and the accuracy."""
    from gemrag.demo import run_demo

    with cli_errors("run `gemrag demo` again to resume"):
        cfg = _config(config, None, None, set_, llm_model=llm_model)
        code = run_demo(cfg, memory, limit, out, None if quiet else rich_progress(err))
    raise typer.Exit(code)


app.command("eval")(eval_command)
app.command("delete")(delete_command)
app.command("copy")(copy_command)
app.command("chat")(chat_command)
app.command("mcp")(mcp_command)
app.command("view")(view_command)
app.command("serve")(serve_command)
app.add_typer(pg_app, name="pg")


# -- doctor: is this installation able to run? --------------------------------------------------------------------


def _doctor_line(label: str, text: str) -> None:
    from rich.text import Text

    out.print(Text.assemble((f"{label:<13}", "bold"), text), soft_wrap=True)


def _doctor_error(message: str) -> None:
    from rich.text import Text

    err.print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)


def _doctor_build(needed: bool) -> bool:
    """Print llama-cpp-python's version and compiled CPU features, and the CPU's; False when it is needed but
    missing or broken."""
    from gemrag.models import probe

    flags = probe.cpu_flags()
    wanted = list(dict.fromkeys(probe.CPUINFO_FLAG.values()))
    relevant = [f for f in wanted if f in flags] + sorted(
        f for f in flags if f.startswith(("avx512", "amx")) and f not in wanted
    )
    shown = " ".join(relevant or sorted(flags)) or "unknown (no /proc/cpuinfo)"  # ARM: all of its few flags
    _doctor_line("CPU", f"{probe.cpu_model()}; flags: {shown}")
    version = probe.llama_cpp_version()
    if version is None:
        _doctor_line("llama.cpp", "llama-cpp-python is not installed")
        if needed:
            _doctor_error("the local LLM needs llama-cpp-python: pip install -r requirements.txt '.[local]'")
        return not needed
    try:
        info = probe.build_system_info()
    except GemragError as exc:
        _doctor_line("llama.cpp", f"llama-cpp-python {version}")
        _doctor_error(str(exc))
        return not needed
    isa = [f for f in probe.ordered_features(info) if f not in probe.NOT_ISA]
    note = ""
    if any(f.startswith(probe.NON_PORTABLE_PREFIXES) for f in isa):
        missing = probe.missing_on_cpu(tuple(isa), flags)
        note = f" (not portable{'; this CPU lacks ' + ' '.join(missing) if missing else ''})"
    built = " ".join(isa) or "no listed CPU features"
    _doctor_line("llama.cpp", f"llama-cpp-python {version}, built with {built}{note}")
    return True


def _doctor_embedder(cfg: Config) -> bool:
    """Embed one sentence with the configured embedder and check the vector's shape, dtype and norm."""
    import importlib.metadata
    import time

    import numpy as np

    from gemrag.models import factory

    try:
        ort = importlib.metadata.version("onnxruntime")
    except importlib.metadata.PackageNotFoundError:
        ort = "not installed"
    _doctor_line("onnxruntime", ort)
    try:
        embedder = factory.build_embedder(cfg.embedder)
        t0 = time.perf_counter()
        vectors = embedder.embed(["gemrag doctor embeds this sentence."])
        seconds = time.perf_counter() - t0
        norm = float(np.linalg.norm(vectors[0])) if len(vectors) else 0.0
        if vectors.shape != (1, embedder.dim) or vectors.dtype != np.float32 or abs(norm - 1.0) > 1e-3:
            raise GemragError(f"{embedder.model_id} returned shape {vectors.shape} {vectors.dtype}, norm {norm:.3f}")
    except Exception as exc:  # a diagnostic: report anything, keep checking the rest
        _doctor_line("embedder", f"{cfg.embedder.provider}: failed")
        _doctor_error(str(exc) or type(exc).__name__)
        return False
    shape = f"1 sentence -> {vectors.shape} float32, |v| = {norm:.3f}"
    _doctor_line("embedder", f"{embedder.model_id}: {shape}, {seconds:.2f} s")
    return True


def _doctor_llm(cfg: Config, verify: bool, timeout: float | None) -> bool:
    """Describe the configured LLM and run it: a fresh child-process check (llama.cpp) or one tiny request."""
    import time

    from gemrag.models import factory, probe
    from gemrag.models.llama_cpp import gguf_fingerprint
    from gemrag.models.weights import KNOWN_MODELS, find_known_model, resolve_gguf

    try:
        if cfg.llm.provider == "openai":
            llm = factory.build_llm(cfg.llm, cfg.cache_dir)
            _doctor_line("LLM", f"openai {llm.model_id} (json_mode {cfg.llm.json_mode})")
            t0 = time.perf_counter()
            answer = llm.complete([{"role": "user", "content": "Reply with the single word OK."}], max_tokens=5)
            _doctor_line("model check", f"ok in {time.perf_counter() - t0:.1f} s: {answer.text.strip()[:40]!r}")
            return True
        models_dir = (cfg.cache_dir / "models") if cfg.cache_dir else None
        path = resolve_gguf(cfg.llm.model, models_dir, verify=verify)
        spec = KNOWN_MODELS.get(cfg.llm.model) or find_known_model(path)
        how = "verified" if verify else "published"
        ident = f"sha256 {spec.sha256} ({how})" if spec else gguf_fingerprint(path)
        size = path.stat().st_size
        name = f"{cfg.llm.model}: " if cfg.llm.model in KNOWN_MODELS else ""
        _doctor_line("LLM", f"llama_cpp {name}{path} ({size / 1e6:.1f} MB, {ident}), n_ctx {cfg.llm.n_ctx}")
        llm = factory.build_llm(cfg.llm, cfg.cache_dir)
        request = llm.probe_request()  # type: ignore[attr-defined]
        result = probe.run_probe(request, timeout=probe.default_timeout() if timeout is None else timeout)
    except Exception as exc:  # a diagnostic: report anything (missing weights, bad config, HTTP errors)
        _doctor_error(str(exc) or type(exc).__name__)
        return False
    if not result.ok:
        _doctor_error(result.message)
        return False
    answers = f"chat {result.chat.strip()[:20]!r}, json {result.json.strip()[:40]}"
    _doctor_line("model check", f"ok in {result.seconds:.1f} s (fresh child process): {answers}")
    return True


@app.command()
def doctor(
    config: ConfigFile = None,
    llm_provider: LLMProvider = None,
    llm_model: LLMModel = None,
    llm_base_url: LLMUrl = None,
    embedder_provider: EmbProvider = None,
    embedder_model: EmbModel = None,
    embedder_base_url: EmbUrl = None,
    sets: SetOpt = None,
    verify: Annotated[bool, typer.Option("--verify", help="Re-hash a known model's GGUF (about 2 s per GB).")] = False,
    timeout: Annotated[
        float | None, typer.Option("--timeout", help="Seconds the model check may take (default 300).")
    ] = None,
) -> None:
    """Check this installation: versions, the CPU features llama.cpp was built with and the CPU's, a real
    embedding, the configured LLM's weights, and a fresh run of the LLM in a child process (so a crash is
    reported with its fix, not suffered). Exit code 0 when everything works, 2 otherwise.
    GEMRAG_SKIP_MODEL_PROBE=1 skips the check other commands run before their first model load. The
    configuration (file, GEMRAG_* variables, flags, ``--set``) is checked first, every strategy section included:
    an invalid one is a one-line error, exit code 2."""
    import platform
    import sys

    import gemrag

    with cli_errors():
        cfg = _config(
            config,
            None,
            llm_provider=llm_provider,
            llm_model=llm_model,
            llm_base_url=llm_base_url,
            embedder_provider=embedder_provider,
            embedder_model=embedder_model,
            embedder_base_url=embedder_base_url,
            sets=sets,
        )
        check_config(cfg)
    _doctor_line("python", f"{platform.python_version()} ({sys.executable}) on {platform.platform()}")
    _doctor_line("gemrag", gemrag.__version__)
    ok = _doctor_build(needed=cfg.llm.provider == "llama_cpp")
    ok = _doctor_embedder(cfg) and ok
    ok = _doctor_llm(cfg, verify, timeout) and ok
    raise typer.Exit(0 if ok else 2)
