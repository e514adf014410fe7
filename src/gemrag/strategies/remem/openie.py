"""OpenIE over the memory's chunks: named entities, then triples (REMem ``extract_method="openie"``; HippoRAG 2,
Gutiérrez et al. 2025, section 3, "Offline Indexing").

Two passes of the extraction pipeline (:func:`gemrag.strategies.platform.extraction.extract_artifacts`: batched, every
answer cached before use, each chunk's result committed as an artefact as it arrives, failures recorded and
retried on later builds): the named-entity pass stores a :class:`~gemrag.strategies.remem.openie_prompts.NamedEntities`
artefact (kind ``"ner"``) per chunk; the triple pass, for the chunks that have one, sends the chunk with its
entities and stores a :class:`~gemrag.strategies.remem.openie_prompts.Triples` artefact (kind ``"triples"``). The
artefacts hold what the model said (validated, never ``eval``-ed); cleaning (normalization, the named-entity
condition) is deterministic and happens when the graph is built
(:func:`gemrag.strategies.remem.fact_graph.clean_triples`),
so changing it costs no LLM call. An interrupted build resumes where it stopped; a chunk whose passes failed is
still a passage node of the graph (reached through its dense score), with the failure in ``gemrag info``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from gemrag.store import NodeRecord
from gemrag.strategies.base import StrategyContext
from gemrag.strategies.platform.extraction import Extraction, ExtractionReport, extract_artifacts
from gemrag.strategies.platform.planning import PassPlan, PlanWork, artifact_pass, artifact_todo, estimate_pass
from gemrag.strategies.platform.titles import title_version
from gemrag.strategies.remem.fact_graph import Triple, clean_triples
from gemrag.strategies.remem.openie_prompts import (
    MAX_ENTITIES,
    MAX_ITEM_CHARS,
    MAX_TRIPLES,
    NER_VERSION,
    TRIPLES_VERSION,
    NamedEntities,
    Triples,
    ner_prompt,
    ner_schema,
    triples_prompt,
    triples_schema,
)

OWNER = "remem"
"""The strategy owning the OpenIE artefacts (shared by every REMem strategy that reads them)."""
NER_KIND = "ner"
TRIPLES_KIND = "triples"
ATTEMPTS = 3
"""Structured-output attempts per chunk per build and pass."""

# Completion limits (tokens): a JSON list of names / of triples, each element at most MAX_ITEM_CHARS characters
# (about a third as many tokens), plus the JSON punctuation.
NER_MAX_TOKENS = 16 + MAX_ENTITIES * 12
TRIPLES_MAX_TOKENS = 16 + MAX_TRIPLES * 30


def ner_extraction() -> Extraction[NodeRecord]:
    """The named-entity pass over chunk nodes (:func:`~gemrag.strategies.remem.openie_prompts.ner_prompt`)."""
    return Extraction(
        "OpenIE named entities",
        lambda node: ner_prompt(node.text),
        NamedEntities,
        schema=ner_schema(),
        max_tokens=NER_MAX_TOKENS,
        attempts=ATTEMPTS,
    )


def triples_extraction(entities: dict[int, list[str]]) -> Extraction[NodeRecord]:
    """The triple pass over chunk nodes, each sent with its named entities (``entities[node.id]``)."""
    return Extraction(
        "OpenIE triples",
        lambda node: triples_prompt(node.text, entities.get(node.id, [])),
        Triples,
        schema=triples_schema(),
        max_tokens=TRIPLES_MAX_TOKENS,
        attempts=ATTEMPTS,
    )


@dataclass
class OpenIEResult:
    """The cleaned OpenIE output of a set of chunks.

    Attributes:
        triples: chunk id -> its cleaned, normalized triples (empty for a chunk without a triples artefact).
        extracted: chunks with a triples artefact. dropped: raw triples dropped by cleaning.
        ner: the named-entity pass's report this build. facts: the triple pass's report this build.
    """

    triples: dict[int, list[Triple]]
    extracted: int
    dropped: int
    ner: ExtractionReport
    facts: ExtractionReport


def _dedupe(names: Sequence[str]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for name in names:
        name = " ".join(name.split())[:MAX_ITEM_CHARS]
        if name and name.lower() not in seen:
            seen.add(name.lower())
            out.append(name)
    return out


def run_openie(
    ctx: StrategyContext, chunks: Sequence[NodeRecord], *, require_entity: bool = True, titles: bool
) -> OpenIEResult:
    """Both OpenIE passes for the chunks that lack their artefacts, then every chunk's cleaned triples.

    Args:
        ctx: the strategy context (its LLM is loaded only if some chunk needs a call).
        chunks: the chunk nodes, in graph order.
        require_entity: keep only triples naming one of the chunk's entities
            (:func:`~gemrag.strategies.remem.fact_graph.clean_triples`).
        titles: both passes read a chunk as its document's title and its text (``remem.read_titles``); the
            artefacts of each input have their own version (:func:`~gemrag.strategies.platform.titles.title_version`).

    Returns:
        The cleaned triples of every chunk and the passes' counts.

    Raises:
        GemragError: a fatal one (the artefacts committed before it stay).
    """
    ner_version, triples_version = (title_version(ctx, v, titles) for v in (NER_VERSION, TRIPLES_VERSION))
    ner_report = extract_artifacts(
        ctx, chunks, ner_extraction(), strategy=OWNER, kind=NER_KIND, version=ner_version, titles=titles
    )
    ids = [c.id for c in chunks]
    entities = {
        nid: _dedupe(v.named_entities)
        for nid, v in ctx.store.artifacts(OWNER, NER_KIND, NamedEntities, ner_version, ids).items()
    }
    with_entities = [c for c in chunks if c.id in entities]
    facts_report = extract_artifacts(
        ctx,
        with_entities,
        triples_extraction(entities),
        strategy=OWNER,
        kind=TRIPLES_KIND,
        version=triples_version,
        titles=titles,
    )
    return dataclasses.replace(
        stored_openie(ctx, chunks, require_entity=require_entity, titles=titles), ner=ner_report, facts=facts_report
    )


def stored_openie(
    ctx: StrategyContext, chunks: Sequence[NodeRecord], *, require_entity: bool = True, titles: bool
) -> OpenIEResult:
    """Every chunk's cleaned triples from the stored artefacts alone (no LLM call; a chunk without its artefacts has
    no triples): what :func:`run_openie` returns after its passes, and what a removal reassembles the graph from
    (:meth:`gemrag.strategies.remem.strategy.RememStrategy.prune`). The reports are empty."""
    ner_version, triples_version = (title_version(ctx, v, titles) for v in (NER_VERSION, TRIPLES_VERSION))
    ids = [c.id for c in chunks]
    entities = {
        nid: _dedupe(v.named_entities)
        for nid, v in ctx.store.artifacts(OWNER, NER_KIND, NamedEntities, ner_version, ids).items()
    }
    raw = ctx.store.artifacts(OWNER, TRIPLES_KIND, Triples, triples_version, ids)
    cleaned: dict[int, list[Triple]] = {}
    dropped = 0
    for nid in ids:
        kept, lost = clean_triples(
            raw[nid].triples if nid in raw else [], entities.get(nid, []), require_entity=require_entity
        )
        cleaned[nid] = kept
        dropped += lost
    return OpenIEResult(cleaned, len(raw), dropped, ExtractionReport(), ExtractionReport())


NER_TOKENS = 45
"""Typical completion tokens of a named-entity answer. With :data:`TRIPLES_TOKENS` the 258 completion tokens per
chunk of remem's MuSiQue builds (docs/results.md, "Cost": 2 calls per chunk, 780 prompt + 258 completion tokens)."""
TRIPLES_TOKENS = 213
"""Typical completion tokens of a triple answer (see :data:`NER_TOKENS`)."""

_NAME = re.compile(r"\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")


def guessed_entities(text: str, most: int = 8) -> list[str]:
    """A stand-in for the named entities of ``text`` not extracted yet: its distinct capitalized word runs (at most
    ``most``), for the length of a triple prompt in a plan."""
    return _dedupe(_NAME.findall(text))[:most]


def plan_openie(ctx: StrategyContext, work: PlanWork, *, titles: bool) -> list[PassPlan]:
    """The plan of both OpenIE passes (:func:`run_openie`) for the chunks that lack their artefacts: the named-entity
    pass exactly; the triple pass exactly for chunks whose entities are stored or cached, else on a stand-in list of
    entities (:func:`guessed_entities`), counted as calls."""
    ner_version, triples_version = (title_version(ctx, v, titles) for v in (NER_VERSION, TRIPLES_VERSION))
    todo = artifact_todo(ctx, work, strategy=OWNER, kind=NER_KIND, version=ner_version, attempts=ATTEMPTS)
    ner, answers = artifact_pass(work, todo, ner_extraction(), titles=titles, typical_completion=NER_TOKENS)
    known: dict[int, list[str]] = {}
    for (chunk, _), answer in zip(todo, answers, strict=True):
        if answer is not None and isinstance(answer.get("parsed"), dict):
            known[chunk.id] = _dedupe(answer["parsed"].get("named_entities") or [])
    facts = artifact_todo(ctx, work, strategy=OWNER, kind=TRIPLES_KIND, version=triples_version, attempts=ATTEMPTS)
    stored = [c.id for c, _ in facts if c.id not in work.virtual and c.id not in known]
    found = ctx.store.artifacts(OWNER, NER_KIND, NamedEntities, ner_version, stored) if stored else {}
    known |= {i: _dedupe(v.named_entities) for i, v in found.items()}
    exact = [(c, a) for c, a in facts if c.id in known]
    guessed = [(c, 0) for c, _ in facts if c.id not in known]
    spec = triples_extraction(known)
    triples, _ = artifact_pass(work, exact, spec, titles=titles, typical_completion=TRIPLES_TOKENS)
    if guessed:
        stand_in = triples_extraction({c.id: guessed_entities(c.text) for c, _ in guessed})
        requests = [stand_in.first_request(dataclasses.replace(c, text=work.text_of(c, titles))) for c, _ in guessed]
        more, _ = estimate_pass(
            work, spec.description, requests, typical_completion=TRIPLES_TOKENS, exact=False, distinct=True
        )
        triples = dataclasses.replace(
            triples,
            items=triples.items + more.items,
            calls=triples.calls + more.calls,
            prompt_tokens=triples.prompt_tokens + more.prompt_tokens,
            completion_tokens=triples.completion_tokens + more.completion_tokens,
            reused_prompt_tokens=triples.reused_prompt_tokens + more.reused_prompt_tokens,
            exact=False,
            note=f"{len(guessed)} prompt(s) with stand-in entities (not extracted yet)",
        )
    return [ner, triples]
