"""Model providers: the LLM and Embedder protocols, their backends and the middleware around them."""

from gemrag.models.base import LLM, Completion, Embedder, Message, Scores, ScoringLLM, Usage

__all__ = ["LLM", "Completion", "Embedder", "Message", "ScoringLLM", "Scores", "Usage"]
