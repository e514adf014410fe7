"""The OpenAI-compatible provider: any server speaking the OpenAI chat-completions and embeddings API.

``backend`` (:class:`~gemrag.models.openai.backend.OpenAILLM`; it re-exports ``embedder``'s
:class:`~gemrag.models.openai.embedder.OpenAIEmbedder`) runs on ``chat`` (each chat request built from its schema and
settings, and its answer read back), ``http`` (the SDK client, token estimates and error translation), ``stream``
(streamed chat) and ``limits`` (the client-side rate limiter). Every import of the SDK in this package is absolute
(``import openai``), so it resolves to the ``openai`` distribution, never to this package.

Nothing is imported here, so ``import gemrag.models.openai.limits`` does not load the SDK.
"""
