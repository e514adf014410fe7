"""UnWeaver's retrieval step: the question's most similar classes become approval ballots over chunks (UnWeaver
paper, section 2, the filtering matrix ``diag(f) D`` and the election that follows; Appendix A.1 eqs. 12-13), and
the released code's chunk score, offered as a variant.

* :func:`approval_ballots`: the top-k classes by similarity to the question (the binary vector ``f`` of section 2)
  and their rows of the chunk–class matrix ``D``, i.e. the retrieval matrix of eq. (13), restricted to the chunks
  some ballot approves (the only candidates an approval rule can prefer).
* :func:`released_scores`: the chunk score of the authors' released code (SamsungLabs/UnWeaver, not in the paper):
  the chunk's share of the retrieved (class, chunk) links times ``1 - r / k``, ``r`` the 0-based rank of the
  best-ranked retrieved class naming it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from gemrag.graph.validate import as_vector, top_indices


@dataclass(frozen=True)
class Ballots:
    """The approval profile of one question.

    Attributes:
        classes: (v,) int64 indices of the voting classes, most similar first.
        similarity: (v,) float64 their similarity to the question (the ballot weights' source).
        candidates: (c,) int64 chunk positions approved by at least one ballot, ascending.
        approvals: (v, c) ``csr_matrix`` float32, 1 where voter ``a`` approves candidate ``b`` (rows of ``D``
            restricted to ``candidates``).
    """

    classes: NDArray[np.int64]
    similarity: NDArray[np.float64]
    candidates: NDArray[np.int64]
    approvals: sp.csr_matrix

    def approved_sets(self) -> list[list[int]]:
        """Per voter, the approved candidates as indices into :attr:`candidates`."""
        A = self.approvals
        return [A.indices[A.indptr[a] : A.indptr[a + 1]].tolist() for a in range(A.shape[0])]


def approval_ballots(incidence: sp.spmatrix | sp.sparray, scores: ArrayLike, top_k: int) -> Ballots:
    """The ``top_k`` classes with the highest ``scores`` as approval ballots over the chunks they were extracted
    from (section 2; eq. 13).

    Args:
        incidence: (C, n) chunk–class matrix ``D`` (nonzero = class in chunk).
        scores: (C,) similarity of each class's representative to the question (cosine, eq. 12).
        top_k: voters (>= 1); ties go to the lower class index. Classes approving no chunk do not vote.

    Raises:
        ValueError: shapes disagree, ``top_k < 1`` or non-finite scores.
    """
    D = sp.csr_matrix(incidence)
    s = as_vector(scores, "scores", size=D.shape[0])
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    chosen = top_indices(s, top_k)
    rows = D[chosen]
    voting = np.diff(rows.indptr) > 0
    chosen, rows = chosen[voting], rows[voting]
    candidates = np.unique(rows.indices).astype(np.int64)
    approvals = sp.csr_matrix(rows[:, candidates], dtype=np.float32)
    approvals.data[:] = 1.0
    approvals.sort_indices()
    return Ballots(chosen.astype(np.int64), s[chosen], candidates, approvals)


def released_scores(ballots: Ballots, top_k: int) -> NDArray[np.float64]:
    """The released code's score of each candidate: ``(links to it / all links) x (1 - r / top_k)``.

    A *link* is one (voter, approved chunk) pair; ``r`` is the 0-based position, in similarity order among the
    ``top_k`` retrieved classes, of the first voter approving the chunk. (Reimplemented from the description of
    its ranking; not in the paper.)

    Returns:
        (c,) float64 scores aligned with ``ballots.candidates``, in ``[0, 1]``.
    """
    A = ballots.approvals
    links = np.asarray(A.sum(axis=0)).ravel().astype(np.float64)
    total = links.sum()
    if total == 0:
        return np.zeros(A.shape[1])
    first = np.full(A.shape[1], np.inf)
    for rank, approved in enumerate(ballots.approved_sets()):
        first[approved] = np.minimum(first[approved], rank)
    return links / total * (1.0 - first / max(top_k, 1))


def approval_scores(ballots: Ballots, weights: ArrayLike | None = None) -> NDArray[np.float64]:
    """Each candidate's (weighted) approval score: the sum of the weights of the voters approving it (AV's score).

    Args:
        ballots: the profile. weights: (v,) voter weights (default 1 each).

    Returns:
        (c,) float64, aligned with ``ballots.candidates``.
    """
    v = ballots.approvals.shape[0]
    w = np.ones(v) if weights is None else as_vector(weights, "weights", size=v)
    return np.asarray(ballots.approvals.T @ w).ravel().astype(np.float64)
