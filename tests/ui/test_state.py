"""lab.ui.state as a facade over the state modules: every public name, where it lives, the session keys, the only door."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from lab.ui import keys, state
from tests.conftest import ROOT

CONCERNS = ("transcript", "settings", "replays", "navigation", "sweep")


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"lab.ui.{name}")


class TestFacade:
    def test_all_is_unique_and_resolvable(self) -> None:
        assert len(state.__all__) == len(set(state.__all__))
        for name in state.__all__:
            assert getattr(state, name) is not None, name

    def test_public_names_of_today_are_kept(self) -> None:
        # What pages/*.py and the AppTests call: removing one breaks a page at run time, not import time.
        for name in ("get_report", "get_compare", "sidebar", "require_transcript", "session_dir", "accept_upload",
                     "selected_request", "select_from_click", "summarizer_fingerprint", "STATS_COUNTERS", "SAVED_PREFIX"):
            assert name in state.__all__, name

    @pytest.mark.parametrize("concern", CONCERNS)
    def test_every_concern_name_is_re_exported_as_the_same_object(self, concern: str) -> None:
        module = _module(concern)
        for name in module.__all__:
            assert name in state.__all__, f"{concern}.{name} missing from state.__all__"
            assert getattr(state, name) is getattr(module, name), name

    def test_every_state_name_comes_from_one_module(self) -> None:
        # files.sample_files takes the folder; state's is transcript's wrapper bound to sample_sessions/.
        owners = {
            name: [c for c in (*CONCERNS, "files") if name in _module(c).__all__ and getattr(_module(c), name) is getattr(state, name)]
            for name in state.__all__
        }
        assert {name: o for name, o in owners.items() if len(o) != 1} == {}
        assert owners["sample_files"] == ["transcript"]

    @pytest.mark.parametrize("concern", (*CONCERNS, "keys", "state"))
    def test_module_all_lists_only_defined_names(self, concern: str) -> None:
        module = _module(concern)
        missing = [n for n in module.__all__ if not hasattr(module, n)]
        assert missing == []


class TestKeys:
    def test_session_keys_are_the_apps_contract(self) -> None:
        # AppTests and older sessions read these strings directly.
        assert (keys.TRANSCRIPT, keys.CONFIG, keys.REQUEST, keys.PRESET) == ("lab.transcript", "lab.config", "lab.request", "lab.preset")

    def test_session_keys_are_distinct_and_prefixed(self) -> None:
        values = [getattr(keys, n) for n in keys.__all__ if n not in ("PREFIX", "digest")]
        assert len(values) == len(set(values))
        assert all(v.startswith(keys.PREFIX) for v in values)

    def test_digest_hashes_text_as_utf8(self) -> None:
        assert keys.digest("é") == keys.digest("é".encode())
        assert keys.digest("a") != keys.digest("b")
        assert len(keys.digest(b"")) == 64

    def test_keys_need_no_streamlit(self) -> None:
        code = "import sys, lab.ui.keys; print('streamlit' in sys.modules)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
        assert out.stdout.strip() == "False"


# --- pages reach the session only through lab.ui.state ------------------------------------------

PAGE_FILES = sorted((ROOT / "pages").glob("*.py"))


def session_state_uses(source: str) -> list[int]:
    """Lines of ``source`` that reach ``session_state``: ``st.session_state``, an import of it, or ``getattr(st, "session_state")``."""
    lines: list[int] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "session_state" or isinstance(node, ast.Name) and node.id == "session_state" or isinstance(node, ast.ImportFrom) and any(a.name == "session_state" for a in node.names) or isinstance(node, ast.Constant) and node.value == "session_state":
            lines.append(node.lineno)
    return sorted(lines)


class TestPagesUseTheFacade:
    def test_there_are_pages_to_check(self) -> None:
        assert len(PAGE_FILES) >= 8, PAGE_FILES

    @pytest.mark.parametrize("page", PAGE_FILES, ids=lambda p: p.stem)
    def test_no_page_touches_session_state(self, page: Path) -> None:
        assert session_state_uses(page.read_text(encoding="utf-8")) == [], f"{page.name}: use lab.ui.state instead"

    @pytest.mark.parametrize(
        "source",
        [
            "import streamlit as st\nst.session_state['k'] = 1\n",
            "import streamlit as st\nx = st.session_state.get('k')\n",
            "import streamlit\nstreamlit.session_state.pop('k', None)\n",
            "from streamlit import session_state\nsession_state['k'] = 1\n",
            "import streamlit as st\nss = getattr(st, 'session_state')\n",
        ],
        ids=["item", "get", "module", "from-import", "getattr"],
    )
    def test_the_check_sees_every_way_in(self, source: str) -> None:
        assert session_state_uses(source) != []

    def test_the_check_passes_a_page_that_uses_the_facade(self) -> None:
        source = "import streamlit as st\nfrom lab.ui import state\nst.title('x')\nstate.preset_picked('pipeline.preset')\n"
        assert session_state_uses(source) == []
