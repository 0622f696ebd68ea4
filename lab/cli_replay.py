"""Replay and compare subcommands (filled in by the replay engine)."""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["add_replay_commands"]


def add_replay_commands(add: Callable[..., Any]) -> None:
    return None
