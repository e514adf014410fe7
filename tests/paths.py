"""Where things are, for tests in any folder of the test tree: the repository, the test tree, and the shared
evaluation data beside the repository (``GEMRAG_EVAL_DATA`` overrides it)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
STORY = REPO / "examples" / "quality" / "lost_in_translation.txt"
SHARED_DATA = REPO.parent / "shared" / "data"
