"""``iterative``: retrieval in steps over any strategy, a small LLM reasoning between the retrievals — IRCoT's next
queries or self-ask's decomposition, optionally RankGPT's rerank (:mod:`.strategy`); the steps (:mod:`.steps`), the
rerank's sliding windows (:mod:`.rerank`), their merge into one context (:mod:`.merge`), the LLM passes
(:mod:`.passes`) and their prompts (:mod:`.prompts`)."""

from gemrag.strategies.iterative.strategy import IterativeConfig, IterativeStrategy

__all__ = ["IterativeConfig", "IterativeStrategy"]
