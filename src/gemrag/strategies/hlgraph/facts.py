"""HLGraphRAG's encoding (Zeng, "HLGraphRAG", section 3 "Encoding", "SRQ and CR", "Directional Weights"): the
per-chunk extraction, the rule fallback for the passive voice, the assembly of every chunk's answer into nodes
and facts, and the sentences a fact is rendered as.

The extraction is one pass of the platform's pipeline (:func:`gemrag.strategies.platform.extraction.extract_artifacts`:
structured output, batched, every answer cached before use, one artefact per chunk committed as it arrives,
failures recorded and retried on later builds). The artefact holds what the model said; everything after it
(deduplication, the switches ``routing`` and ``passive``) is deterministic and happens when the graph is
assembled, so the ablations cost no LLM call. Labels that end by repeating object 2 lose the repetition
(:func:`strip_object`).

Assembly: a **subject node** per distinct subject or relation/event object (names compared after
:func:`~gemrag.graph.names.normalize_entity`; the first spelling is kept), an **event node** per distinct
event (CR), and a **fact** per distinct relation (SRQ) or event, with the chunks that stated it. The paper says
nothing about merging repeated subjects or facts across chunks; gemrag merges equal normalized names and equal
normalized (object 1, label, object 2), and a fact's weight is the number of chunks stating it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from gemrag.graph.names import normalize_entity
from gemrag.store import NodeRecord
from gemrag.strategies.base import StrategyContext
from gemrag.strategies.hlgraph.prompts import (
    EXTRACTION_VERSION,
    MAX_EVENTS,
    MAX_ITEM_CHARS,
    MAX_RELATIONS,
    MAX_SUBJECTS,
    ChunkMemory,
    extraction_prompt,
    extraction_schema,
)
from gemrag.strategies.platform.extraction import Extraction, ExtractionReport, extract_artifacts
from gemrag.strategies.platform.planning import PassPlan, PlanWork, artifact_pass, artifact_todo
from gemrag.strategies.platform.titles import title_version

OWNER = "hlgraph"
KIND = "memory"
"""The artefact ``(strategy, kind)`` holding each chunk's :class:`~gemrag.strategies.hlgraph.prompts.ChunkMemory`."""
ATTEMPTS = 3
EXTRACTION_MAX_TOKENS = 24 + MAX_SUBJECTS * 10 + MAX_RELATIONS * 45 + MAX_EVENTS * 75
"""Completion limit of one chunk's answer (tokens): the lists at their longest with short strings."""

# -- the passive voice, by rule ---------------------------------------------------------------------------
_IRREGULAR = {
    w: p
    for p, forms in {
        "seen": "sees saw",
        "known": "knows knew",
        "given": "gives gave",
        "taken": "takes took",
        "written": "writes wrote",
        "made": "makes made",
        "found": "finds found",
        "told": "tells told",
        "met": "meets met",
        "left": "leaves left",
        "bought": "buys bought",
        "sold": "sells sold",
        "sent": "sends sent",
        "built": "builds built",
        "held": "holds held",
        "kept": "keeps kept",
        "taught": "teaches taught",
        "brought": "brings brought",
        "hit": "hits hit",
        "beaten": "beats beat",
        "eaten": "eats ate",
        "driven": "drives drove",
        "led": "leads led",
        "paid": "pays paid",
        "caught": "catches caught",
        "won": "wins won",
        "chosen": "chooses chose",
        "forgotten": "forgets forgot",
        "stolen": "steals stole",
        "broken": "breaks broke",
        "hidden": "hides hid",
        "shot": "shoots shot",
        "thrown": "throws threw",
        "fought": "fights fought",
        "loved": "loves loved",
    }.items()
    for w in forms.split()
}
_PRESENT_IRREGULAR = {"sees", "knows", "gives", "takes", "writes", "makes", "finds", "tells", "meets", "leaves"}
_PRESENT_IRREGULAR |= {"buys", "sells", "sends", "builds", "holds", "keeps", "teaches", "brings", "hits", "beats"}
_PRESENT_IRREGULAR |= {"eats", "drives", "leads", "pays", "catches", "wins", "chooses", "forgets", "steals"}
_PRESENT_IRREGULAR |= {"breaks", "hides", "shoots", "throws", "fights", "loves"}


_NOT_PASSIVE = {"is", "was", "has", "had", "does", "goes"}
_PREPOSITIONS = {"in", "at", "on", "to", "for", "from", "with", "into", "of", "about", "by", "near", "under", "over"}


def _participle(verb: str) -> tuple[str, bool] | None:
    """``(past participle, present tense?)`` of a third-person or past verb form, or None (not recognized)."""
    if verb in _IRREGULAR:
        return _IRREGULAR[verb], verb in _PRESENT_IRREGULAR
    if verb.endswith("ed") and len(verb) > 3:
        return verb, False
    if verb.endswith("ies") and len(verb) > 4:
        return verb[:-3] + "ied", True
    if re.search(r"(ch|sh|ss|x|z)es$", verb):
        return verb[:-2] + "ed", True
    if verb.endswith("es") and len(verb) > 3:
        return verb[:-1] + "d", True
    if verb.endswith("s") and not verb.endswith(("ss", "us", "is")) and len(verb) > 3:
        return verb[:-1] + "ed", True
    return None


def passive_voice(label: str) -> str:
    """The inverse voice of a relation label, by rule (the fallback of directional weights, HLGraphRAG section 3,
    when the model wrote none; the paper has the model write them and gives no rule):

    * a passive label ``is/was/are/were <participle> [...] by`` -> its active remainder (``"was pushed by"`` ->
      ``"pushed"``);
    * a label starting with a regular or common irregular verb in the third person or the past ->
      ``is/was <participle> <rest> by`` (``"pushes"`` -> ``"is pushed by"``, ``"pushed into the lake"`` ->
      ``"was pushed into the lake by"``, ``"sells"`` -> ``"is sold by"``);
    * anything else, and a label of several words ending with a preposition (``"sold paintings in"``, whose
      object 2 is not what the verb acted on) -> ``is the object of "<label>" by`` (always correct, if clumsy).

    An empty label is returned unchanged.
    """
    words = label.split()
    if not words:
        return label
    head = words[0].lower()
    if len(words) >= 3 and head in ("is", "was", "are", "were") and words[-1].lower() == "by":
        return " ".join(words[1:-1])
    found = _participle(head)
    if found is None or head in _NOT_PASSIVE or (len(words) > 1 and words[-1].lower() in _PREPOSITIONS):
        return f'is the object of "{label}" by'
    participle, present = found
    return " ".join(["is" if present else "was", participle, *words[1:], "by"])


# -- the extraction pass -----------------------------------------------------------------------------------
def extraction() -> Extraction[NodeRecord]:
    """The extraction pass over chunk nodes (:func:`~gemrag.strategies.hlgraph.prompts.extraction_prompt`)."""
    return Extraction(
        "HLGraph subjects, relations, events",
        lambda node: extraction_prompt(node.text),
        ChunkMemory,
        schema=extraction_schema(),
        max_tokens=EXTRACTION_MAX_TOKENS,
        attempts=ATTEMPTS,
    )


def run_extraction_pass(
    ctx: StrategyContext, chunks: Sequence[NodeRecord], *, titles: bool
) -> tuple[dict[int, ChunkMemory], ExtractionReport]:
    """Extract the chunks that lack an artefact of :data:`~gemrag.strategies.hlgraph.prompts.EXTRACTION_VERSION`
    from this input (``titles``: each chunk's document title and text, ``hlgraph.read_titles``; else the chunk alone,
    as the paper: :func:`~gemrag.strategies.platform.titles.title_version`), then return every chunk's artefact
    (chunk id -> answer; chunks whose extraction failed are absent).

    Raises:
        GemragError: a fatal one (the artefacts committed before it stay).
    """
    version = title_version(ctx, EXTRACTION_VERSION, titles)
    report = extract_artifacts(ctx, chunks, extraction(), strategy=OWNER, kind=KIND, version=version, titles=titles)
    return stored_answers(ctx, chunks, titles=titles), report


def stored_answers(ctx: StrategyContext, chunks: Sequence[NodeRecord], *, titles: bool) -> dict[int, ChunkMemory]:
    """The stored extraction answers of ``chunks`` (chunk id -> answer; chunks without one are absent), with no LLM
    call: what :func:`run_extraction_pass` returns after its pass, and what a removal reassembles the graph from."""
    version = title_version(ctx, EXTRACTION_VERSION, titles)
    return ctx.store.artifacts(OWNER, KIND, ChunkMemory, version, [c.id for c in chunks])


EXTRACTION_TOKENS = 350
"""Typical completion tokens of one extraction answer (an estimate from the 0.5B's COVID-QA builds: 20-23 calls of
25-37 s per question, docs/results.md; the recorded mean replaces it once the memory has answers)."""


def plan_extraction_pass(ctx: StrategyContext, work: PlanWork, *, titles: bool) -> PassPlan:
    """The plan of :func:`run_extraction_pass`: one call per chunk without an artefact (chunks not stored yet
    included, failed ones while retried), on the real prompt, looked up in the LLM cache."""
    version = title_version(ctx, EXTRACTION_VERSION, titles)
    todo = artifact_todo(ctx, work, strategy=OWNER, kind=KIND, version=version, attempts=ATTEMPTS)
    return artifact_pass(work, todo, extraction(), titles=titles, typical_completion=EXTRACTION_TOKENS)[0]


# -- assembly ------------------------------------------------------------------------------------------------
@dataclass
class GraphNode:
    """A node of the AssociationGraph: ``kind`` ``"subject"`` or ``"event"``, its text (the subject's first
    spelling, or the event's sentence) and the chunks it came from."""

    kind: Literal["subject", "event"]
    text: str
    sources: list[int] = field(default_factory=list)


@dataclass
class Fact:
    """A distinct SRQ relation (``kind="relation"``) or CR event (``kind="event"``).

    Attributes:
        object1, object2: node indices (``object2`` -1: an event with one participant).
        label: the forward label (meaning / event). passive: the inverse label. passive_by_rule: True when
            :func:`passive_voice` wrote it. why, time: the event's reason and time frame ("" for relations).
        event_node: the event's node index (-1 for relations). sources: chunk ids stating it.
    """

    kind: Literal["relation", "event"]
    object1: int
    object2: int
    label: str
    passive: str
    passive_by_rule: bool
    why: str = ""
    time: str = ""
    event_node: int = -1
    sources: list[int] = field(default_factory=list)


@dataclass
class Assembly:
    """Every chunk's answer merged: nodes, facts, and how many chunks had an answer."""

    nodes: list[GraphNode]
    facts: list[Fact]
    extracted: int


def _clean(text: str) -> str:
    return " ".join(text.split())[:MAX_ITEM_CHARS]


def strip_object(label: str, object2: str) -> str:
    """``label`` without a trailing repetition of ``object2`` (small models write ``"forgave John"`` with object 2
    ``"John"``, which would read "Selena forgave John John"); unchanged when nothing else would remain."""
    words, tail = label.split(), object2.split()
    n = len(tail)
    if n and len(words) > n and [normalize_entity(w) for w in words[-n:]] == [normalize_entity(w) for w in tail]:
        return " ".join(words[:-n])
    return label


def assemble(
    chunk_ids: Sequence[int],
    answers: Mapping[int, ChunkMemory],
    *,
    routing: bool = True,
    passive: Literal["llm", "rule"] = "llm",
) -> Assembly:
    """Merge the chunks' answers (module docstring) in chunk order.

    Args:
        chunk_ids: the chunks, in order. answers: chunk id -> its extraction (missing: no answer).
        routing: keep the events (CR, default); False keeps the SRQ relations only (the ablation).
        passive: ``"llm"``: the model's passive voice, the rule when it gave none (or repeated the label);
            ``"rule"``: always :func:`passive_voice`.

    Returns:
        The nodes and facts; items with an empty name or label are dropped.
    """
    nodes: list[GraphNode] = []
    index: dict[tuple[str, str], int] = {}
    facts: list[Fact] = []
    fact_index: dict[tuple[str, int, str, int], int] = {}

    def node(kind: Literal["subject", "event"], text: str, chunk: int) -> int:
        key = (kind, normalize_entity(text))
        if key not in index:
            index[key] = len(nodes)
            nodes.append(GraphNode(kind, text))
        i = index[key]
        if chunk not in nodes[i].sources:
            nodes[i].sources.append(chunk)
        return i

    def voice(label: str, given: str) -> tuple[str, bool]:
        given = _clean(given)
        if passive == "llm" and given and normalize_entity(given) != normalize_entity(label):
            return given, False
        return passive_voice(label), True

    def fact(new: Fact, chunk: int) -> Fact:
        key = (new.kind, new.object1, normalize_entity(new.label), new.object2)
        if key not in fact_index:
            fact_index[key] = len(facts)
            facts.append(new)
        kept = facts[fact_index[key]]
        if chunk not in kept.sources:
            kept.sources.append(chunk)
        return kept

    for chunk in chunk_ids:
        answer = answers.get(int(chunk))
        if answer is None:
            continue
        chunk = int(chunk)
        for name in answer.subjects:
            if normalize_entity(_clean(name)):
                node("subject", _clean(name), chunk)
        for r in answer.relations:
            a, b = _clean(r.object1), _clean(r.object2)
            label = strip_object(_clean(r.meaning), b)
            if not (normalize_entity(a) and normalize_entity(label) and normalize_entity(b)):
                continue
            inverse, by_rule = voice(label, r.passive)
            fact(Fact("relation", node("subject", a, chunk), node("subject", b, chunk), label, inverse, by_rule), chunk)
        if not routing:
            continue
        for e in answer.events:
            a, b = _clean(e.object1), _clean(e.object2)
            label = strip_object(_clean(e.event), b)
            if not (normalize_entity(a) and normalize_entity(label)):
                continue
            o1 = node("subject", a, chunk)
            o2 = node("subject", b, chunk) if normalize_entity(b) else -1
            inverse, by_rule = voice(label, e.passive)
            draft = Fact("event", o1, o2, label, inverse, by_rule, _clean(e.why), _clean(e.time))
            kept = fact(draft, chunk)
            if kept.event_node < 0:
                kept.event_node = node("event", event_text(kept, nodes), chunk)
            elif chunk not in nodes[kept.event_node].sources:
                nodes[kept.event_node].sources.append(chunk)
    return Assembly(nodes, facts, sum(1 for c in chunk_ids if int(c) in answers))


# -- sentences --------------------------------------------------------------------------------------------------
def event_text(fact: Fact, nodes: Sequence[GraphNode]) -> str:
    """The event node's text (what it is embedded as): ``"<object 1> <event> [<object 2>]"``."""
    parts = [nodes[fact.object1].text, fact.label]
    if fact.object2 >= 0:
        parts.append(nodes[fact.object2].text)
    return " ".join(parts)


def fact_sentence(
    kind: str,
    object1: str,
    label: str,
    object2: str,
    *,
    passive: str = "",
    why: str = "",
    time: str = "",
    inverse: bool = False,
    directional: bool = True,
) -> str:
    """A fact as the sentence handed to the LLM, read in the direction the traversal crossed it.

    Forward: ``"John pushes Selena."``; reverse with directional weights: ``"Selena was pushed by John."``;
    reverse without them: ``"Selena pushes John."`` (the paper's error case, section 3, kept for the ablation).
    An event adds ``", because <why>"`` and ``" (<time>)"`` when it has them.
    """
    if inverse and object2:
        head = " ".join([object2, passive if directional else label, object1])
    else:
        head = " ".join(p for p in (object1, label, object2) if p)
    if kind == "event" and why:
        head += f", because {why}"
    if kind == "event" and time:
        head += f" ({time})"
    return head.rstrip(".") + "."
