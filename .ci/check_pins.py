"""CI: the newest pip resolves README command 2's install, and to the pinned versions only.

Reads the JSON report of ``pip install --dry-run --report FILE -r requirements.txt -e ".[test]"`` made with the newest
pip (a venv whose pip was upgraded) and fails when a package it would install is not pinned in constraints.txt or is
pinned at another version. A resolution conflict already failed the dry run itself.

Usage: python .ci/check_pins.py REPORT.json constraints.txt
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def canonical(name: str) -> str:
    """PEP 503 normalized project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def main(report_path: str, constraints_path: str) -> int:
    """0 when every package of the report is pinned at its resolved version, else 1 (each mismatch printed)."""
    pins: dict[str, str] = {}
    for line in Path(constraints_path).read_text(encoding="utf-8").splitlines():
        spec = line.split("#", 1)[0].split(";", 1)[0].strip()
        if "==" in spec:
            name, version = spec.split("==", 1)
            pins[canonical(name)] = version.strip()
    report = json.loads(Path(report_path).read_text(encoding="utf-8"))
    bad = []
    for item in report["install"]:
        name, version = canonical(item["metadata"]["name"]), item["metadata"]["version"]
        if name == "gemrag":
            continue
        if pins.get(name) != version:
            bad.append(f"{name}=={version} (constraints.txt: {pins.get(name, 'not pinned')})")
    for b in bad:
        print(f"newest pip resolves an untested version: {b}")
    print(f"newest pip: {len(report['install'])} packages resolved, {len(bad)} not as pinned")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
