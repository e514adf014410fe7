"""HLGraphRAG (seed ``hlgraphrag-paper.txt``; Zeng, "HLGraphRAG: A Graph Retrieval Augmentation System for
Human-like Synthesis of Information", sections 3 and 4).

* :mod:`~gemrag.strategies.hlgraph.strategy`: :class:`HLGraphStrategy` (``hlgraph``): encoding (section 3,
  "Encoding") and retrieval by main ideas and ranked depth-first search ("Retrieval");
* :mod:`~gemrag.strategies.hlgraph.facts`: the per-chunk subject-relation (SRQ) and event (CR) extraction and the
  passive-voice rule;
* :mod:`~gemrag.strategies.hlgraph.association`: the AssociationGraph, directional edge labels (DW) and the ranked
  depth-first traversal (RR);
* :mod:`~gemrag.strategies.hlgraph.prompts`: the extraction and main-idea prompts.

The character chat of section 4 is :mod:`gemrag.chat`; the acceptance test is :mod:`gemrag.eval.acceptance`.
"""

from gemrag.strategies.hlgraph.strategy import HLGraphStrategy

__all__ = ["HLGraphStrategy"]
