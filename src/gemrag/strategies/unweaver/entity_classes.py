"""UnWeaver's equivalence classes of entities and the chunk–entity matrix (UnWeaver paper, section 2
"Formalized Characterization" and Appendix A eqs. 1-6).

From each chunk ``i`` an LLM extracts ``(name, description)`` pairs. Two entities are identified when their
names are *syntactically equivalent* (section 2); we make that relation concrete as equality of
:func:`normalize_name` (Unicode NFKC, case folding, punctuation removed, whitespace collapsed, one leading English
article dropped). Optionally, classes whose representatives embed close together are merged too (the paper's
footnote 8 "semantic equivalence"): :func:`merge_classes` takes the similar pairs, found by the caller
(e.g. :func:`gemrag.graph.synonyms.synonym_pairs`), and joins their connected components.

The chunk–class matrix ``D`` (Appendix A eq. 6, the ``n x N`` binary matrix of section 2 whose row ``j`` is
class ``j`` and column ``i`` chunk ``i``) is returned as a ``scipy.sparse.csr_matrix`` of shape
(classes, chunks), ``D[j, i] = 1`` iff some member of class ``j`` was extracted from chunk ``i``. The paper
writes it with permutation submatrices ``P_C`` (eqs. 3-5); the product is the same as this direct construction.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.sparse.csgraph import connected_components

ARTICLES = ("the", "a", "an")
"""Leading words dropped by :func:`normalize_name` (one, when something follows it)."""


def normalize_name(name: str) -> str:
    """The key of an entity name's equivalence class (section 2, "syntactic equivalence", made concrete).

    Steps: Unicode NFKC; case folding; every punctuation character (Unicode category ``P*``: ``.,;:!?'"-()[]``
    ...) removed, except that a dash or slash between letters becomes a space ("COVID-19" and "COVID 19" meet
    "covid 19"); runs of whitespace collapsed to one space; one leading article ("the", "a", "an") dropped when
    another whitespace-separated word follows it (``"The A-Team"`` -> ``"a team"``: the hyphenated word keeps its
    "a"). ``"The  U.S. Army"`` and ``"u.s. army"`` both give ``"us army"``.

    Returns:
        The normalized key; ``""`` for a name with no letter, digit or symbol left.
    """
    words = unicodedata.normalize("NFKC", name).casefold().split()
    if len(words) > 1 and _strip_punctuation(words[0]).strip() in ARTICLES:
        words = words[1:]
    return " ".join(_strip_punctuation(" ".join(words)).split())


def _strip_punctuation(text: str) -> str:
    """Punctuation removed, a dash or slash becoming a space."""
    out = []
    for ch in text:
        category = unicodedata.category(ch)
        if category == "Pd" or ch == "/":
            out.append(" ")
        elif not category.startswith("P"):
            out.append(ch)
    return "".join(out)


@dataclass(frozen=True)
class EntityClasses:
    """Equivalence classes of the extracted entities, in order of first appearance.

    Attributes:
        keys: (C,) the normalized name of each class.
        names: (C,) the display name of each class: the surface form of its first member (chunk order).
        members: per class, its members as ``(chunk position, index within that chunk's list)``, in chunk order
            (the increasing subsequence of footnote 3).
        incidence: (C, n) ``csr_matrix`` float32, 1 where the class has a member in chunk position ``i``
            (Appendix A eq. 6).
    """

    keys: list[str]
    names: list[str]
    members: list[list[tuple[int, int]]]
    incidence: sp.csr_matrix

    def __len__(self) -> int:
        return len(self.keys)


def equivalence_classes(names_per_chunk: Sequence[Sequence[str]]) -> EntityClasses:
    """Group the entities of ``n`` chunks by :func:`normalize_name` (section 2; Appendix A eqs. 3-6).

    Args:
        names_per_chunk: for each chunk position ``i`` (0..n-1), the names extracted from it, in extraction order.

    Returns:
        The classes (a name normalizing to ``""`` joins no class), numbered by first appearance.
    """
    index: dict[str, int] = {}
    keys: list[str] = []
    names: list[str] = []
    members: list[list[tuple[int, int]]] = []
    for i, chunk_names in enumerate(names_per_chunk):
        for k, name in enumerate(chunk_names):
            key = normalize_name(name)
            if not key:
                continue
            j = index.get(key)
            if j is None:
                j = index[key] = len(keys)
                keys.append(key)
                names.append(" ".join(name.split()))
                members.append([])
            members[j].append((i, k))
    return EntityClasses(keys, names, members, _incidence(members, len(names_per_chunk)))


def _incidence(members: Sequence[Sequence[tuple[int, int]]], n_chunks: int) -> sp.csr_matrix:
    rows = [j for j, m in enumerate(members) for (i, _) in m]
    cols = [i for m in members for (i, _) in m]
    D = sp.csr_matrix(
        (np.ones(len(rows), np.float32), (np.array(rows, np.int64), np.array(cols, np.int64))),
        shape=(len(members), n_chunks),
    )
    D.sum_duplicates()
    D.data[:] = 1.0  # binary: a class named twice in one chunk approves it once
    return D


def merge_classes(classes: EntityClasses, pairs: tuple[NDArray[np.int64], NDArray[np.int64]]) -> EntityClasses:
    """Join the classes linked by ``pairs`` (semantic equivalence, footnote 8): connected components of the
    undirected graph they form; each merged class keeps the key and name of its earliest member class and the
    members of all, in chunk order.

    Args:
        classes: the syntactic classes.
        pairs: ``(src, dst)`` (p,) int64 class indices judged equivalent (e.g. representatives' cosine above a
            threshold).

    Raises:
        ValueError: an index out of range or arrays of different lengths.
    """
    src, dst = (np.asarray(a, dtype=np.int64) for a in pairs)
    c = len(classes)
    if src.shape != dst.shape:
        raise ValueError(f"pairs must have equal lengths, got {src.shape} and {dst.shape}")
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= c):
        raise ValueError(f"pair indices must lie in [0, {c})")
    if src.size == 0:
        return classes
    graph = sp.csr_matrix((np.ones(src.size), (src, dst)), shape=(c, c))
    _, label = connected_components(graph, directed=False)
    order: dict[int, int] = {}  # component label -> new class index, by earliest member class
    for j in range(c):
        order.setdefault(int(label[j]), len(order))
    keys: list[str] = [""] * len(order)
    names: list[str] = [""] * len(order)
    members: list[list[tuple[int, int]]] = [[] for _ in order]
    for j in range(c):
        new = order[int(label[j])]
        if not keys[new]:
            keys[new], names[new] = classes.keys[j], classes.names[j]
        members[new].extend(classes.members[j])
    members = [sorted(m) for m in members]
    return EntityClasses(keys, names, members, _incidence(members, classes.incidence.shape[1]))
