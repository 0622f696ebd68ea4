"""Shared fixtures: the real corpus, and user paths pointed at tmp dirs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest_plugins = ["tests.fake_provider_fixture"]

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CORPUS = (ROOT.parent / "shared" / "corpus").resolve()
CORPUS_FILES = sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name != "SOURCES.md") if CORPUS.exists() else []
SAMPLES = ROOT / "sample_sessions"


def corpus_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # No test may write into the user's home or pick up real API keys.
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
