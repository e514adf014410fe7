"""REMem (seed ``remem-retrieval-strategies.txt``), which forks HippoRAG 2 (Gutiérrez et al. 2025, "From RAG to
Memory: Non-Parametric Continual Learning for Large Language Models", section 3).

Three strategies over one package:

* ``remem`` (:mod:`~gemrag.strategies.remem.strategy`, "Default Strategy (OpenIE)"): OpenIE per chunk
  (:mod:`~gemrag.strategies.remem.openie`, prompts in :mod:`~gemrag.strategies.remem.openie_prompts`), the fact
  graph (:mod:`~gemrag.strategies.remem.fact_graph`), the LLM's recognition filter at query time
  (:mod:`~gemrag.strategies.remem.recognition`), and Personalized PageRank from the seed weights of
  :mod:`~gemrag.strategies.remem.fact_seeds`;
* ``remem_gist`` (:mod:`~gemrag.strategies.remem.episodic`, "Episodic Gist Strategy", "Agent Configuration"):
  verbatim turns, session-window gists (:mod:`~gemrag.strategies.remem.gists`, prompts in
  :mod:`~gemrag.strategies.remem.gist_prompts`) and the tool-using agent (:mod:`~gemrag.strategies.remem.agent`,
  prompts in :mod:`~gemrag.strategies.remem.agent_prompts`);
* ``remem_temporal`` (:mod:`~gemrag.strategies.remem.temporal`, "Temporal Strategy").

Shared math (Personalized PageRank, synonym edges, name normalization) is in :mod:`gemrag.graph`; conversation
turns and session windows in :mod:`gemrag.strategies.platform.conversation`.
"""

from gemrag.strategies.remem.strategy import RememStrategy

__all__ = ["RememStrategy"]
