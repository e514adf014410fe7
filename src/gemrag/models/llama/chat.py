"""Chat template and grammar helpers of the llama.cpp backend (:mod:`gemrag.models.llama.backend`).

Both reproduce what llama-cpp-python's ``Llama.create_chat_completion`` does (``Llama.__init__`` builds a
``Jinja2ChatFormatter`` from the GGUF's ``tokenizer.chat_template``; ``response_format`` becomes a grammar through
``LlamaGrammar.from_json_schema``), so the batch decoder (:mod:`gemrag.models.llama.batch`) sees the same prompt
tokens and grammar; the grammar is built once per schema instead of once per call.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from gemrag.errors import GemragError

if TYPE_CHECKING:
    from llama_cpp import Llama

__all__ = ["GrammarCache", "chat_formatter", "grammar_for_schema"]


@lru_cache(maxsize=64)
def _gbnf_for(schema_json: str) -> str:
    from llama_cpp import llama_grammar

    try:
        return llama_grammar.LlamaGrammar.from_json_schema(schema_json, verbose=False)._grammar
    except Exception:  # llama-cpp-python falls back to any JSON (llama_chat_format._grammar_for_json_schema)
        return llama_grammar.JSON_GBNF


def grammar_for_schema(schema: dict[str, Any]) -> str:
    """The GBNF grammar (text) llama-cpp-python derives from a JSON schema, built once per schema.

    Keyed by ``json.dumps(schema)`` (key order kept: it orders the grammar's object properties), with the
    same fallback as ``response_format`` (any JSON object when the converter rejects the schema).
    """
    return _gbnf_for(json.dumps(schema))


def chat_formatter(llm: Llama) -> Any:
    """The GGUF's chat template as llama-cpp-python builds it in ``Llama.__init__`` (same template, EOS/BOS text
    and stop token), so prompts are token-for-token those of ``create_chat_completion``."""
    from llama_cpp import llama_chat_format, llama_cpp

    vocab = llama_cpp.llama_model_get_vocab(llm.model)

    def text(token: int) -> str:
        return llama_cpp.llama_vocab_get_text(vocab, token).decode("utf-8") if token != -1 else ""

    eos, bos = llm.token_eos(), llm.token_bos()
    return llama_chat_format.Jinja2ChatFormatter(
        template=llm.metadata["tokenizer.chat_template"],
        eos_token=text(eos),
        bos_token=text(bos),
        stop_token_ids=[eos],
    )


class GrammarCache:
    """Parsed llama.cpp grammar samplers by GBNF text, each kept in its initial state and cloned per sequence.

    Parsing a grammar is done once per distinct GBNF text (``llama_sampler_init_grammar``); a clone
    (``llama_sampler_clone``) copies the parsed rules and initial stacks.
    """

    def __init__(self, llama_cpp: Any, vocab: Any) -> None:
        """Args: llama_cpp: the ``llama_cpp`` module. vocab: the model's ``llama_vocab`` pointer."""
        self._lib = llama_cpp
        self._vocab = vocab
        self._templates: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self._templates)

    def template(self, gbnf: str) -> Any:
        """The parsed sampler for ``gbnf`` (owned by the cache; do not advance or free it).

        Raises:
            GemragError: llama.cpp could not parse the grammar.
        """
        smpl = self._templates.get(gbnf)
        if smpl is None:
            smpl = self._lib.llama_sampler_init_grammar(self._vocab, gbnf.encode("utf-8"), b"root")
            if not smpl:
                raise GemragError(f"llama.cpp could not parse the grammar: {gbnf[:200]!r}")
            self._templates[gbnf] = smpl
        return smpl

    def clone(self, gbnf: str) -> Any:
        """A new grammar sampler for ``gbnf`` in its initial state; the caller frees it (``llama_sampler_free``).

        Raises:
            GemragError: the grammar does not parse.
        """
        return self._lib.llama_sampler_clone(self.template(gbnf))

    def close(self) -> None:
        """Free every parsed grammar."""
        for smpl in self._templates.values():
            self._lib.llama_sampler_free(smpl)
        self._templates.clear()
