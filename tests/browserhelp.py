"""Debian's chromium (``apt-get install chromium``) driven by playwright through ``executable_path``: nothing
downloads a browser. The ``browser`` fixture of ``conftest.py`` launches it once per test module for the browser tests
(the memory view, the web page).

Under ``CI=true`` a missing chromium or playwright fails the test (:func:`realparts.require_real`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from realparts import require_real

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextmanager
def launch_chromium() -> Iterator[Any]:
    """Debian's chromium under playwright, closed afterwards (fails under CI=true when either is missing, skips
    elsewhere)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require_real("playwright is not installed: pip install -e '.[test]'")
    if not CHROMIUM.exists():
        require_real("Debian's chromium is missing: apt-get install -y chromium")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()
