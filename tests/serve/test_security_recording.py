"""Loopback by default, the token for remote use, keys kept out of everything written; recordings the lab reads back."""

from __future__ import annotations

import json
import stat

import anthropic
import httpx2
import pytest

from lab.cli.main import main
from lab.formats import load
from tests.serve.conversation import BIG, anthropic_history

pytestmark = pytest.mark.timeout(60)

KEY = "sk-ant-api03-SECRETSECRETSECRET-abcdef"


def test_non_loopback_host_needs_allow_remote_and_a_token(monkeypatch, capsys):
    monkeypatch.delenv("LAB_SERVE_TOKEN", raising=False)
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    assert "--allow-remote" in capsys.readouterr().err
    assert main(["serve", "--host", "0.0.0.0", "--allow-remote"]) == 2
    assert "LAB_SERVE_TOKEN" in capsys.readouterr().err


def test_token_is_checked_on_every_request_and_never_forwarded(fake, proxy):
    upstream, _ = fake
    url, _ = proxy(token="s3cret-token")
    with httpx2.Client(timeout=20) as http:
        assert http.get(f"{url}/health").status_code == 401
        assert http.get(f"{url}/stats", headers={"x-lab-serve-token": "wrong"}).status_code == 401
        denied = http.post(f"{url}/v1/messages", json={"model": "m", "max_tokens": 5, "messages": anthropic_history(0)})
        assert denied.status_code == 401 and denied.json()["error"]["type"] == "authentication_error"
        assert http.get(f"{url}/health", headers={"x-lab-serve-token": "s3cret-token"}).json()["status"] == "ok"
    assert upstream.received == []
    with anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0, default_headers={"x-lab-serve-token": "s3cret-token"}) as client:
        client.messages.create(model="m", max_tokens=5, messages=anthropic_history(1))
    assert "x-lab-serve-token" not in upstream.received[-1].headers


def test_recording_is_private_keyless_and_read_by_the_lab(fake, proxy, tmp_path):
    upstream, _ = fake
    rec = tmp_path / "rec"
    url, _ = proxy(record=rec)
    with anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0) as client:
        for k in range(4):
            client.messages.create(model="m", max_tokens=5, system="sys", messages=anthropic_history(k))
        with client.messages.stream(model="m", max_tokens=5, system="sys", messages=anthropic_history(4)) as stream:
            stream.get_final_message()
    assert stat.S_IMODE(rec.stat().st_mode) == 0o700
    (log,) = rec.glob("*.jsonl")
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    text = log.read_text()
    assert "SECRET" not in text and '"headers"' not in text
    records = [json.loads(line) for line in text.splitlines()]
    assert len(records) == 5
    last = records[-1]
    assert last["request"]["body"]["messages"] == anthropic_history(4)  # as the agent sent it
    assert BIG(0) not in json.dumps(last["upstream_request"]["body"])  # what went upstream, compacted
    assert last["response"]["status_code"] == 200 and last["response"]["body"]["content"][0]["text"].startswith("reply")  # the stream, assembled
    assert last["usage"]["input_tokens"] > 0
    transcript = load(log)
    assert transcript.meta.source_format == "http_log"
    assert sum(1 for m in transcript.messages if m.role == "assistant") >= 4
    assert not list((tmp_path / "spill").rglob("*toolu*"))


def test_audit_mode_changes_nothing(fake, proxy, tmp_path):
    upstream, _ = fake
    url, server = proxy(mode="audit", record=tmp_path / "rec")
    body = {"model": "m", "max_tokens": 5, "messages": anthropic_history(3)}
    raw = json.dumps(body).encode()
    with httpx2.Client(timeout=20) as http:
        assert http.post(f"{url}/v1/messages", content=raw, headers={"content-type": "application/json"}).status_code == 200
    assert upstream.received[-1].body == raw
    assert server.stats.snapshot()["totals"]["requests"] == 1
    assert len(list((tmp_path / "rec").glob("*.jsonl"))) == 1


def test_lab_replay_reads_a_recording_folder_as_sessions(fake, proxy, tmp_path, capsys):
    rec = tmp_path / "rec"
    url, _ = proxy(record=rec)
    with anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0) as client:
        for k in range(4):
            client.messages.create(model="m", max_tokens=5, messages=anthropic_history(k))
        client.messages.create(model="m", max_tokens=5, messages=anthropic_history(2, task="Another task entirely."))
    assert len(list(rec.glob("*.jsonl"))) == 2  # one file per conversation
    report = tmp_path / "report.json"
    assert main(["replay", str(rec), "--preset", "minicode", "--report", str(report)]) == 0
    assert "2 sessions" in capsys.readouterr().err
    assert report.exists()


def test_the_cli_serves_on_loopback(fake, tmp_path):
    import socket
    import subprocess
    import sys
    import time

    upstream, upstream_url = fake
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = tmp_path / "lab.toml"
    config.write_text('label = "cli-test"\n[spill]\nthreshold = 300\n')
    proc = subprocess.Popen([sys.executable, "-m", "lab", "serve", "--config", str(config), "--port", str(port), "--upstream-anthropic", upstream_url,
                             "--spill-dir", str(tmp_path / "spill"), "--record", str(tmp_path / "rec")], stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        with httpx2.Client(timeout=5) as http:
            while True:
                try:
                    health = http.get(f"{url}/health")
                    break
                except httpx2.TransportError:
                    assert proc.poll() is None and time.monotonic() < deadline, "lab serve did not start"
                    time.sleep(0.1)
            assert health.json()["mode"] == "compact"
            r = http.post(f"{url}/v1/messages", json={"model": "m", "max_tokens": 5, "messages": anthropic_history(2)}, headers={"x-api-key": KEY})
        assert r.status_code == 200 and BIG(1) not in upstream.model_requests()[-1].body.decode()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert "compact mode on http://127.0.0.1" in err and "SECRET" not in err
    assert stat.S_IMODE((tmp_path / "rec").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "spill").stat().st_mode) == 0o700
