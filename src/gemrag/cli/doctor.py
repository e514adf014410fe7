"""``gemrag doctor``: is this installation able to run? (registered in :mod:`gemrag.cli.main`).

Versions, the CPU features llama.cpp was built with and the CPU's, a real embedding, the configured LLM's weights and
a fresh run of the LLM in a child process. This module does not import :mod:`gemrag.cli.main` (that module imports this
one); its option types come from :mod:`gemrag.cli.options`.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from gemrag.cli.options import NO_MODEL_FLAGS, ConfigFile, ModelOptions, SetOpt, build_config, model_options
from gemrag.config import Config
from gemrag.console import cli_errors, err
from gemrag.errors import GemragError
from gemrag.models.factory import check_model_settings
from gemrag.strategies import check_config

out = Console()

__all__ = ["doctor_command"]


def _doctor_line(label: str, text: str) -> None:
    from rich.text import Text

    out.print(Text.assemble((f"{label:<13}", "bold"), text), soft_wrap=True)


def _doctor_error(message: str) -> None:
    from rich.text import Text

    err.print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)


def _doctor_build(needed: bool) -> bool:
    """Print llama-cpp-python's version and compiled CPU features, and the CPU's; False when it is needed but
    missing or broken."""
    from gemrag.models.llama import probe

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

    from gemrag.models import factory
    from gemrag.models.llama import probe
    from gemrag.models.llama.weights import KNOWN_MODELS, find_known_model, gguf_fingerprint, resolve_gguf

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


@model_options()
def doctor_command(
    config: ConfigFile = None,
    models: ModelOptions = NO_MODEL_FLAGS,
    sets: SetOpt = None,
    verify: Annotated[bool, typer.Option("--verify", help="Re-hash a known model's GGUF (about 2 s per GB).")] = False,
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=1.0, help="Seconds the model check may take (default 300).")
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
        cfg = build_config(config, sets=sets, models=models)
        check_config(cfg)
        check_model_settings(cfg.llm, cfg.embedder)
    _doctor_line("python", f"{platform.python_version()} ({sys.executable}) on {platform.platform()}")
    _doctor_line("gemrag", gemrag.__version__)
    ok = _doctor_build(needed=cfg.llm.provider == "llama_cpp")
    ok = _doctor_embedder(cfg) and ok
    ok = _doctor_llm(cfg, verify, timeout) and ok
    raise typer.Exit(0 if ok else 2)
