"""An evaluation with a user's worked examples (``[answer] demonstrations_file``) reads the file once: every answer
of the run shows the examples recorded in ``run.json``, even if the file changes during the run, and a resume with
other examples is refused."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from test_eval_factual import covid_file

from fakes import HashEmbedder, ScriptedLLM
from gemrag.config import AnswerSettings, Config
from gemrag.errors import ConfigError
from gemrag.eval.judging.judged import JudgeChoice
from gemrag.eval.protocol import answer_settings_fingerprint
from gemrag.eval.runner import run_eval
from gemrag.models.base import Completion, Message

EXAMPLE = """[[example]]
passages = ["The {place} clinic opens at 8 am on weekdays."]
question = "When does the {place} clinic open?"
phrase = "at 8 am on weekdays"
sentence = "The {place} clinic opens at 8 am on weekdays."
cites = [1]
"""


class Rewriting(ScriptedLLM):
    """Keeps every short answer call's messages; after the first, rewrites the examples file (another clinic)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path, self.asked = path, []  # type: ignore[var-annotated]

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        if str(messages[-1]["content"]).endswith("Short answer:"):
            self.asked.append(list(messages))
            self.path.write_text(EXAMPLE.format(place="Eastside"), encoding="utf-8")
        return super().complete(messages, **kwargs)


def test_a_run_reads_the_examples_once_and_records_them(tmp_path: Path, config: Config) -> None:
    examples = tmp_path / "examples.toml"
    examples.write_text(EXAMPLE.format(place="Northgate"), encoding="utf-8")
    settings = AnswerSettings(demonstrations=True, demonstrations_file=str(examples))
    recorded = answer_settings_fingerprint(settings)  # the digest of the Northgate example
    cfg = config.model_copy(update={"answer": settings})
    out = tmp_path / "out"
    kwargs: dict[str, Any] = {"config": cfg, "budget": 2, "out_dir": out, "embedder": HashEmbedder(), "plots": False}
    llm = Rewriting(examples)
    res = run_eval("covid_qa", covid_file(tmp_path), ["dense"], llm=llm, judge=JudgeChoice("none"), **kwargs)
    assert len(res.records) == 3 and len(llm.asked) == 3
    for messages in llm.asked:  # the file changed after the first answer; every answer shows what was read first
        shown = " ".join(str(m["content"]) for m in messages[1:-1])
        assert "Northgate" in shown and "Eastside" not in shown
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["answer_settings"] == recorded  # the digest of the examples shown, not of the file as it is now
    assert answer_settings_fingerprint(settings) != recorded
    with pytest.raises(ConfigError, match="another configuration"):  # a resume with the Eastside example
        run_eval("covid_qa", covid_file(tmp_path), ["dense"], llm=ScriptedLLM(), judge=JudgeChoice("none"), **kwargs)
