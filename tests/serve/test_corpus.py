"""A real Claude Code session driven through the proxy request by request: the upstream sees what ``lab replay`` sends.

Each request is the history before one of the session's responses, as its agent sent it (the lab's Anthropic
export of the uncompacted history). Spill file names differ by design (the proxy names files by hashes, never by
the request's ids, and the proxy's stub names the file on disk in full), so they are compared with the folder and the
name's id part masked; everything else must be equal.
"""

from __future__ import annotations

import json
import re

import httpx2
import pytest

from lab.core.config import CompactionConfig
from lab.core.validate import anthropic_problems
from lab.formats import load
from lab.formats.claude.anthropic import request_to_transcript
from lab.formats.export import to_anthropic
from lab.replayer.engine import replay
from lab.replayer.inputs import request_points
from lab.serve import ServeOptions, build_app
from tests.conftest import corpus_file
from lab.serve.fake_upstream import ServerThread

pytestmark = pytest.mark.timeout(300)

SESSION = "claude-code/attio-mcp-server-session.jsonl"
# Time-free stages only: the replay's clock is the transcript's, the proxy's the wall clock.
CONFIG = {"spill": {"threshold": 2000}, "microcompact": {"enabled": False}, "summary": {"enabled": False}}
# The proxy's stub names its spill file in full (a file on disk the agent can read back), the replay's memory store by name.
_SPILL_NAME = re.compile(r"(?:[^\s\"\]]*/)?[A-Za-z0-9_-]+-([0-9a-f]{12})\.txt")


def _masked(value: object) -> str:
    return _SPILL_NAME.sub(r"SPILL-\1.txt", json.dumps(value))


def test_a_corpus_session_through_the_proxy_matches_lab_replay(fake, tmp_path):
    transcript = load(corpus_file(SESSION))
    cfg = CompactionConfig.model_validate(CONFIG)
    points = request_points(transcript.messages)
    report = replay(transcript, cfg, recall=False)
    upstream, upstream_url = fake
    app = build_app(ServeOptions(config=cfg, upstream_anthropic=upstream_url, spill_dir=tmp_path / "spill"))
    with ServerThread(app) as proxy, httpx2.Client(timeout=60) as http:
        for p in points:
            body = {"model": "claude-test", "max_tokens": 16, **to_anthropic(transcript.messages[:p], transcript.tools)}
            r = http.post(f"{proxy.url}/v1/messages", json=body, headers={"x-claude-code-session-id": "corpus-1", "x-api-key": "k"})
            assert r.status_code == 200, r.text
    got = [r.json for r in upstream.model_requests()]
    assert len(got) == len(points) > 10
    for k, body in enumerate(got):
        assert _masked(body["messages"]) == _masked(to_anthropic(report.context_at(k))["messages"]), f"request {k} differs from the replay's"
        assert not anthropic_problems(request_to_transcript(body).messages)
    stats = app.state.lab.stats.snapshot()["totals"]
    assert stats["tokens_upstream"] < stats["tokens_agent"] and stats["resets"] == 0
    assert stats["cache_read_tokens"] > stats["input_tokens"]  # prefix-stable: most of each request is a cache hit
