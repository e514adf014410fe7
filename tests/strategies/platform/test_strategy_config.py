"""Per-strategy configuration: a section per strategy, validated by the strategy's own pydantic model, from
the TOML file < ``GEMRAG_<SECTION>__<KEY>`` variables < overrides < ``--set``; strategies receive it when
constructed (also a user strategy defined here, outside the package); clear errors naming section and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel, ConfigDict, Field
from typer.testing import CliRunner

from fakes import HashEmbedder, ScriptedLLM
from gemrag import Memory, cli
from gemrag.config import Config, load_config, parse_sets, parse_value
from gemrag.errors import ConfigError, GemragError
from gemrag.strategies import base
from gemrag.strategies.base import StrategyContext, check_config, get_strategy, register, strategy_config
from gemrag.strategies.baselines.bm25 import BM25Config
from gemrag.strategies.baselines.full import FullConfig
from gemrag.strategies.gem.settings import gem_config
from gemrag.strategies.raptor import strategy as raptor_module
from gemrag.strategies.raptor.strategy import RaptorConfig, RaptorStrategy
from gemrag.types import Hit


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No GEMRAG_* variable or ./gemrag.toml of the developer's leaks in; registrations are undone."""
    for var in list(__import__("os").environ):
        if var.startswith("GEMRAG_"):
            monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    for name in base._BUILTIN:  # registered by importing their modules, which happens once per process
        base.config_model(name)
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))


# -- a strategy written by a user, outside the package ------------------------------------------------------------


class EchoConfig(BaseModel):
    """The user strategy's own settings."""

    model_config = ConfigDict(frozen=True)  # extra keys would be ignored by pydantic: gemrag still rejects them

    top: int = Field(2, ge=1)
    label: str = "echo"
    weights: list[float] = [1.0]


class EchoStrategy:
    """Returns the first ``top`` chunks, their texts prefixed with ``label``."""

    name = "echo_user"

    def __init__(self, config: EchoConfig) -> None:
        self.config = config

    def build(self, ctx: StrategyContext) -> None:
        ctx.state["echo_built_with"] = self.config

    def retrieve(self, ctx: StrategyContext, question: str, budget: int) -> list[Hit]:
        nodes = ctx.store.nodes("chunk")[: self.config.top]
        return [
            Hit(n.id, "chunk", w, f"{self.config.label}: {n.text}", i, {})
            for i, (n, w) in enumerate(zip(nodes, (self.config.weights * len(nodes))[: len(nodes)], strict=True))
        ]

    def report(self, ctx: StrategyContext) -> dict[str, Any]:
        return {"config": self.config.model_dump()}


class CountConfig(BaseModel):
    every: int = 1


class CountStrategy(EchoStrategy):
    """Registered through the class attribute ``config_model`` instead of ``register(..., config=)``."""

    name = "count_user"
    config_model = CountConfig

    def __init__(self, config: CountConfig) -> None:
        self.config = config  # type: ignore[assignment]


def open_memory(path: Path, config: Config, llm: ScriptedLLM | None = None) -> Memory:
    return Memory.open(path, config, llm=llm or ScriptedLLM(), embedder=HashEmbedder())


# -- parsing ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("200", 200),
        ("-3", -3),
        ("0.25", 0.25),
        ("true", True),
        ("false", False),
        ("[1, 2.5]", [1, 2.5]),
        ("{a = 1}", {"a": 1}),
        ('"123"', "123"),
        ("umap", "umap"),
        ("best_first", "best_first"),
        ("two words", "two words"),
        ("2024-01-01", "2024-01-01"),  # a TOML date stays the string given
        ("", ""),
    ],
)
def test_parse_value_has_toml_semantics(text: str, value: Any) -> None:
    parsed = parse_value(text)
    assert parsed == value and type(parsed) is type(value)


def test_parse_sets() -> None:
    got = parse_sets(["raptor.summary_tokens=200", "gem.search=rank", "raptor.threshold = 0.2", "progress=false"])
    assert got == {"raptor": {"summary_tokens": 200, "threshold": 0.2}, "gem": {"search": "rank"}, "progress": False}
    assert parse_sets(["mine.nested.key=x=y"]) == {"mine": {"nested": {"key": "x=y"}}}  # value keeps later '='
    for bad in ["raptor.summary_tokens", "=3", "raptor..x=1", "rap tor.x=1", "raptor.x y=1"]:
        with pytest.raises(ConfigError, match="bad --set"):
            parse_sets([bad])
    with pytest.raises(ConfigError, match="raptor.x"):
        parse_sets(["raptor.x=1", "raptor.x.y=2"])


# -- precedence ------------------------------------------------------------------------------------------------------


def test_strategy_section_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml = tmp_path / "g.toml"
    toml.write_text(
        "[raptor]\nsummary_tokens = 150\nthreshold = 0.2\nmax_layers = 3\ncluster_tokens = 1000\nmax_clusters = 9\n"
    )
    monkeypatch.setenv("GEMRAG_RAPTOR__THRESHOLD", "0.3")
    monkeypatch.setenv("GEMRAG_RAPTOR__MAX_LAYERS", "4")
    monkeypatch.setenv("GEMRAG_RAPTOR__MAX_CLUSTERS", "8")
    cfg = load_config(toml, {"raptor": {"max_clusters": 7, "max_layers": 6}}, ["raptor.max_layers=2"])
    assert cfg.sections["raptor"] == {
        "summary_tokens": 150,
        "threshold": 0.3,
        "max_layers": 2,
        "cluster_tokens": 1000,
        "max_clusters": 7,
    }
    params = get_strategy("raptor", cfg).config  # type: ignore[attr-defined]
    assert isinstance(params, RaptorConfig)
    assert params.summary_tokens == 150  # file only
    assert params.threshold == 0.3  # env beats the file
    assert params.max_clusters == 7  # overrides beat env
    assert params.max_layers == 2  # --set beats overrides, env and the file
    assert params.cluster_tokens == 1000 and params.reduction_dim == 10  # file; default
    # without the file and the variables: defaults
    monkeypatch.delenv("GEMRAG_RAPTOR__THRESHOLD")
    assert get_strategy("raptor", load_config(None, None, ["raptor.max_layers=2"])).config.threshold == 0.1  # type: ignore[attr-defined]
    assert get_strategy("raptor").config == RaptorConfig()  # type: ignore[attr-defined]


def test_set_reaches_typed_sections_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMRAG_MEMORY__BUDGET", "6")
    cfg = load_config(None, {"gem": {"search": "fused"}}, ["memory.budget=9", "gem.search=rank", "llm.n_ctx=8192"])
    assert (cfg.memory.budget, gem_config(cfg).search, cfg.llm.n_ctx) == (9, "rank", 8192)
    assert strategy_config("gem", cfg) == gem_config(cfg)
    assert cfg.sections == {"gem": {"search": "rank"}}  # GEM's section is a strategy section like every other


# -- validation errors -----------------------------------------------------------------------------------------------


def test_validation_errors_name_section_and_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"raptor\.summary_tokens: Input should be greater than or equal to 1"):
        get_strategy("raptor", load_config(None, None, ["raptor.summary_tokens=0"]))
    with pytest.raises(ConfigError, match=r"\[raptor\] has no setting 'summary_tokns'.*summary_tokens"):
        check_config(load_config(None, None, ["raptor.summary_tokns=5"]))
    monkeypatch.setenv("GEMRAG_RAPTOR__THRESHOLD", "high")
    with pytest.raises(ConfigError, match=r"raptor\.threshold: .*'high'"):
        check_config(load_config())
    monkeypatch.delenv("GEMRAG_RAPTOR__THRESHOLD")
    with pytest.raises(ConfigError, match=r"bm25\.method"):
        check_config(load_config(None, None, ["bm25.method=okapi"]))
    with pytest.raises(ConfigError, match=r"\[dense\] has no setting 'top'; .* 'dense' are read_titles"):
        check_config(load_config(None, None, ["dense.top=3"]))  # dense's one setting: whether it reads titles
    # typos outside strategy sections are caught when the file is read
    with pytest.raises(ConfigError, match=r"\[gem\] has no setting 'budgte'"):
        check_config(load_config(None, None, ["gem.budgte=3"]))  # a strategy section, checked like every other
    with pytest.raises(ConfigError, match=r"\[memory\] has no setting 'budgte'"):
        load_config(None, None, ["memory.budgte=3"])
    with pytest.raises(ConfigError, match=r"unknown setting 'progres'"):
        load_config(None, None, ["progres=false"])
    toml = tmp_path / "typo.toml"
    toml.write_text("[raptr]\nsummary_tokens = 200\n")
    cfg = load_config(toml)  # the file layer cannot know user strategies registered later ...
    with pytest.raises(ConfigError, match=r"\[raptr\] section, but no strategy 'raptr' is registered"):
        check_config(cfg)  # ... the registry check can


def test_misspelt_section_fails_when_the_memory_opens(tmp_path: Path) -> None:
    (tmp_path / "typo.toml").write_text("[raptr]\nsummary_tokens = 200\n")
    cfg = load_config(tmp_path / "typo.toml")
    with pytest.raises(ConfigError, match="raptr"):
        open_memory(tmp_path / "mem", cfg)
    with pytest.raises(ConfigError, match=r"raptor\.max_layers"):
        open_memory(tmp_path / "mem", load_config(None, None, ["raptor.max_layers=-1"]))
    default = load_config()
    with open_memory(tmp_path / "mem", default) as mem:  # the failed opens left the memory usable
        assert mem.strategy.name == default.strategy


def test_register_rejects_bad_names_and_models() -> None:
    with pytest.raises(ValueError, match="llm"):
        register("llm")
    with pytest.raises(TypeError, match="pydantic"):
        register("bad_user", config=dict)(EchoStrategy)  # type: ignore[arg-type]


# -- a user strategy receives its section ----------------------------------------------------------------------------


def test_user_strategy_receives_its_section_through_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml = tmp_path / "user.toml"
    toml.write_text('strategy = "echo_user"\n[echo_user]\ntop = 5\nlabel = "from-file"\nweights = [0.5, 0.25]\n')
    cfg = load_config(toml)
    with pytest.raises(ConfigError, match="echo_user"):  # not registered yet: the section is an error
        open_memory(tmp_path / "mem0", cfg)

    register("echo_user", config=EchoConfig)(EchoStrategy)
    monkeypatch.setenv("GEMRAG_ECHO_USER__LABEL", "from-env")
    cfg = load_config(toml, None, ["echo_user.top=3"])
    with open_memory(tmp_path / "mem", cfg) as mem:
        strategy = mem.strategy
        assert isinstance(strategy, EchoStrategy)
        assert strategy.config == EchoConfig(top=3, label="from-env", weights=[0.5, 0.25])
        mem.add_text("First sentence here. " * 40 + "Second part of the text. " * 40, "doc")
        mem.index()
        assert mem.ctx.state["echo_built_with"] is strategy.config
        hits = mem.retrieve("anything")
        assert len(hits) == 3  # top from --set
        assert all(h.text.startswith("from-env: ") for h in hits)  # label from the variable
        assert [h.score for h in hits] == [0.5, 0.25, 0.5]  # weights from the file
        assert mem.stats()["strategy_report"]["config"]["top"] == 3

    # a value the user's model rejects names the section and the field; an unknown key is rejected although
    # the user's model would ignore it
    with pytest.raises(ConfigError, match=r"echo_user\.top: Input should be greater than or equal to 1"):
        open_memory(tmp_path / "mem", load_config(toml, None, ["echo_user.top=0"]))
    with pytest.raises(ConfigError, match=r"\[echo_user\] has no setting 'topp'"):
        open_memory(tmp_path / "mem", load_config(toml, None, ["echo_user.topp=1"]))
    with pytest.raises(ConfigError, match=r"echo_user\.label"):  # TOML semantics: 123 is a number ...
        get_strategy("echo_user", load_config(None, None, ["echo_user.label=123"]))
    quoted = get_strategy("echo_user", load_config(None, None, ['echo_user.label="123"']))  # ... quoted, a string
    assert quoted.config.label == "123"  # type: ignore[attr-defined]


def test_class_attribute_config_model_and_get_strategy_per_name(tmp_path: Path) -> None:
    register("count_user")(CountStrategy)
    cfg = load_config(None, None, ["count_user.every=4"])
    with open_memory(tmp_path / "mem", cfg) as mem:
        counted = mem.get_strategy("count_user")
        assert isinstance(counted, CountStrategy) and counted.config == CountConfig(every=4)
        assert mem.get_strategy("count_user") is counted  # constructed once per memory
    assert get_strategy("count_user").config == CountConfig()  # type: ignore[attr-defined]


# -- built-in strategies ---------------------------------------------------------------------------------------------


def test_builtin_sections_reach_bm25_and_full(tmp_path: Path) -> None:
    cfg = load_config(None, None, ["bm25.k1=1.2", "bm25.b=0.5", "bm25.method=robertson", "full.reserve_tokens=1000"])
    with open_memory(tmp_path / "mem", cfg) as mem:
        bm25 = mem.get_strategy("bm25")
        assert bm25.config == BM25Config(k1=1.2, b=0.5, method="robertson")  # type: ignore[attr-defined]
        full = mem.get_strategy("full")
        assert full.config == FullConfig(reserve_tokens=1000) and full.reserve == 1000  # type: ignore[attr-defined]
        mem.add_text("Alpha beta gamma. " * 200, "doc")
        mem.index(strategy="bm25")
        retriever, _ = bm25._load(mem.ctx)  # type: ignore[attr-defined]
        assert (retriever.k1, retriever.b, retriever.method) == (1.2, 0.5, "robertson")
        assert mem.get_strategy("full").report(mem.ctx)["reserve_tokens"] == 1000
        manifest = mem.store.build_state("bm25")  # the build records bm25's own section, not GEM's
        expected = BM25Config(k1=1.2, b=0.5, method="robertson").model_dump(mode="json")
        assert manifest.params == expected | {"read_titles": True}  # and what it read (its default: titles)


def test_raptor_builds_with_its_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--set`` values reach RAPTOR's build: the clustering arguments, the number of layers and the summaries'
    length. The clustering is replaced by pairs of consecutive nodes (UMAP is slow and tested elsewhere)."""
    seen: list[dict[str, Any]] = []

    def pairs(X: np.ndarray, lengths: Any = None, max_length: Any = None, **kwargs: Any) -> list[np.ndarray]:
        seen.append({"max_length": max_length, **kwargs})
        return [np.arange(i, min(i + 2, len(X))) for i in range(0, len(X), 2)]

    monkeypatch.setattr(raptor_module, "raptor_clusters", pairs)
    sets = [
        "raptor.max_layers=1",
        "raptor.reduction_dim=3",
        "raptor.threshold=0.25",
        "raptor.max_clusters=7",
        "raptor.random_state=5",
        "raptor.summary_tokens=4",
        "raptor.cluster_tokens=600",
    ]
    cfg = load_config(None, {"memory": {"chunk_tokens": 30}, "gem": {"questions": 0, "eigen": 0}}, sets)
    llm = ScriptedLLM()
    with open_memory(tmp_path / "mem", cfg, llm) as mem:
        strategy = mem.get_strategy("raptor")
        assert isinstance(strategy, RaptorStrategy) and strategy.config.max_layers == 1
        mem.add_text(" ".join(f"Sentence number {i} tells about thing {i}." for i in range(80)), "doc")
        mem.index(strategy="raptor")
        n_chunks = len(mem.store.nodes("chunk"))
        assert n_chunks > 8
        assert len(seen) == 1  # max_layers = 1: one layer clustered, though 30+ summaries could be clustered again
        assert {k: seen[0][k] for k in ("dim", "threshold", "max_clusters", "random_state", "max_length")} == {
            "dim": 3,
            "threshold": 0.25,
            "max_clusters": 7,
            "random_state": 5,
            "max_length": 600,
        }
        assert llm.calls == (n_chunks + 1) // 2  # one summary per pair
        summaries = [h for h in mem.retrieve("Sentence number 3", budget=50, strategy="raptor") if h.kind == "summary"]
        assert summaries and all(len(h.text.split()) <= 4 for h in summaries)  # summary_tokens = 4 (the fake LLM
        # writes max_tokens words at most)
        params = mem.store.build_state("raptor").params
        assert params["max_layers"] == 1 and params["cluster_tokens"] == 600 and "questions" not in params


# -- the CLI ---------------------------------------------------------------------------------------------------------


def test_cli_set_reaches_the_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    captured: list[Config] = []

    def fake_open(cls: type[Memory], directory: Any, config: Config | None = None, **kwargs: Any) -> Memory:
        assert config is not None
        captured.append(config)
        check_config(config)
        raise GemragError("stopped by the test")

    monkeypatch.setattr(Memory, "open", classmethod(fake_open))
    (tmp_path / "mem").mkdir()
    (tmp_path / "mem" / "memory.sqlite").write_bytes(b"")
    doc = tmp_path / "doc.txt"
    doc.write_text("Some text to index. Another sentence.")
    monkeypatch.setenv("GEMRAG_RAPTOR__THRESHOLD", "0.3")
    commands = [
        ["index", str(doc), "-q"],
        ["ask", "who?", "--retrieve-only"],
        ["info"],
    ]
    for command in commands:
        args = [*command, "--memory", str(tmp_path / "mem"), "--set", "raptor.summary_tokens=50"]
        result = runner.invoke(cli.app, [*args, "--set", "gem.search=rank"])
        assert result.exit_code == 2 and "stopped by the test" in result.output, result.output
        assert captured[-1].sections["raptor"] == {"summary_tokens": 50, "threshold": 0.3}
        assert gem_config(captured[-1]).search == "rank"
        assert get_strategy("raptor", captured[-1]).config.summary_tokens == 50  # type: ignore[attr-defined]
    # errors are one line, exit code 2, naming the problem
    result = runner.invoke(cli.app, ["info", "--memory", str(tmp_path / "mem"), "--set", "raptr.summary_tokens=5"])
    assert result.exit_code == 2 and "raptr" in result.output and "Traceback" not in result.output
    result = runner.invoke(cli.app, ["ask", "q", "--memory", str(tmp_path / "mem"), "--set", "raptor"])
    assert result.exit_code == 2 and "bad --set" in result.output
    result = runner.invoke(cli.app, ["ask", "q", "--memory", str(tmp_path / "mem"), "--set", "raptor.threshold=2"])
    assert result.exit_code == 2 and "raptor.threshold" in result.output


def test_doctor_checks_strategy_sections_first() -> None:
    """``gemrag doctor --set`` validates every strategy section before touching a model: one line, exit 2."""
    runner = CliRunner()
    result = runner.invoke(cli.app, ["doctor", "--set", "raptor.nope=1"], env={"COLUMNS": "300"})
    assert result.exit_code == 2 and "[raptor] has no setting 'nope'" in result.output, result.output
    result = runner.invoke(cli.app, ["doctor", "--set", "raptor.max_layers=x"], env={"COLUMNS": "300"})
    assert result.exit_code == 2 and "raptor.max_layers" in result.output and "python" not in result.output
