"""Shared AppTest helpers: run the whole app (lab/app.py), with or without a sample loaded, and switch pages."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT

APP = ROOT / "lab" / "app.py"
PAGES = ROOT / "pages"
# Replays take a moment on a busy 2-core machine; a generous budget keeps the tests honest, not flaky.
TIMEOUT = 120
SMALL_SAMPLE = "generated-small.lab.json"


@pytest.fixture(autouse=True)
def _app_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # Session folders of the app go under the test's tmp dir, never the system temp.
    root = tmp_path / "app-tmp"
    monkeypatch.setenv("LAB_APP_TMP", str(root))
    return root


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def switch_to(at: AppTest, page: str) -> AppTest:
    """Open ``pages/<page>.py`` in the running app and rerun; fails on any exception."""
    at.switch_page(f"../pages/{page}.py").run()
    no_exception(at)
    return at


def new_app() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.run()
    no_exception(at)
    return at


def load_sample(at: AppTest) -> AppTest:
    """Click the empty state's one-click sample button (present on every page until a session loads)."""
    at.button(key="lab.load_sample").click().run()
    no_exception(at)
    return at


def widget_keys(at: AppTest, prefix: str) -> set[str]:
    """Keys (without ``prefix``) of every input widget whose key starts with ``prefix``."""
    kinds = (at.toggle, at.selectbox, at.slider, at.number_input, at.text_input, at.text_area, at.multiselect)
    return {str(w.key)[len(prefix):] for kind in kinds for w in kind if str(w.key or "").startswith(prefix)}


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


@pytest.fixture
def bare_app() -> AppTest:
    """The app on its default page with nothing loaded."""
    return new_app()


@pytest.fixture
def app() -> AppTest:
    """The app with the small generated sample loaded."""
    return load_sample(new_app())
