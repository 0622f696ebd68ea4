"""Spill stores: where oversized tool results go, and come back from byte for byte."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["SpillStore"]


@runtime_checkable
class SpillStore(Protocol):
    def write(self, session_id: str, tool_use_id: str, content: str, header: dict) -> str:
        """Store ``content`` atomically; return the path (or memory key) it can be read back from."""
        ...

    def read(self, path: str) -> str: ...

    def exists(self, path: str) -> bool: ...

    def cleanup(self, max_age_seconds: float, now: float | None = None) -> int:
        """Remove sessions older than ``max_age_seconds``; return how many were removed."""
        ...
