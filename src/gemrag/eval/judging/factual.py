"""An LLM-judged factual-correctness score of a free-form answer against the reference answer.

UnWeaver's paper (section 3, "Experimental Results", Table 1) scores its answers by "Factual Correctness (F1) from
RAGAS" (Es et al., 2025), averaged over the questions and over 5 runs. RAGAS defines it (``FactualCorrectness``,
``mode="f1"``) as natural-language inference over claims:

1. the answer is decomposed into claims, and each is checked against the reference: TP = answer claims the
   reference supports, FP = answer claims it does not;
2. the reference is decomposed into claims, and each is checked against the answer: FN = reference claims the
   answer does not support;
3. precision = TP / (TP + FP), recall = TP / (TP + FN), F1 = 2PR / (P + R) (0 when P = R = 0) —
   :func:`claim_scores`.

This module is our own implementation with our own prompts, not the ``ragas`` package: ragas 0.4 depends on
langchain, langchain-community, datasets, instructor and tiktoken (whose encodings download at run time, which this
project's offline evaluations cannot do), it calls the model asynchronously through its own clients (so its calls
would bypass gemrag's LLM cache and usage meter), and it does not run on the embedded llama.cpp model. Two
deviations, both because our span-answer form (``--answer-form short``) gives answers of a few words: the
decomposition prompt shows the question (a bare "14 days" is no claim; "the incubation period is 14 days" is), and
an empty answer scores 0 without a model call (RAGAS refuses an empty response).

Every call is greedy (temperature 0 on the first attempt), structured (JSON schema) and, through the caller's
cached LLM, made once: re-running an evaluation costs nothing. A malformed reply is repaired or retried
(:func:`gemrag.models.structured.complete_structured`, 3 attempts) and then the answer is *unjudged* (score None,
the error kept): it never stops a run. A verification whose verdict list does not have one verdict per claim is
malformed too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pydantic import BaseModel

from gemrag.errors import GemragError, is_fatal
from gemrag.models.base import LLM, Message
from gemrag.models.structured import complete_structured

__all__ = ["CORRECT_AT", "ClaimScores", "FactualJudge", "FactualJudgement", "claim_scores"]

#: Claims per text at most (a span answer holds one or two; a reference sentence a few).
MAX_CLAIMS = 8
#: Completion limits (tokens): a claim list of up to :data:`MAX_CLAIMS` short sentences; a verdict list.
CLAIMS_MAX_TOKENS = 256
VERDICTS_MAX_TOKENS = 64
#: An answer is counted *correct* (the binary verdict compared with hand labels) when its F1 is at least this.
CORRECT_AT = 0.5


@dataclass(frozen=True)
class ClaimScores:
    """Claim counts and RAGAS's scores: ``tp``, ``fp``, ``fn`` (claims) and ``precision``, ``recall``, ``f1``
    (in [0, 1])."""

    tp: int
    fp: int
    fn: int
    precision: float
    recall: float
    f1: float


def claim_scores(answer_supported: list[bool], reference_supported: list[bool]) -> ClaimScores:
    """RAGAS FactualCorrectness from the verdicts (Es et al., 2025; UnWeaver section 3 uses its F1).

    Args:
        answer_supported: per claim of the answer, whether the reference supports it (TP if so, else FP).
        reference_supported: per claim of the reference, whether the answer supports it (FN if not).

    Returns:
        :class:`ClaimScores`; precision (recall) is 0 when the answer (reference) has no claim, F1 is 0 when both
        precision and recall are 0, as RAGAS's ``fbeta_score`` with beta = 1.
    """
    tp = sum(answer_supported)
    fp = len(answer_supported) - tp
    fn = len(reference_supported) - sum(reference_supported)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return ClaimScores(tp, fp, fn, precision, recall, f1)


class Claims(BaseModel):
    """The decomposition's output: short standalone claims."""

    claims: list[str]


class Verdicts(BaseModel):
    """The verification's output: one verdict per claim, in order."""

    verdicts: list[bool]


def _claims_schema() -> dict[str, Any]:
    item = {"type": "string"}
    claims = {"type": "array", "items": item, "minItems": 1, "maxItems": MAX_CLAIMS}
    return {"type": "object", "properties": {"claims": claims}, "required": ["claims"]}


def _verdicts_schema(n: int) -> dict[str, Any]:
    verdicts = {"type": "array", "items": {"type": "boolean"}, "minItems": n, "maxItems": n}
    return {"type": "object", "properties": {"verdicts": verdicts}, "required": ["verdicts"]}


def claims_prompt(question: str, text: str) -> list[Message]:
    """The decomposition prompt: ``text`` (an answer to ``question``) as a list of standalone claims."""
    system = (
        "You split an answer into the facts it states. Each claim is one short, standalone sentence that can be "
        "checked on its own: repeat the subject the question asks about instead of pronouns or fragments. Do not "
        "add facts the answer does not state. Reply with JSON only."
    )
    user = (
        f"Question: {question}\nAnswer: {text}\n\n"
        f'List the claims of the answer (at most {MAX_CLAIMS}) as JSON: {{"claims": ["...", "..."]}}'
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def verdicts_prompt(premise: str, claims: list[str]) -> list[Message]:
    """The verification prompt: does ``premise`` support each of ``claims``? (natural-language inference)."""
    system = (
        "You check claims against a text. A claim is supported (true) only if the text states it or it follows "
        "directly from the text; otherwise (contradicted, or not stated) it is false. Reply with JSON only."
    )
    numbered = "\n".join(f"{i}. {c}" for i, c in enumerate(claims, 1))
    user = (
        f"Text: {premise}\n\nClaims:\n{numbered}\n\n"
        f"For each of the {len(claims)} claims, in order, is it supported by the text? "
        f'JSON: {{"verdicts": [true, false, ...]}} with exactly {len(claims)} values.'
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


@dataclass(frozen=True)
class FactualJudgement:
    """One answer judged: ``f1`` (the score, in [0, 1]; None = unjudged, ``error`` says why), ``precision``,
    ``recall``, ``tp``, ``fp``, ``fn`` (claims), and the claims of each side."""

    f1: float | None
    precision: float | None = None
    recall: float | None = None
    tp: int | None = None
    fp: int | None = None
    fn: int | None = None
    answer_claims: tuple[str, ...] = ()
    reference_claims: tuple[str, ...] = ()
    error: str | None = None

    def as_record(self) -> dict[str, Any]:
        """JSON-ready fields (claims as lists)."""
        out = asdict(self)
        out["answer_claims"], out["reference_claims"] = list(self.answer_claims), list(self.reference_claims)
        return out


class FactualJudge:
    """Scores answers by RAGAS-style factual correctness (see the module docstring).

    Args:
        llm: the judging model (wrap it in the memory's cache: :class:`gemrag.models.cache.CachedLLM`).
        attempts: attempts per structured call before the answer is unjudged (>= 1).
    """

    def __init__(self, llm: LLM, attempts: int = 3) -> None:
        self.llm = llm
        self.attempts = max(1, attempts)

    def _claims(self, question: str, text: str) -> list[str]:
        out = complete_structured(
            self.llm,
            claims_prompt(question, text),
            Claims,
            schema=_claims_schema(),
            max_tokens=CLAIMS_MAX_TOKENS,
            attempts=self.attempts,
        )
        claims = [" ".join(c.split()) for c in out.claims]
        return list(dict.fromkeys(c for c in claims if c))[:MAX_CLAIMS]

    def _supported(self, premise: str, claims: list[str]) -> list[bool]:
        if not claims:
            return []
        out = complete_structured(
            self.llm,
            verdicts_prompt(premise, claims),
            Verdicts,
            schema=_verdicts_schema(len(claims)),
            max_tokens=VERDICTS_MAX_TOKENS,
            attempts=self.attempts,
        )
        if len(out.verdicts) != len(claims):
            raise _Malformed(f"{len(out.verdicts)} verdicts for {len(claims)} claims")
        return list(out.verdicts)

    def score(self, question: str, answer: str, reference: str) -> FactualJudgement:
        """Judge ``answer`` (to ``question``) against ``reference``: four calls (decompose and verify each side).

        Returns:
            :class:`FactualJudgement`; an empty answer scores 0 (no claim) without a call; an empty reference or a
            malformed judge reply (after the retries) gives an unjudged one (``f1`` None, ``error`` set).

        Raises:
            GemragError: a fatal backend error only (:func:`gemrag.errors.is_fatal`).
        """
        if not reference.strip():
            return FactualJudgement(None, error="no reference answer")
        if not answer.strip():
            return FactualJudgement(0.0, 0.0, 0.0, 0, 0, 0)
        try:
            answer_claims = self._claims(question, answer)
            reference_claims = self._claims(question, reference)
            scores = claim_scores(self._supported(reference, answer_claims), self._supported(answer, reference_claims))
        except GemragError as exc:
            if is_fatal(exc):
                raise
            return FactualJudgement(None, error=f"{type(exc).__name__}: {exc}"[:300])
        except _Malformed as exc:
            return FactualJudgement(None, error=f"malformed verdicts: {exc}")
        return FactualJudgement(
            scores.f1,
            scores.precision,
            scores.recall,
            scores.tp,
            scores.fp,
            scores.fn,
            tuple(answer_claims),
            tuple(reference_claims),
        )


class _Malformed(Exception):
    """A structurally valid judge reply that does not fit the question (e.g. a verdict count)."""
