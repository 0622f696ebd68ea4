"""Stream a Claude-Code-shaped JSONL session of many tiny messages, for the bench's scale section.

Why a second bulk writer: ``generate_jsonl_bytes`` makes realistic turns whose
tool outputs run to kilobytes, so a 30 MB file holds a few thousand messages.
A real session can also be tens of thousands of one-line exchanges (a user
driving the agent step by step, a loop of small commands), and there the
replay's cost per message, not per byte, decides: every request brings only
a few tokens, so the context holds thousands of messages before any window
fills. Each user turn here is a short instruction, then one to three rounds
of a tool call with a one-line result, then a one-line answer. The file is
written as it is made: nothing but the current turn is held in memory.
"""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path

from ..core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from ..errors import ConfigError
from .bulk import _write, claude_code_entries
from .config import DEFAULT_START

__all__ = ["generate_tiny_jsonl", "TINY_COMMANDS"]

# The tool calls a tiny turn makes, with the one-line result each prints; ``{n}`` is the turn number.
TINY_COMMANDS = (
    ("ls src/mod{n}", "a.py b.py"),
    ("wc -l notes/{n}.txt", "{n} notes/{n}.txt"),
    ("git status --short", "M src/mod{n}/a.py"),
    ("grep -c TODO src/mod{n}/a.py", "{n}"),
    ("python -c 'print({n} * 2)'", "{n}"),
)


def generate_tiny_jsonl(path: str | Path, messages: int, seed: int = 0) -> int:
    """Write a session of about ``messages`` tiny messages (at least that many) to ``path``; return them counted.

    Every message is a few words: a user instruction, an assistant ``Bash``
    call, its one-line result, the assistant's one-line answer. The same
    ``seed`` and ``messages`` give the same bytes.
    """
    if messages < 4:
        raise ConfigError(f"messages must be >= 4, got {messages}")
    rng = random.Random(seed)
    common = {"session_id": f"tiny-{seed}-{messages}", "cwd": "/work/tiny", "model": "claude-sonnet-4-5"}
    at = DEFAULT_START
    parent: str | None = None
    written = 0

    def put(message: Message) -> None:
        nonlocal parent, written
        entries = claude_code_entries(message, parent, **common)
        _write(fh, entries)
        parent = entries[-1]["uuid"]
        written += 1

    with open(path, "wb") as fh:
        turn = 0
        while written < messages:
            turn += 1
            at += timedelta(seconds=rng.randint(2, 20))
            put(Message(role="user", id=f"u{turn}", timestamp=at, content=(TextBlock(text=f"step {turn}: check module {turn % 97}"),)))
            for call in range(rng.choice((1, 1, 2, 3))):
                command, output = TINY_COMMANDS[rng.randrange(len(TINY_COMMANDS))]
                tool_id = f"toolu_{turn}_{call}"
                at += timedelta(seconds=rng.randint(1, 5))
                put(Message(role="assistant", id=f"a{turn}_{call}", timestamp=at,
                            content=(ToolUseBlock(id=tool_id, name="Bash", input={"command": command.format(n=turn)}),)))
                put(Message(role="user", id=f"r{turn}_{call}", timestamp=at,
                            content=(ToolResultBlock(tool_use_id=tool_id, content=output.format(n=turn)),)))
            at += timedelta(seconds=rng.randint(1, 5))
            put(Message(role="assistant", id=f"a{turn}", timestamp=at, content=(TextBlock(text=f"module {turn % 97} looks fine"),)))
    return written
