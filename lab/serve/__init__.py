"""``lab serve``: an exported config running live between an agent and its model API.

The agent (Claude Code, Codex CLI, any OpenAI-compatible client) points its
base URL at the proxy; each request's history goes through the conversation's
``Compactor`` (``conversations``), then upstream, and the answer comes back as
it arrives (``app``). Audit mode changes nothing and records (``recording``),
in the HTTP-log shape ``lab replay``, ``compare`` and ``sweep`` read.

This package sits above the core: ``lab.core`` never imports Starlette,
uvicorn or httpx2. Needs the ``serve`` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover
    from .app import DEFAULT_MAX_BODY, ServeOptions, build_app, listen_socket

__all__ = ["ServeOptions", "build_app", "listen_socket", "DEFAULT_MAX_BODY"]


# Loaded on first use: the Live page reads recordings (``recording``) without the web stack.
__getattr__, __dir__ = lazy_exports(__name__, dict.fromkeys(__all__, ".app"), globals())
