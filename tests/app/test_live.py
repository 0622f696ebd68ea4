"""The Live page: lists what ``lab serve --record`` wrote, and opens a recorded session in the other pages."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from lab.serve.recording import Recorder, list_recordings
from tests.app.conftest import APP, no_exception, switch_to
from tests.serve.conversation import anthropic_history

TIMEOUT = 120


def _record(folder: Path, key: str, task: str, requests: int) -> None:
    """A conversation as the proxy records it: the agent's request, what went upstream, the response."""
    recorder = Recorder(folder)
    for k in range(requests):
        body = {"model": "claude-test", "max_tokens": 16, "messages": anthropic_history(k, task=task)}
        reply = {"id": f"msg_{k}", "type": "message", "role": "assistant", "model": "claude-test", "content": [{"type": "text", "text": f"step {k}"}],
                 "stop_reason": "end_turn", "usage": {"input_tokens": 100 + k, "output_tokens": 5}}
        recorder.append(key, {"request": {"timestamp": f"2026-01-01T00:00:{k:02d}Z", "method": "POST", "url": "https://api.anthropic.com/v1/messages", "body": body},
                              "upstream_request": {"body": body, "tokens_agent": 1000 + k, "tokens_upstream": 900 + k},
                              "response": {"timestamp": f"2026-01-01T00:00:{k:02d}Z", "status_code": 200, "body": reply},
                              "usage": reply["usage"], "conversation": key})


def test_list_recordings_reads_counts_and_first_text(tmp_path):
    _record(tmp_path, "aaaa1111", "The first task.", 3)
    _record(tmp_path, "bbbb2222", "The second task.", 2)
    with (tmp_path / "bbbb2222.jsonl").open("a") as fh:
        fh.write('{"request": {"url": "cut off mid-wri')
    listed = {s.path.stem: s for s in list_recordings(tmp_path)}
    assert listed["aaaa1111"].requests == 3 and listed["aaaa1111"].first_text == "The first task."
    assert listed["bbbb2222"].requests == 2 and listed["bbbb2222"].saved == 200
    assert listed["aaaa1111"].api == "anthropic"
    assert list_recordings(tmp_path / "missing") == []


def test_live_page_lists_and_opens_a_recorded_session(tmp_path, monkeypatch):
    folder = tmp_path / "rec"
    _record(folder, "aaaa1111", "The first task.", 3)
    _record(folder, "cccc3333", "Look at the parser.", 4)
    monkeypatch.setenv("LAB_SERVE_RECORD", str(folder))
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.run()
    no_exception(at)
    at = switch_to(at, "live")
    at.toggle(key="lab.live.auto").set_value(False).run()
    no_exception(at)
    table = at.dataframe[0].value
    assert sorted(table["session"]) == ["aaaa1111", "cccc3333"]
    assert dict(zip(table["session"], table["requests"], strict=True)) == {"aaaa1111": 3, "cccc3333": 4}
    at.selectbox(key="lab.live.pick").set_value("cccc3333").run()
    at.button(key="lab.live.open").click().run()
    no_exception(at)
    assert at.session_state["lab.transcript_label"] == "live: cccc3333"
    transcript = at.session_state["lab.transcript"]
    assert transcript.meta.source_format == "http_log"
    assert any("Look at the parser." in str(m.content) for m in transcript.messages)


def test_live_page_without_a_folder_says_what_to_do(monkeypatch):
    monkeypatch.delenv("LAB_SERVE_RECORD", raising=False)
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.run()
    at = switch_to(at, "live")
    assert any("--record" in i.value for i in at.info)
