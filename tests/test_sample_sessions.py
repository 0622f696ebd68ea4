"""Every file in sample_sessions/ imports through auto-detection; together they cover every format."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab.core.messages import TextBlock, ToolResultBlock, Transcript, message_text
from tests.conftest import SAMPLES

try:
    from lab.formats import detect, load
except ImportError:  # the importers are written in parallel; until they land there is nothing to check
    load = detect = None  # type: ignore[assignment]

needs_formats = pytest.mark.skipif(load is None, reason="lab.formats.load is not importable yet")

FILES = sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.name != "README.md")
CJK = re.compile(r"[\u4e00-\u9fff]")


def _user_texts(t: Transcript) -> list[str]:
    return [b.text for m in t.messages if m.role == "user" for b in m.content if isinstance(b, TextBlock)]


def test_folder_is_small_and_documented() -> None:
    assert sum(p.stat().st_size for p in FILES) < 3_000_000
    readme = (SAMPLES / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in FILES if p.name not in readme]
    assert not missing, f"README.md does not describe {missing}"


@needs_formats
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_loads_with_auto_detection(path: Path) -> None:
    t = load(path)
    assert len(t.messages) >= 1
    assert any(m.role in ("user", "assistant") for m in t.messages)


@needs_formats
def test_every_importer_has_a_sample() -> None:
    found = {detect(p) for p in FILES}
    assert {"lab", "claude_code", "anthropic", "openai_chat", "openai_responses", "openhands", "minicode"} <= found


@needs_formats
def test_html_survives_as_text() -> None:
    t = load(SAMPLES / "claude-code-preview-xss.jsonl")
    first = _user_texts(t)[0]
    assert "<script>alert(1)</script>" in first and "**Preview**" in first and "<details>" in first


@needs_formats
@pytest.mark.parametrize("name", ["anthropic-settings-zh.anthropic.json", "generated-cjk.lab.json"])
def test_cjk_text_survives(name: str) -> None:
    t = load(SAMPLES / name)
    assert any(CJK.search(x) for x in _user_texts(t) + [message_text(m) for m in t.messages if m.role == "assistant"])


@needs_formats
def test_claude_code_sample_keeps_its_sidechain_and_skips_bookkeeping() -> None:
    t = load(SAMPLES / "claude-code-preview-xss.jsonl")
    assert len(t.sidechains) == 1
    assert {"summary", "queue-operation"} <= set(t.notes.skipped)
    errors = [b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock) and b.is_error]
    assert len(errors) == 2


@needs_formats
def test_generated_lab_json_round_trips() -> None:
    from lab.generator import SAMPLE_CONFIGS, generate

    for name, knobs in SAMPLE_CONFIGS.items():
        loaded, made = load(SAMPLES / name), generate(knobs)
        assert loaded.messages == made.messages and loaded.meta.planted_facts == made.meta.planted_facts, name
