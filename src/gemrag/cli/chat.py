"""``gemrag chat``: talk with a character whose long-term memory is a gemrag memory (registered in
:mod:`gemrag.cli.main`).

The session logic is :class:`gemrag.chat.ChatSession`; this module reads lines, prints replies and reports errors.
The options every command that opens a memory shares (``--memory``, ``--config``, ``--set``, the model flags) come
from :mod:`gemrag.cli.options`; its own are declared here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from gemrag.chat import DEFAULT_STRATEGY, ChatSession, check_name
from gemrag.cli.options import (
    NO_MODEL_FLAGS,
    ConfigFile,
    MemoryOpt,
    ModelOptions,
    SetOpt,
    build_config,
    memory_target,
    model_options,
    open_memory,
)
from gemrag.console import cli_errors, err, fail
from gemrag.errors import ConfigError
from gemrag.ingest import read_document
from gemrag.strategies import available

out = Console()

__all__ = ["chat_command"]

QUIT = {"/quit", "/exit"}


@model_options()
def chat_command(
    persona: Annotated[str, typer.Option("--persona", "-p", help="The character's name.")],
    memory: MemoryOpt = None,
    strategy: Annotated[
        str | None, typer.Option("--strategy", "-s", help=f"Retrieval strategy (default {DEFAULT_STRATEGY}).")
    ] = None,
    persona_file: Annotated[
        Path | None, typer.Option("--persona-file", help="A .txt/.md file describing the character (its background).")
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option("--budget", "-b", min=1, help="B: memories recalled per turn (default: the strategy's)."),
    ] = None,
    user: Annotated[str, typer.Option("--user", help="Your name in the stored conversation.")] = "User",
    index_every: Annotated[
        int, typer.Option("--index-every", min=1, help="Index the memory after this many exchanges.")
    ] = 1,
    history: Annotated[int, typer.Option("--history", min=0, help="Recent exchanges shown to the model verbatim.")] = 3,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Longest reply (tokens).")] = 256,
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, help="Sampling temperature.")] = 0.7,
    create: Annotated[
        bool, typer.Option("--create", help="Create the memory directory when it does not exist (an empty memory).")
    ] = False,
    show_memories: Annotated[
        bool, typer.Option("--show-memories", help="Print the memories recalled at each turn (stderr).")
    ] = False,
    config: ConfigFile = None,
    set_: SetOpt = None,
    models: ModelOptions = NO_MODEL_FLAGS,
) -> None:
    """Chat with the character --persona (HLGraphRAG section 4's character chatbot): each message recalls memories
    from --memory with the strategy, the model answers in character, and every exchange is stored in the memory
    as it happens (speakers and turn numbers) and indexed every --index-every exchanges, so the character
    remembers what was said long ago and in earlier sessions. The memory must exist, unless --create. Leave with
    /quit or Ctrl-D; Ctrl-C loses nothing already said. Runs again with the same --persona continue the conversation."""
    name = strategy or DEFAULT_STRATEGY
    for what, given in (("persona", persona), ("user", user)):
        try:
            check_name(what, given)
        except ValueError as exc:
            fail(exc)
    if name not in available():
        fail(ConfigError(f"unknown strategy {name!r}; choose one of {', '.join(available())}"))
    with cli_errors():
        cfg = build_config(config, strategy=name, sets=set_, models=models)
        location = memory_target(
            memory,
            cfg,
            existing=not create,
            hint="index the character's documents into it with `gemrag index`, or pass --create to start empty",
        )
    with cli_errors(resume_hint="run `gemrag chat` again to continue the conversation", also=(ValueError,)):
        description = read_document(persona_file).text if persona_file else ""
        with open_memory(location, cfg, None) as mem:
            session = ChatSession(
                mem,
                persona,
                description=description,
                user=user,
                strategy=name,
                budget=budget,
                index_every=index_every,
                history=history,
                max_tokens=max_tokens,
                temperature=temperature,
            )
            err.print(
                f"chatting with {session.persona} (strategy {session.strategy}, memory {memory}, turn "
                f"{session.next_turn}); /quit or Ctrl-D to leave",
                soft_wrap=True,
            )
            _loop(session, show_memories)
            if session.unindexed:
                err.print(f"indexing the last {session.unindexed} exchange(s)...")
            session.close()


def _loop(session: ChatSession, show_memories: bool) -> None:
    """Read messages until /quit or end of input; reply to each, then index as the session's policy says."""
    while True:
        try:
            line = input(f"{session.user}> ")
        except EOFError:
            out.print()
            return
        message = line.strip()
        if not message:
            continue
        if message in QUIT:
            return
        reply = session.reply(message)
        if show_memories:
            for hit in session.last_hits:
                err.print(Text(f"  [memory {hit.kind} {hit.node_id}] {' '.join(hit.text.split())[:160]}", "dim"))
        out.print(Text.assemble((f"{session.persona}> ", "bold"), reply), soft_wrap=True)
        session.index_pending()
