"""The baselines the papers compare against: ``dense`` (dense passage retrieval, top-k by cosine), ``bm25``
(lexical, bm25s) and ``full`` (the whole document in context, as far as the budget allows). RAPTOR, a baseline
with LLM passes of its own, has its own package (:mod:`gemrag.strategies.raptor`)."""
