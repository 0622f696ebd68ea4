"""A fake upstream and the proxy in front of it, both on 127.0.0.1 at free ports, started per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.core.config import CompactionConfig
from lab.serve import ServeOptions, build_app
from lab.serve.fake_upstream import FakeUpstream, ServerThread

# Spills any tool result over 300 characters; nothing else fires on short test conversations.
SPILL_CONFIG = {"spill": {"enabled": True, "threshold": 300}, "microcompact": {"enabled": False}}


@pytest.fixture
def fake() -> Iterator[tuple[FakeUpstream, str]]:
    upstream = FakeUpstream()
    with ServerThread(upstream.app()) as server:
        yield upstream, server.url


Proxy = Callable[..., tuple[str, Any]]


@pytest.fixture
def proxy(fake: tuple[FakeUpstream, str], tmp_path: Path) -> Iterator[Proxy]:
    """``proxy(**options)``: the proxy's URL and its server state, in front of ``fake``; stopped after the test."""
    started: list[ServerThread] = []

    def start(config: dict[str, Any] | None = None, **options: Any) -> tuple[str, Any]:
        cfg = CompactionConfig.model_validate(SPILL_CONFIG if config is None else config)
        options.setdefault("spill_dir", tmp_path / "spill")
        app = build_app(ServeOptions(config=cfg, upstream_anthropic=fake[1], upstream_openai=fake[1], **options))
        server = ServerThread(app)
        server.__enter__()
        started.append(server)
        return server.url, app.state.lab

    yield start
    for server in started:
        server.__exit__()
