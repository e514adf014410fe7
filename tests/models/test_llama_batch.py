"""Pure parts of the llama.cpp batch decoder and its wiring (no model is loaded): prefix matching, slot choice,
grammars built once per schema and parsed once per grammar, the n_parallel setting."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from gemrag.config import load_config
from gemrag.errors import ConfigError, GemragError
from gemrag.models.llama.batch import GrammarCache, choose_slot, common_prefix_len
from gemrag.strategies.gem.prompts import utility_questions_schema

needs_llama = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python missing")


def test_common_prefix_len() -> None:
    assert common_prefix_len([], [1, 2]) == 0
    assert common_prefix_len([1, 2, 3], [1, 2, 3]) == 3
    assert common_prefix_len([1, 2, 3], [1, 2]) == 2
    assert common_prefix_len([1, 2, 3], [1, 9, 3]) == 1
    assert common_prefix_len([5], [1]) == 0


def test_choose_slot_continues_in_place_when_the_best_source_is_free() -> None:
    cached = [[1, 2, 3, 4], [1, 2, 9], []]
    assert choose_slot(cached, [False, False, False], [1, 2, 3, 7]) == (0, 0, 3)


def test_choose_slot_copies_from_a_busy_source_into_the_emptiest_free_slot() -> None:
    cached = [[1, 2, 3, 4], [1, 9, 9, 9, 9], [8]]
    slot, source, reuse = choose_slot(cached, [True, False, False], [1, 2, 3, 7])
    assert (slot, source, reuse) == (2, 0, 3)


def test_choose_slot_keeps_one_prompt_token_to_decode() -> None:
    # The whole prompt is cached: its last token is decoded again, for the logits of the first new token.
    assert choose_slot([[1, 2, 3]], [False], [1, 2, 3]) == (0, 0, 2)
    assert choose_slot([[1, 2, 3]], [False], [1]) == (0, -1, 0)


def test_choose_slot_without_any_shared_prefix() -> None:
    assert choose_slot([[5, 6], [], [7]], [False, False, True], [1, 2]) == (1, -1, 0)


def test_choose_slot_errors() -> None:
    with pytest.raises(ValueError, match="no free slot"):
        choose_slot([[1]], [True], [1, 2])
    with pytest.raises(ValueError, match="empty"):
        choose_slot([[1]], [False], [])


class FakeSamplerLib:
    """Stands in for the three llama_cpp sampler functions GrammarCache calls."""

    def __init__(self) -> None:
        self.parsed: list[bytes] = []
        self.cloned = 0
        self.freed: list[Any] = []

    def llama_sampler_init_grammar(self, vocab: Any, gbnf: bytes, root: bytes) -> Any:
        self.parsed.append(gbnf)
        return None if b"broken" in gbnf else f"grammar-{len(self.parsed)}"

    def llama_sampler_clone(self, smpl: Any) -> Any:
        self.cloned += 1
        return f"{smpl}-clone-{self.cloned}"

    def llama_sampler_free(self, smpl: Any) -> None:
        self.freed.append(smpl)


def test_grammar_cache_parses_once_and_clones_per_sequence() -> None:
    lib = FakeSamplerLib()
    cache = GrammarCache(lib, vocab=None)
    a = [cache.clone('root ::= "a"') for _ in range(3)]
    b = cache.clone('root ::= "b"')
    assert lib.parsed == [b'root ::= "a"', b'root ::= "b"']
    assert a == ["grammar-1-clone-1", "grammar-1-clone-2", "grammar-1-clone-3"] and b == "grammar-2-clone-4"
    assert len(cache) == 2
    cache.close()
    assert sorted(lib.freed) == ["grammar-1", "grammar-2"] and len(cache) == 0


def test_grammar_cache_reports_a_grammar_llama_cpp_rejects() -> None:
    cache = GrammarCache(FakeSamplerLib(), vocab=None)
    with pytest.raises(GemragError, match="could not parse the grammar"):
        cache.clone("root ::= broken")
    assert len(cache) == 0


@needs_llama
def test_grammar_for_schema_is_built_once_per_schema() -> None:
    from gemrag.models.llama.chat import _gbnf_for, grammar_for_schema

    _gbnf_for.cache_clear()
    first = grammar_for_schema(utility_questions_schema(5))
    again = grammar_for_schema(utility_questions_schema(5))  # an equal, new dict
    assert again is first and _gbnf_for.cache_info().hits == 1
    assert grammar_for_schema(utility_questions_schema(3)) != first
    assert first.count("questions-item") >= 5 and "root ::=" in first


@needs_llama
def test_grammar_for_schema_falls_back_to_any_json_like_response_format() -> None:
    from llama_cpp import llama_grammar

    from gemrag.models.llama.chat import grammar_for_schema

    assert grammar_for_schema({"$ref": "#/definitions/missing"}) == llama_grammar.JSON_GBNF


def test_n_parallel_setting() -> None:
    assert load_config(None).llm.n_parallel == 1
    assert load_config(None, {"llm": {"n_parallel": 1}}).llm.n_parallel == 1
    with pytest.raises(ConfigError):
        load_config(None, {"llm": {"n_parallel": 0}})


def test_n_parallel_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMRAG_LLM__N_PARALLEL", "8")
    assert load_config(None).llm.n_parallel == 8


@needs_llama
def test_n_parallel_reaches_the_backend_and_stays_out_of_the_cache_identity() -> None:
    from gemrag.errors import ModelNotAvailableError
    from gemrag.models.factory import build_llm

    try:
        one = build_llm(load_config(None, {"llm": {"model": "qwen2.5-coder-0.5b", "n_parallel": 1}}).llm)
        eight = build_llm(load_config(None, {"llm": {"model": "qwen2.5-coder-0.5b", "n_parallel": 8}}).llm)
    except ModelNotAvailableError as e:
        pytest.skip(str(e))
    assert (one.n_parallel, eight.n_parallel) == (1, 8)  # type: ignore[attr-defined]
    assert one.cache_identity == eight.cache_identity  # type: ignore[attr-defined]
