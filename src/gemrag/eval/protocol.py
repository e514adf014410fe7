"""The answer protocol of an evaluation: the answer form and how LoCoMo's questions are asked.

One frozen value, resolved once from ``run_eval``'s arguments and the dataset's kind, recorded in ``run.json`` (so a
directory answered under another protocol is refused on resume) and read by the runner for every answer:

* ``short``: answers in the form span-answer scorers (EM / token F1) expect
  (:func:`gemrag.answers.prompts.short_answer_prompt`), for ``answer_form="short"``, or ``"auto"`` on the kinds of
  :data:`gemrag.eval.categories.SHORT_ANSWER_KINDS`.
* ``adversarial``: LoCoMo's category-5 questions as a two-option choice (``"options"``) or as written (``"open"``),
  and ``date_hint``: LoCoMo's category-2 questions with its date hint; both as LoCoMo's released evaluation asks
  them (Maharana et al., ACL 2024; :mod:`gemrag.eval.adversarial`). Other kinds: ``"open"`` and no hint.
* ``abstain``: the answer prompt lets the model say the answer is not mentioned
  (:data:`gemrag.answers.prompts.ABSTAIN`), on the kinds of :data:`gemrag.eval.categories.ABSTAIN_KINDS` (LoCoMo)
  by default. LoCoMo's released evaluation (``task_eval/evaluate_gpts.py``, ``QA_PROMPT``) has no such line for
  categories 1-4 and offers "Not mentioned in the conversation" only as category 5's option; ``abstain=False``
  asks as it does (its RAG reader, ``task_eval/dpr_qa.py``, asks "If no information is available ..., write 'No
  information available'", the form kept by default).

How the model reads the context (the ``[answer]`` settings: reading form, shaping, samples, abstention, dates) is
recorded beside the protocol by :func:`answer_settings_fingerprint`, so a directory answered under one reading is
refused on resume under another.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemrag.answers.demonstrations import Demonstration
from gemrag.config import AnswerSettings
from gemrag.errors import ConfigError
from gemrag.eval.adversarial import ADVERSARIAL_MODES, asked_question
from gemrag.eval.categories import ABSTAIN_KINDS, SHORT_ANSWER_KINDS
from gemrag.eval.datasets import Question
from gemrag.memory.asking import examples_of

__all__ = ["ANSWER_FORMS", "AnswerProtocol", "answer_settings_fingerprint", "check_answer_settings"]

ANSWER_FORMS = ("auto", "short", "default")
"""The values of ``answer_form`` (``gemrag eval --answer-form``)."""


@dataclass(frozen=True)
class AnswerProtocol:
    """How an evaluation's questions are asked and its answers formed.

    Attributes:
        short: answer in the short span form (else the default answer prompt).
        adversarial: ``"options"`` or ``"open"`` (LoCoMo category 5; ``"open"`` for other kinds).
        date_hint: append LoCoMo's date hint to category-2 questions (False for other kinds).
        abstain: the answer prompt allows "not mentioned"; None where the option does not apply (a kind outside
            :data:`~gemrag.eval.categories.ABSTAIN_KINDS`, or retrieval only), read as False.
    """

    short: bool = False
    adversarial: str = "open"
    date_hint: bool = False
    abstain: bool | None = None

    @classmethod
    def resolve(
        cls, kind: str, answer: bool, answer_form: str, adversarial: str, date_hint: bool, abstain: bool = True
    ) -> AnswerProtocol:
        """The protocol ``run_eval`` applies to a dataset of ``kind``.

        Args:
            kind: the dataset kind (e.g. ``"locomo"``, ``"musique"``).
            answer: False = retrieval only: nothing is asked, so the protocol is the default one.
            answer_form: one of :data:`ANSWER_FORMS`.
            adversarial: one of :data:`gemrag.eval.adversarial.ADVERSARIAL_MODES`; only LoCoMo's is kept.
            date_hint: only LoCoMo's is kept.
            abstain: only kept on the kinds of :data:`~gemrag.eval.categories.ABSTAIN_KINDS`.

        Raises:
            ConfigError: ``answer_form`` or ``adversarial`` is not one of the known values.
        """
        if answer_form not in ANSWER_FORMS:
            raise ConfigError(f"answer_form must be one of {', '.join(ANSWER_FORMS)}, not {answer_form!r}")
        if adversarial not in ADVERSARIAL_MODES:
            raise ConfigError(f"adversarial must be one of {', '.join(ADVERSARIAL_MODES)}, not {adversarial!r}")
        locomo = answer and kind == "locomo"
        short = answer and (answer_form == "short" or (answer_form == "auto" and kind in SHORT_ANSWER_KINDS))
        declines = abstain if answer and kind in ABSTAIN_KINDS else None
        return cls(short, adversarial if locomo else "open", date_hint and locomo, declines)

    def fingerprint(self) -> dict[str, Any]:
        """The protocol's ``run.json`` keys; each is absent at its old default, so older directories still resume."""
        return {
            **({"answer_form": "short"} if self.short else {}),
            **({"adversarial": "options"} if self.adversarial == "options" else {}),
            **({"date_hint": True} if self.date_hint else {}),
            **({"abstain": False} if self.abstain is False else {}),
        }

    def asked(self, kind: str, question: Question) -> tuple[str, tuple[str, str] | None]:
        """What the answer step asks for ``question`` (retrieval gets the question as written): ``(text, options)``
        from :func:`gemrag.eval.adversarial.asked_question`."""
        return asked_question(kind, question, self.adversarial, self.date_hint)


def answer_settings_fingerprint(
    settings: AnswerSettings, shown: Sequence[Demonstration] | None = None
) -> dict[str, Any]:
    """The ``run.json`` entry ``answer_settings``: the ``[answer]`` settings that decide an evaluation's answers, each
    only when it differs from its default (so a directory answered with the defaults resumes as before the entry
    existed); ``{}`` when all are defaults.

    Kept: ``reading``, ``shape`` (with the ``shape_*`` settings when it is on), ``samples`` (with
    ``sample_temperature`` when above 1), ``option_orders`` (when above 1), ``choice_retrieval``, ``choice_scoring``,
    ``abstain_below``, ``dates`` (with ``date_llm`` when not ``"off"``), ``lists``, ``hypotheticals``, ``repair``,
    ``question_first``, ``demonstrations`` (with ``demonstrations_file`` when set, and ``demonstrations_sha256``, a
    digest of the examples the file holds, so a directory answered with other examples does not resume). ``shown``:
    the worked examples the run shows (its :class:`~gemrag.answers.reading.Reading`'s, read once by
    :func:`gemrag.eval.runner.run_eval`), so the digest is of what was shown; ``None`` reads them now
    (:func:`gemrag.memory.asking.examples_of`). Left out:
    ``cite`` (its own ``run.json`` key, decided with the answer form), ``verify``, ``verify_overlap_words``,
    ``verify_overlap_first`` and ``verify_uncited`` (evaluation runs never verify).

    Raises:
        ConfigError: ``demonstrations_file`` cannot be read as worked examples
            (:func:`gemrag.answers.demonstrations.load_demonstrations`; only when ``shown`` is ``None``).
    """
    default = AnswerSettings()
    keep = ["reading", "shape", "samples", "choice_retrieval", "choice_scoring", "abstain_below", "dates"]
    keep += ["lists", "hypotheticals", "repair", "question_first", "demonstrations"]
    keep += [name for name in type(settings).model_fields if name.startswith("shape_")] if settings.shape else []
    keep += ["sample_temperature"] if settings.samples > 1 else []
    keep += ["option_orders"] if settings.option_orders > 1 else []
    keep += ["date_llm"] if settings.dates != "off" else []
    keep += ["demonstrations_file"]
    entry = {k: getattr(settings, k) for k in keep if getattr(settings, k) != getattr(default, k)}
    if settings.demonstrations and settings.demonstrations_file is not None:
        examples = tuple(examples_of(settings) if shown is None else shown)
        entry["demonstrations_sha256"] = hashlib.sha256(repr(examples).encode()).hexdigest()[:16]
    return entry


def check_answer_settings(out_dir: Path, fingerprint: dict[str, Any]) -> None:
    """Refuse, with the fix, to resume a directory whose ``run.json`` predates the ``answer_settings`` entry when the
    run's ``[answer]`` settings are not the defaults: that directory may have been answered with the defaults.

    Raises:
        ConfigError: ``out_dir/run.json`` has no ``answer_settings`` and ``fingerprint`` has one; the message names
            the entry to add to ``run.json`` if its answers were read with these settings.
    """
    path = out_dir / "run.json"
    wanted = fingerprint.get("answer_settings")
    if not wanted or not path.is_file() or "answer_settings" in json.loads(path.read_text(encoding="utf-8")):
        return
    entry = json.dumps({"answer_settings": wanted})[1:-1]
    raise ConfigError(
        f"{out_dir}/run.json records no [answer] settings (written before they were recorded), so its answers may "
        f"have been read with the defaults; if they were read with these settings, add {entry} to it, "
        "else use another --out directory"
    )
