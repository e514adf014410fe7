"""A-Mem's LoCoMo answer scoring, to set gemrag's answers beside A-Mem's published table.

Xu et al., "A-MEM: Agentic Memory for LLM Agents" (arXiv 2502.12110, NeurIPS 2025), Table 1, reports F1 per LoCoMo
category computed by its released evaluation code (``utils.py``: ``simple_tokenize`` and ``calculate_metrics``), not
by LoCoMo's official scorer (:mod:`gemrag.eval.locomo_scoring`). The differences:

* tokens: the text lower-cased, only ``.`` ``,`` ``!`` ``?`` replaced by spaces, split at whitespace; no Porter
  stemming, no removal of "a"/"an"/"the"/"and", every other punctuation mark (``'`` ``"`` ``:`` ``-`` ``;``) kept
  inside its token;
* F1 over token *sets* (a repeated token counts once), not over multisets;
* no rule per category: a category-1 answer is not split at commas, a category-3 gold is not cut at ``;``;
* an empty prediction or reference scores 0;
* the reference of a category-5 (adversarial) question is the dataset's ``adversarial_answer``.

Category 5 caveat: ``adversarial_answer`` is LoCoMo's *trap* answer, the wrong option of the two A-Mem offers
("Not mentioned in the conversation" or the trap). For "What did Caroline realize after her charity race?" the trap
is "self-care is important", though it was Melanie who ran the race: repeating the trap scores 100, declining
scores 0. A-Mem's category-5 F1 therefore rewards choosing the wrong option and runs opposite to LoCoMo's own rule
(correct iff the answer declines). It is reported beside A-Mem's figure for completeness, never compared as
"better".
"""

from __future__ import annotations

from gemrag.eval.datasets import Question

__all__ = ["amem_f1", "amem_reference", "amem_tokens"]

_SPACED = str.maketrans(dict.fromkeys(".,!?", " "))


def amem_tokens(text: str) -> set[str]:
    """A-Mem's token set of ``text``: lower case, ``. , ! ?`` replaced by spaces, split at whitespace."""
    return set(text.lower().translate(_SPACED).split())


def amem_f1(prediction: str, reference: str) -> float:
    """A-Mem's answer F1 (its ``calculate_metrics``): F1 between the token sets of :func:`amem_tokens`.

    Args:
        prediction: the model's answer.
        reference: the gold text, :func:`amem_reference` for a LoCoMo question.

    Returns:
        F1 in [0, 1]; 0 when either side has no token or they share none.
    """
    pred, ref = amem_tokens(prediction), amem_tokens(reference)
    common = len(pred & ref)
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def amem_reference(question: Question) -> str:
    """The text A-Mem scores a LoCoMo question's answer against (its loader's ``QA.final_answer``).

    Category 5: the dataset's trap answer (``metadata["adversarial_answer"]``, the wrong option; see the module
    notes), also for the few category-5 questions that carry an ``answer`` as well. Any other category: the
    question's ``answer``; LoCoMo gives one answer per question, so this is its first and only gold text.

    Returns:
        The reference, ``""`` when the question has none (A-Mem then scores 0). The loader keeps a category-5
        question's ``answer`` as its trap when ``adversarial_answer`` is missing (every category-5 question of
        LoCoMo's released file has one).
    """
    if question.category == "5":
        return str(question.metadata.get("adversarial_answer") or "")
    return question.answer or ""
