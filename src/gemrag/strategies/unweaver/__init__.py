"""UnWeaver: chunks retrieved through the ideas they contain, by committee elections (seed ``unweaver-paper.txt``,
section 2 "Mathematics of UnWeaver" and Appendix A).

* :mod:`~gemrag.strategies.unweaver.strategy`: :class:`UnweaverStrategy` (``unweaver``): build and retrieve;
* :mod:`~gemrag.strategies.unweaver.prompts`: the per-chunk entity (name, description) extraction prompt and the
  representative-shortening prompt;
* :mod:`~gemrag.strategies.unweaver.entity_classes`: equivalence classes by normalized name (section 2);
* :mod:`~gemrag.strategies.unweaver.representatives`: each class's representative text;
* :mod:`~gemrag.strategies.unweaver.ballots`: approval ballots of the top-k classes and their scores;
* :mod:`~gemrag.strategies.unweaver.committee`: AV / PAV / Chamberlin-Courant elections (abcvoting);
* :mod:`~gemrag.strategies.unweaver.alignment`: the least-squares alignment and fairness allocation (Appendix A).
"""

from gemrag.strategies.unweaver.strategy import UnweaverStrategy

__all__ = ["UnweaverStrategy"]
