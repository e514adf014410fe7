"""Moving the prompts next to their users (issue 24) changed no prompt: the LLM cache keys of a fixed set of prompts,
one or more from every prompt module, equal the keys computed before the move (at commit ba1b835, when the prompts
lived in ``gemrag.models.*prompts``). A key covers the messages, the JSON schema and the artefact versions, so every
cached answer and every published build stays valid. If a prompt is changed on purpose, its artefact version must
change with it and the key here is updated in the same commit."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

from gemrag.models.base import Message
from gemrag.models.cache import CachedLLM
from gemrag.models.meter import UsageMeter

PROMPT_MODULES = {
    "gem": "gemrag.strategies.gem.prompts",
    "raptor": "gemrag.strategies.raptor.prompts",
    "answer": "gemrag.answers.prompts",
    "choices": "gemrag.answers.choices",
    "openie": "gemrag.strategies.remem.openie_prompts",
    "gist": "gemrag.strategies.remem.gist_prompts",
    "agent": "gemrag.strategies.remem.agent_prompts",
    "hlgraph": "gemrag.strategies.hlgraph.prompts",
    "unweaver": "gemrag.strategies.unweaver.prompts",
    "acceptance": "gemrag.eval.acceptance.prompts",
    "judge": "gemrag.eval.judging.prompts",
    "chat": "gemrag.chat.prompts",
}

#: The keys before the move (computed by the same cases with the modules at their old paths).
KEYS_BEFORE = {
    "utility_questions": "0d358c911bd2e98a0eb8417c7f8288cfc0bcd8e3472b513d5dab14094f0943cd",
    "summary": "7a2b12184248f6558cd13c04f108e90d6dc8004defd1014fbc746098ec5b11e4",
    "raptor_summary": "88ce3db142a59eb3b3ac0da1a1a8da9f5195d3aef8548de38473b8b8b42e509a",
    "answer": "5be07f7f7b832cef482efa3be9449fba697cc51f666d43c124014199eeb8c674",
    "answer_abstain": "6653a507fcbf0007c038b2323bb492f91b581848dba7814beb17b0db812481b8",
    "answer_choice": "07e3635f03061a6f4efb1031cb019007291f3fe804badeb64c29aee22d5af670",
    "ner": "cb5aa48a4fbe532f456a640ed422bbf69ae5bc443eb880340bfd546e796f2743",
    "triples": "9f1b9b1796c424f7d6944c3e48d51a0a49126711a70e9db2e7bfb8521e02832e",
    # issue 38 changed the filter on purpose (no "at most 4", a schema bounded by the candidates shown): a query-time
    # prompt, so no artefact version changes; cached filter answers of the old prompt are simply not reused
    "recognition": "cd2fbd3423c3434703bb947163319ef8a9e6b038a560d555c7d0fc413e87d163",
    "gist": "79a03081013cbd6decdb25a3c601aafd8d68f6c274cf07c697041005eca78a0b",
    "agent": "4277375c92c0ae045be63bf4a18951c8e8e6804f41e1144f17ea6f8d8b080799",
    "hlgraph_extraction": "99612cdee91e06cd20f605c232018bf11e191a4da911eb44565052c273ec6160",
    "hlgraph_ideas": "db574cf9c5c799fdb528cdf80a9464e14779e963cf2ae0e570ec68ec004c735c",
    "unweaver_entities": "bf377af45f5f6527f7785dda3372ab8ff0be69ff559c4aaeb3872d8d82720657",
    "unweaver_shorten": "267a53d801be1b855ed8fdfe55888858bd5fffcd938a909314110cb5e57999ff",
    "judge": "dde0044374767e6a5274f07ff24734ac08a4260c56860c870a81e4d6273defa2",
    "reply": "388b6773b9e82fce20dbe1373ccaa9d1654f92c0846cad09f1fec3fc1db731a6",
    "chat": "7b88fdb0e5e501cd775c1ba50ad6488d8e554806a8439c166d7da49d382a25f3",
    # GIST_VERSION became gist-v2 on purpose: the turn parser now splits turns out of stored one-line chunks, so the
    # gist windows change and a rebuild must not reuse gists of merged windows (the gist prompt itself is unchanged)
    "versions": "a6732f08ec6bf4049cf2e423c84766a1e33d00b48aec08f9a91039e586403152",
}


class _NoCache:
    def get_llm(self, key: str) -> dict[str, Any] | None:
        return None

    def put_llm(self, *args: Any) -> None: ...


class _Backend:
    model_id = "m"
    context_window = 4096

    def complete(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no call is made: only keys are computed")


def _cases() -> dict[str, tuple[list[Message], dict[str, Any] | None]]:
    m = {k: importlib.import_module(v) for k, v in PROMPT_MODULES.items()}
    P = "Marta sold her boat to Ivo in Tromsø in 1998."
    g, r, a, o, gi, ag, h, u, ac, ju, ch = (
        m[k]
        for k in (
            "gem",
            "raptor",
            "answer",
            "openie",
            "gist",
            "agent",
            "hlgraph",
            "unweaver",
            "acceptance",
            "judge",
            "chat",
        )
    )
    return {
        "utility_questions": (g.utility_questions_prompt(P, 5), g.utility_questions_schema(5)),
        "summary": (g.summary_prompt([P, "Ivo was angry."], 100), None),
        "raptor_summary": (r.raptor_summary_prompt([P, "Ivo was angry."]), None),
        "answer": (a.answer_prompt("Who sold the boat?", [P]), None),
        "answer_abstain": (a.answer_prompt("Who sold the boat?", [P], abstain=True), None),
        "answer_choice": (a.answer_prompt("Who sold the boat?", [P], ["Marta", "Ivo"]), m["choices"].choice_schema(2)),
        "ner": (o.ner_prompt(P), o.ner_schema()),
        "triples": (o.triples_prompt(P, ["Marta", "Ivo"]), o.triples_schema()),
        "recognition": (
            o.recognition_prompt("Who sold the boat?", [["Marta", "sold", "boat"]]),
            o.recognition_schema(1),
        ),
        "gist": (gi.gist_prompt("8 May 2023", "2023-05-08", "[turn 1] Ann: hi"), gi.gist_schema()),
        "agent": (
            ag.agent_messages("Who sold the boat?", ag.TOOLS)
            + [{"role": "user", "content": ag.step_note(2, 5) + ag.FALLBACK_NOTE}],
            ag.tool_call_schema(ag.TOOLS),
        ),
        "hlgraph_extraction": (h.extraction_prompt(P), h.extraction_schema()),
        "hlgraph_ideas": (h.ideas_prompt("Why did Marta push Ivo?"), h.ideas_schema()),
        "unweaver_entities": (u.entities_prompt(P), u.entities_schema()),
        "unweaver_shorten": (u.shorten_prompt("Marta", "A woman. A sailor.", 100), None),
        "judge": (ju.judge_prompt("Movie text", "A: hi", "B: yo", "B: hey"), ju.verdict_schema()),
        "reply": (ac.reply_prompt("Jaws", [P], [(True, "hi"), (False, "hello")]), None),
        "chat": (ch.chat_prompt("Ava", "hi", [P], [("a", "b")], description="kind"), None),
        "versions": (
            [
                {
                    "role": "user",
                    "content": json.dumps(
                        [o.NER_VERSION, o.TRIPLES_VERSION, gi.GIST_VERSION, h.EXTRACTION_VERSION, u.ENTITIES_VERSION]
                    ),
                }
            ],
            None,
        ),
    }


CASES = _cases()


def test_every_case_has_a_key_from_before() -> None:
    assert set(CASES) == set(KEYS_BEFORE)


@pytest.mark.parametrize("name", sorted(KEYS_BEFORE))
def test_cache_key_unchanged_by_the_move(name: str) -> None:
    messages, schema = CASES[name]
    key = CachedLLM(_Backend(), _NoCache(), UsageMeter()).key(messages, schema=schema, max_tokens=64)  # type: ignore[arg-type]
    assert key == KEYS_BEFORE[name]
