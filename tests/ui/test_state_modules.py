"""The session-state modules of the app (transcript, settings, replays, navigation, sweep): their names, the session keys, the only door."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from lab.ui import keys
from tests.conftest import ROOT

CONCERNS = ("transcript", "settings", "replays", "navigation", "sweep")


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"lab.ui.{name}")


class TestStateModules:
    @pytest.mark.parametrize("concern", (*CONCERNS, "keys"))
    def test_module_all_lists_only_defined_names(self, concern: str) -> None:
        module = _module(concern)
        assert len(module.__all__) == len(set(module.__all__))
        missing = [n for n in module.__all__ if not hasattr(module, n)]
        assert missing == []

    def test_every_public_name_has_one_home(self) -> None:
        # Pages import each name from the module that defines it; two modules offering one name would blur that.
        homes: dict[str, list[str]] = {}
        for concern in CONCERNS:
            for name in _module(concern).__all__:
                homes.setdefault(name, []).append(concern)
        assert {n: h for n, h in homes.items() if len(h) > 1} == {}

    def test_there_is_no_re_export_facade(self) -> None:
        # lab.ui.state re-exported every concern (issue 29): pages now import from the module that holds the state.
        assert not (ROOT / "lab" / "ui" / "state.py").exists()
        with pytest.raises(ImportError):
            importlib.import_module("lab.ui.state")


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


# --- pages reach the session only through the state modules ------------------------------------------

PAGE_FILES = sorted((ROOT / "pages").glob("*.py"))


def session_state_uses(source: str) -> list[int]:
    """Lines of ``source`` that reach ``session_state``: ``st.session_state``, an import of it, or ``getattr(st, "session_state")``."""
    lines: list[int] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "session_state" or isinstance(node, ast.Name) and node.id == "session_state" or isinstance(node, ast.ImportFrom) and any(a.name == "session_state" for a in node.names) or isinstance(node, ast.Constant) and node.value == "session_state":
            lines.append(node.lineno)
    return sorted(lines)


class TestPagesUseTheStateModules:
    def test_there_are_pages_to_check(self) -> None:
        assert len(PAGE_FILES) >= 8, PAGE_FILES

    @pytest.mark.parametrize("page", PAGE_FILES, ids=lambda p: p.stem)
    def test_no_page_touches_session_state(self, page: Path) -> None:
        assert session_state_uses(page.read_text(encoding="utf-8")) == [], f"{page.name}: use the lab.ui state modules instead"

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

    def test_the_check_passes_a_page_that_uses_the_state_modules(self) -> None:
        source = "import streamlit as st\nfrom lab.ui.settings import preset_picked\nst.title('x')\npreset_picked('pipeline.preset')\n"
        assert session_state_uses(source) == []
