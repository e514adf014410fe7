"""GEM-RAG's m utility questions per node (section III.B.1): a question the model repeats counts twice, as in the
paper's sum over the m questions, unless ``gem.dedupe_questions`` (the earlier rule) drops it."""

from __future__ import annotations

import numpy as np

from gemrag.graph.similarity import similarity_matrix
from gemrag.strategies.gem.utility_questions import kept_questions


def test_a_repeated_question_keeps_m_terms_of_the_edge_weight() -> None:
    written = ["Who built the dam?", "who built  the dam", "When was it built?", " ", "Why?", "Extra?"]
    paper = kept_questions(written, 4)
    assert paper == ["Who built the dam?", "who built the dam", "When was it built?", "Why?"]  # m = 4 kept
    assert kept_questions(written, 4, dedupe=True) == ["Who built the dam?", "When was it built?", "Why?", "Extra?"]
    # the edge weight s_tv sums the node's m question cosines: the repeated question contributes twice
    nodes = np.array([[1.0, 0.0], [0.0, 1.0]])
    q = np.array([[0.0, 1.0], [0.0, 1.0], [1.0, 0.0]])  # node 0: the same question twice, then another
    s_paper = similarity_matrix(nodes, q, np.array([0, 0, 0]))
    s_dedup = similarity_matrix(nodes, q[1:], np.array([0, 0]))
    assert s_paper[0, 1] == 2.0 and s_dedup[0, 1] == 1.0
