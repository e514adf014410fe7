"""Which input each run of an evaluation read: a chunk's text alone, or its document's title and its text.

Strategies read chunk titles per method (:mod:`gemrag.strategies.platform.titles`: dense, bm25 and remem do, gem,
unweaver, hlgraph and raptor do not, a section's ``read_titles`` overrides). An evaluation makes the choice explicit
and keeps its records of one input apart from the other's:

* :func:`pin_titles` sets ``read_titles`` in every run's configuration for every strategy that reads chunk text and
  leaves it unset, so an evaluation memory that holds a build of the other input (an older memory, or a
  ``--memory postgresql://`` schema shared with another output directory) is rebuilt, not extended;
* :func:`check_titles` keeps ``out_dir/titles.json``, ``{run name: {strategy: read titles}}``, and refuses to continue
  a run, or to merge (``--merge``) one, whose records were made from the other input. An output directory written
  before runs recorded this read titles in every strategy exactly when ``memory.chunk_titles`` was on, so its runs
  that now read otherwise are refused, naming the ``--set`` that continues them as they were;
* :func:`title_free_fingerprint` leaves ``read_titles`` out of the ``run.json`` fingerprint (``gem`` and the strategy
  sections), since the file above compares it run by run: adding a run of another input to an output directory
  stays possible.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gemrag.config import Config
from gemrag.errors import ConfigError
from gemrag.eval.plan import RunSpec
from gemrag.eval.run_files import read_jsonl
from gemrag.memory_settings import EARLIER_METHOD
from gemrag.strategies import available, strategy_config
from gemrag.strategies.base import title_default
from gemrag.strategies.platform.titles import READ_TITLES

FILE = "titles.json"
"""The file of an output directory recording, per run, what each of its strategies read."""


def _titles_on(config: Config) -> bool:
    """Whether the evaluation's memories have titles (``memory.chunk_titles``; unset: on, as a new memory)."""
    return config.memory.chunk_titles is not False


def _setting(name: str, config: Config) -> bool | None:
    """Strategy ``name``'s ``read_titles`` in ``config`` (None: unset, or a section without the setting)."""
    return getattr(strategy_config(name, config), READ_TITLES, None)


def run_titles(run: RunSpec) -> dict[str, bool]:
    """What each strategy a run builds reads: ``{strategy: True (title and text) / False (text alone)}``, over the
    run's strategy, or its parts for a strategy over strategies (a section with ``parts``, such as ``fused``), that
    read chunk text.

    Raises:
        ConfigError: a strategy section is invalid.
    """
    parts = getattr(strategy_config(run.strategy, run.config), "parts", None)
    out = {}
    for name in parts or [run.strategy]:
        default = title_default(name)
        if default is not None:
            setting = _setting(name, run.config)
            out[name] = _titles_on(run.config) and (default if setting is None else setting)
    return out


def pin_titles(runs: Sequence[RunSpec]) -> list[RunSpec]:
    """The runs with ``read_titles`` set to its paper default for every registered strategy whose section has the
    setting unset (all of them, so runs that shared one configuration still share one), when the memories have
    titles (module docstring).

    Raises:
        ConfigError: a strategy section is invalid.
    """
    pinned = []
    for run in runs:
        if not _titles_on(run.config):
            pinned.append(run)
            continue
        data = run.config.model_dump()
        for name in available():
            default = title_default(name)
            section = strategy_config(name, run.config)
            if default is None or section is None or READ_TITLES not in type(section).model_fields:
                continue
            if getattr(section, READ_TITLES) is None:
                table = data[name] if name in Config.model_fields else {**run.config.section(name)}
                data[name] = {**table, READ_TITLES: default}
        pinned.append(dataclasses.replace(run, config=Config.model_validate(data)))
    return pinned


def title_free_fingerprint(config: Config) -> dict[str, Any]:
    """The fingerprint's entry named :data:`~gemrag.memory_settings.EARLIER_METHOD` (``gem``: the memory's
    ``chunk_tokens`` with that method's settings, as earlier releases wrote it before ``[memory]`` existed, so their
    directories can be continued; without ``budget``; ``chunk_titles`` true unless switched off, absent when off as
    before the setting existed) and ``sections`` (every other strategy section; absent when empty), both without
    ``read_titles``."""
    first = {"chunk_tokens": config.memory.chunk_tokens}  # the memory's, where earlier releases kept it
    section = strategy_config(EARLIER_METHOD, config)  # through the registry, as every section
    first |= {k: v for k, v in (section.model_dump(mode="json") if section else {}).items() if k != READ_TITLES}
    if _titles_on(config):  # new memories index titles; absent = without, as before the setting
        first["chunk_titles"] = True
    sections = {
        n: {k: v for k, v in s.items() if k != READ_TITLES} for n, s in config.sections.items() if n != EARLIER_METHOD
    }
    sections = {name: s for name, s in sections.items() if s}
    return {EARLIER_METHOD: first, **({"sections": sections} if sections else {})}


def _describe(titles: dict[str, bool]) -> str:
    return ", ".join(f"{name} {'title + text' if on else 'text'}" for name, on in titles.items()) or "no chunk text"


def check_titles(out_dir: Path, runs: Sequence[RunSpec], merge: Sequence[Path] = ()) -> None:
    """Refuse a run whose records in ``out_dir`` or in a ``merge`` directory were made from the other input, then
    write ``out_dir/titles.json`` (module docstring).

    Raises:
        ConfigError: a run read otherwise before (the message names the run, both inputs and the fix), or a
            ``titles.json`` is unreadable.
    """
    wanted = {run.name: run_titles(run) for run in runs}
    legacy = {run.name: {name: _titles_on(run.config) for name in wanted[run.name]} for run in runs}
    combined: dict[str, dict[str, bool]] = {}
    for directory in (out_dir, *map(Path, merge)):
        path = directory / FILE
        try:
            recorded = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{path}: unreadable ({exc})") from exc
        ran = {r["strategy"] for name in ("records.jsonl", "index.jsonl") for r in read_jsonl(directory / name)}
        for name in sorted(ran):
            before = legacy.get(name) if recorded is None else recorded.get(name)
            if before is None:
                continue
            now = wanted.get(name)
            if now is not None and before != now:
                fix = " ".join(
                    f"--set {s}.{READ_TITLES}={str(v).lower()}" for s, v in before.items() if now.get(s) != v
                )
                raise ConfigError(
                    f"{directory}: the run {name!r} read chunks as {_describe(before)}, but would now read "
                    f"{_describe(now)}; continue it as it was with {fix or 'its former settings'}, or use another "
                    "--out directory"
                )
            combined[name] = before
    combined |= wanted
    (out_dir / FILE).write_text(json.dumps(combined, indent=2, sort_keys=True), encoding="utf-8")
