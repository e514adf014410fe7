"""Where a published record comes from (``results/NAME.json``: :mod:`gemrag.eval.publish`, and the benchmarks'
records): its name, checked before a run starts (:func:`check_publish_name`), the command line as the record shows
it (:func:`published_command`), the machine it ran on (:func:`machine_info`) and the code that ran it
(:func:`code_version`).
"""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from gemrag.errors import InputError
from gemrag.eval.published import Machine
from gemrag.version import package_version

__all__ = ["check_publish_name", "code_version", "machine_info", "published_command"]


def check_publish_name(name: str) -> None:
    """Refuse a record name that is not a plain file name (letters, digits, ``-``, ``_``, ``.``; not starting with
    ``.``), before a run starts.

    Raises:
        InputError: a bad name.
    """
    if not name or name.startswith(".") or not all(c.isascii() and (c.isalnum() or c in "-_.") for c in name):
        raise InputError(f"--publish {name!r}: use letters, digits, '-', '_' and '.' only")


def published_command(argv: Sequence[str], dataset: Path) -> str:
    """The command line as a published record shows it: ``gemrag`` and the arguments, the directory holding the
    dataset's folder written ``$DATA`` (the evaluation data lives outside the repository)."""
    base = str(dataset.resolve().parent.parent)
    words = ["gemrag", *argv[1:]]
    text = shlex.join(words)
    for form in {base, str(dataset.parent.parent)} - {"", "."}:
        text = text.replace(form + "/", "$DATA/")
    return text


def machine_info(load: Iterable[float] = ()) -> Machine:
    """This machine: CPUs, physical memory, platform, Python, and the given load averages (rounded to 0.01)."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    except (ValueError, OSError, AttributeError):
        memory = 0.0
    return Machine(
        cpus=os.cpu_count() or 0,
        memory_gb=round(memory, 1),
        platform=f"{platform.system()} {platform.machine()}",
        python=platform.python_version(),
        load=[round(x, 2) for x in load],
    )


def code_version() -> dict[str, str]:
    """The git commit of the gemrag source tree (``-dirty`` with uncommitted changes) and the package version."""
    root = Path(__file__).resolve().parents[3]
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", "src"],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "unknown", ""
    return {"commit": commit + ("-dirty" if dirty else ""), "version": package_version()}
