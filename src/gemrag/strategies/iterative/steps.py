"""The steps of one iterative retrieval: IRCoT's loop and self-ask's decomposition (RankGPT's rerank of step 1:
:mod:`~gemrag.strategies.iterative.rerank`).

A :class:`Search` holds what one question's retrieval spends and records: the base strategy's retrievals, the LLM
passes counted against ``max_steps``, the failures, and the trace (the JSON-ready account the hits carry in
``meta["trace"]`` and ``gemrag eval`` stores per question).

The call budget, per question (``[iterative] max_steps``, below ``M``):

* ``"ircot"``: at most M next-query passes, so at most M + 1 retrievals (the question, then one per query written);
  a pass that says "enough", writes an empty query or one already searched ends the loop, except that "enough" is
  not trusted in the first ``min_steps`` passes (``[iterative] min_steps``, default 1): the pass's query, or its
  thought when it wrote none, is retrieved instead, as IRCoT retrieves with each chain-of-thought sentence. With
  ``[iterative] chain = "grow"`` (default) each pass also reads the thoughts written before it (IRCoT's chain).
* ``"decompose"``: one decomposition pass into at most M + 1 sub-questions, and one sub-answer pass per earlier
  answer a later sub-question refers to (``#k``), all together at most M passes: with M = 2, the decomposition and
  one sub-answer. A reference the budget cannot pay for (or whose pass failed) is filled with the text of sub-question
  k itself, so the retrieval still sees that hop's question (recorded as ``unfilled``); an answer whose pass failed
  is not asked again (each later reference to it is left unfilled). M = 0 makes no call.
* ``rerank = true`` adds one pass per rerank window (the rerank of step 1; one window when ``rerank_depth <=
  rerank_window``), not counted in M.

A pass is one structured request; with ``attempts`` > 1 a malformed answer is asked again (each attempt one model
call in the usage meter, which ``gemrag eval`` counts as ``llm_calls``). A base strategy that spends LLM calls on
every retrieval (``remem``'s recognition filter) spends them on every step. The question's own retrieval is always
step 1 (in ``"decompose"`` too: a bad decomposition cannot lose the base's ranking).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from gemrag.store import NodeRecord
from gemrag.strategies.base import Strategy, StrategyContext
from gemrag.strategies.iterative import passes
from gemrag.strategies.iterative.merge import Step
from gemrag.strategies.platform.composite import hit_key, unique_hits
from gemrag.strategies.platform.titles import indexed_text_of, memory_titles
from gemrag.types import Hit

FollowUp = Literal["always", "needed"]
"""Decompose mode: whether one sub-question is retrieved (``"always"``) or means no follow-up (``"needed"``)."""

Chain = Literal["grow", "queries"]
"""What IRCoT's reasoning step reads besides the question and passages: ``"grow"``, the thoughts so far and the
searches made; ``"queries"``, the searches made only (:func:`ircot`)."""


def _norm(text: str) -> str:
    return " ".join(text.lower().split()).rstrip("?. ")


@dataclass
class Search:
    """One question's iterative retrieval: its base, its settings, what it spent and what it recorded.

    Attributes:
        ctx: the strategy context (the cached, metered LLM; the store for the passages' indexed texts).
        base: the base strategy.
        depth: hits asked of the base per retrieval (>= the budget, ``read`` and the rerank depth).
        read: passages of each step the LLM reads (the top ``read`` of the step's list).
        max_calls: ``max_steps``, the passes the mode may spend.
        attempts: attempts per pass (a malformed answer is asked again ``attempts - 1`` times).
        min_calls: ``min_steps``, the first passes whose "enough" is not trusted (IRCoT mode).
        calls: passes spent against ``max_calls`` so far; ``rerank_calls``: the rerank's (0 or 1).
        failures: ``[{"pass", "step", "error"}]`` of the passes that gave no usable answer.
        trace: what the mode recorded besides steps, calls and failures (``stop``, sub-questions, answers ...).
    """

    ctx: StrategyContext
    base: Strategy
    depth: int
    read: int
    max_calls: int
    attempts: int = 1
    min_calls: int = 0
    calls: int = 0
    rerank_calls: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    trace: dict[str, Any] = field(default_factory=dict)
    _retrieved: dict[str, list[Hit]] = field(default_factory=dict)
    _text_of: Callable[[NodeRecord], str] | None = None

    def retrieve(self, query: str) -> list[Hit]:
        """The base's top ``depth`` for ``query``, a node once; a query searched before in this question (same
        words, case and final punctuation aside) reuses that list without asking the base again."""
        key = _norm(query)
        if key not in self._retrieved:
            self._retrieved[key] = unique_hits(self.base.retrieve(self.ctx, query, self.depth))
        return self._retrieved[key]

    def reuse(self, query: str, hits: list[Hit]) -> None:
        """Make ``hits`` what :meth:`retrieve` returns for ``query`` from now on in this question (the rerank's
        reordered list replaces the base's, so a step that searches the question again reads the rerank's order)."""
        self._retrieved[_norm(query)] = hits

    def texts(self, hits: list[Hit]) -> list[str]:
        """What the LLM reads of ``hits``: a chunk's indexed text (its document's title, a newline, its text, when
        the memory has titles, as before titles were chosen per strategy:
        :func:`~gemrag.strategies.platform.titles.indexed_text_of`), else the hit's text."""
        if self._text_of is None:
            self._text_of = indexed_text_of(self.ctx, titles=memory_titles(self.ctx.store))
        ids = [h.node_id for h in hits if h.kind == "chunk"]
        nodes = self.ctx.store.nodes_by_id(ids) if ids else {}
        return [self._text_of(nodes[h.node_id]) if h.kind == "chunk" and h.node_id in nodes else h.text for h in hits]

    def spend(self) -> bool:
        """Take one pass from the budget: True if one was left."""
        if self.calls >= self.max_calls:
            return False
        self.calls += 1
        return True

    def fail(self, name: str, step: int, error: str | None) -> None:
        """Record that pass ``name`` at step ``step`` (1-based) gave no usable answer."""
        self.failures.append({"pass": name, "step": step, "error": error or "no answer"})


def ircot(search: Search, question: str, first: Step, chain: Chain = "grow") -> list[Step]:
    """IRCoT's loop (Trivedi et al. 2023, section 3): the LLM reads the passages so far and writes the next query,
    or says they are enough; each query is retrieved and its top ``read`` passages join what the LLM reads.

    ``chain``: ``"grow"`` (default) shows each pass the thoughts of the passes before it, the chain of thought so
    far, as IRCoT's reasoning step reads it (section 3; HippoRAG's re-implementation, ``qa_utils.py:reason_step``,
    appends the earlier thoughts after ``Thought:``); ``"queries"``, the earlier form, shows the searches made and
    not the thoughts (with it the 1.5B ended 67 to 76 of 100 loops on a query it had already searched).

    Stops (``trace["stop"]``): ``"enough"``, ``"repeat"`` (an empty query or one already searched), ``"failure"``
    (the pass gave no usable answer), ``"max_steps"`` (the budget is spent). "Enough" said in one of the first
    ``search.min_calls`` passes does not stop the loop: the pass's query (its thought when the query is empty) is
    retrieved, as IRCoT retrieves with every chain-of-thought sentence (section 3), and ``trace["overruled"]``
    counts such passes. The 0.5B said "enough" after its first read in 29 of 30 MuSiQue questions.

    Returns:
        The steps, ``first`` first.
    """
    steps = [first]
    read = unique_hits(first.hits[: search.read])
    search.trace["stop"] = "max_steps"
    while search.spend():
        thoughts = [str(s.info.get("thought", "")) for s in steps[1:]] if chain == "grow" else []
        answer, error = passes.next_query(
            search.ctx, question, search.texts(read), [s.query for s in steps], search.attempts, thoughts
        )
        if answer is None:
            search.fail("next_query", len(steps) + 1, error)
            search.trace["stop"] = "failure"
            break
        query = answer.query
        if answer.enough and search.calls <= search.min_calls:
            query = answer.query.strip() or answer.thought.strip()
            search.trace["overruled"] = search.trace.get("overruled", 0) + 1
        elif answer.enough:
            search.trace.update(stop="enough", thought=answer.thought)
            break
        if not query or _norm(query) in {_norm(s.query) for s in steps}:
            search.trace.update(stop="repeat", thought=answer.thought, repeated=query)
            break
        hits = search.retrieve(query)
        steps.append(Step(query, hits, {"thought": answer.thought}))
        read = unique_hits(read + hits[: search.read])
    return steps


def decompose(search: Search, question: str, first: Step, follow_up: FollowUp = "always") -> list[Step]:
    """Self-ask (Press et al. 2023, section 3) with the decomposition written up front: the LLM splits the question
    into at most ``max_calls + 1`` sub-questions; each is retrieved in order, its ``#k`` filled with the answer the
    LLM reads from sub-question k's passages (one pass per answer, within the budget; module docstring). A pass
    that failed is not repeated: the next reference to that answer would get the same prompt, hence the LLM cache's
    same failure, and spend a pass another answer could use.

    With ``follow_up = "needed"`` a decomposition of one sub-question asks no follow-up (self-ask's "Are follow up
    questions needed here: No"): nothing more is retrieved, the question's own retrieval is the context.

    ``trace``: ``subquestions`` (as written), ``answers`` (``{k: answer}``), ``stop`` (``"done"``, ``"failure"``
    when the decomposition failed, ``"max_steps"`` when the budget was 0, ``"no_follow_up"`` for one sub-question
    under ``follow_up = "needed"``).

    Returns:
        The steps: ``first`` (the question), then one per sub-question (``info``: ``subquestion`` as written,
        ``unfilled``: the references filled with a sub-question's text instead of its answer).
    """
    steps = [first]
    if not search.spend():
        search.trace["stop"] = "max_steps"
        return steps
    subquestions, error = passes.decompose(search.ctx, question, search.max_calls + 1, search.attempts)
    if subquestions is None:
        search.fail("decompose", 2, error)
        search.trace["stop"] = "failure"
        return steps
    answers: dict[int, str] = {}
    failed: set[int] = set()  # sub-questions whose answer pass failed: not asked again
    search.trace.update(subquestions=subquestions, answers=answers, stop="done")
    if follow_up == "needed" and len(subquestions) == 1:
        search.trace["stop"] = "no_follow_up"
        return steps
    queries: dict[int, str] = {}  # sub-question number -> the text retrieved
    for i, written in enumerate(subquestions, start=1):
        refs = [k for k in passes.references(written) if 1 <= k < i]
        for k in refs:
            if k not in answers and k not in failed and search.spend():
                answer, error = passes.sub_answer(
                    search.ctx, queries[k], search.texts(steps[k].hits[: search.read]), search.attempts
                )
                if answer is None:
                    search.fail("sub_answer", k + 1, error)
                    failed.add(k)
                else:
                    answers[k] = answer
        unfilled = [k for k in refs if k not in answers]
        queries[i] = passes.fill(written, {k: answers.get(k, queries[k]) for k in refs})
        info: dict[str, object] = {"subquestion": written}
        if unfilled:
            info["unfilled"] = unfilled
        steps.append(Step(queries[i], search.retrieve(queries[i]), info))
    return steps


def step_records(steps: list[Step]) -> list[dict[str, Any]]:
    """The steps as the trace records them: ``{"step", "query", "hits": [node ids, best first], **info}``."""
    return [
        {"step": n, "query": s.query, "hits": [hit_key(h)[1] for h in s.hits], **s.info}
        for n, s in enumerate(steps, start=1)
    ]
