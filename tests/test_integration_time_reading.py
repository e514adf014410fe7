"""Time-aware reading with the real embedded models (MiniLM ONNX + Qwen2.5-Coder-0.5B GGUF via llama.cpp), through
the command line as a new user would run it: ``gemrag index`` a small dated conversation, then ``gemrag ask`` "when
did ..." with ``[answer] dates = "on"``. The answer must name the absolute date that only the dated context states:
the conversation says "last Sunday" on Thursday 25 May 2023, and 21 May 2023 is written nowhere in it; the answer
carries the year (a date the model writes without it is completed from the dated context). Kept cheap:
the ``dense`` strategy (no LLM call to index) and one answer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gemrag import cli
from realparts import require_small_model

pytestmark = pytest.mark.integration

CONVERSATION = """[1:56 pm on 8 May, 2023] Maria: I went to the farmers market today and bought plums.
[1:56 pm on 8 May, 2023] Tom: Nice, plums are my favourite fruit.

[2:10 pm on 25 May, 2023] Maria: Big news: we adopted a puppy named Biscuit last Sunday!
[2:10 pm on 25 May, 2023] Tom: Congratulations! What breed is Biscuit?
[2:10 pm on 25 May, 2023] Maria: Biscuit is a beagle, and he loves the garden.
"""
CONFIG = """strategy = "dense"

[llm]
model = "qwen2.5-coder-0.5b"
n_ctx = 2048

[answer]
dates = "on"
"""
#: 21 May 2023 in the forms a model writes a date.
ADOPTED = re.compile(r"\b21(?:st)?\s+(?:of\s+)?May\b|\bMay\s+21(?:st)?\b|\b2023-05-21\b", re.IGNORECASE)


def test_gemrag_ask_answers_when_with_the_absolute_date_of_the_dated_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_small_model()
    for var in list(__import__("os").environ):
        if var.startswith("GEMRAG_"):
            monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    Path("chat.txt").write_text(CONVERSATION, encoding="utf-8")
    Path("gemrag.toml").write_text(CONFIG, encoding="utf-8")
    assert not ADOPTED.search(CONVERSATION)  # the date is not in the text: only time-aware reading can give it
    runner = CliRunner()
    indexed = runner.invoke(cli.app, ["index", "chat.txt", "--memory", "mem", "-q"])
    assert indexed.exit_code == 0, indexed.output
    asked = runner.invoke(cli.app, ["ask", "On what date did Maria adopt Biscuit?", "--memory", "mem", "--json"])
    assert asked.exit_code == 0, asked.output
    payload = json.loads(asked.stdout)
    contexts = [h["text"] for h in payload["context"]]
    assert any("last Sunday (= 21 May 2023)" in t for t in contexts), contexts
    assert ADOPTED.search(payload["answer"]), payload["answer"]
    assert "2023" in payload["answer"], payload["answer"]  # the year: the model's, or completed from the context
