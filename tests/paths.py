"""Where things are, for tests in any folder of the test tree: the repository, the test tree, and the shared
evaluation data beside the repository (``GEMRAG_EVAL_DATA`` overrides it)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
STORY = REPO / "examples" / "quality" / "lost_in_translation.txt"
SHARED_DATA = REPO.parent / "shared" / "data"


def load_script(path: Path, name: str) -> ModuleType:
    """Import the script at ``path`` (a file under ``benchmarks/``, not a package) as module ``name``, registered in
    ``sys.modules`` so that its dataclasses can look their module up.

    Raises:
        FileNotFoundError: no such script.
    """
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
