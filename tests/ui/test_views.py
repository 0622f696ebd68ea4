"""The layer rule between the app's two folders: ``lab.views`` holds the pure view-models, ``lab.ui`` only Streamlit helpers.

Like the "core never imports streamlit" test, the first check runs in a fresh interpreter, so a module that
another test already imported cannot hide an import of Streamlit.
"""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import lab.ui
import lab.views
from tests.conftest import ROOT

VIEWS = sorted(m.name for m in pkgutil.iter_modules(lab.views.__path__))
UI = sorted(m.name for m in pkgutil.iter_modules(lab.ui.__path__))
# Streamlit session plumbing that needs no Streamlit import: the session_state key names and the reload rebuild.
UI_WITHOUT_STREAMLIT = {"keys", "reload"}
# The front ends above lab.views: a view-model never reaches up into them.
ABOVE = ("streamlit", "lab.ui", "lab.notebook", "lab.app", "lab.cli", "lab.bench")


def _imports(path: Path) -> set[str]:
    """Every module ``path`` (a file of the project) imports, anywhere in the file, as an absolute dotted name."""
    package = ".".join(path.relative_to(ROOT).parent.parts)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            found.add(".".join(p for p in (base, node.module or "") if p))
    return found


def test_there_are_view_models() -> None:
    assert {"diff", "summary", "export", "files", "markdown"} <= set(VIEWS)
    assert sorted(lab.views.__all__) == VIEWS


def test_no_view_model_loads_streamlit_or_a_front_end() -> None:
    code = (
        "import importlib, json, sys\n"
        f"for name in {VIEWS!r}: importlib.import_module('lab.views.' + name)\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m == 'streamlit' or m.startswith({ABOVE!r}))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


@pytest.mark.parametrize("name", VIEWS)
def test_no_view_model_names_a_front_end_even_lazily(name: str) -> None:
    # Function-local imports run only when called: the subprocess above cannot see them, the source can.
    path = ROOT / "lab" / "views" / f"{name}.py"
    assert [m for m in _imports(path) if m == "streamlit" or m.startswith(ABOVE)] == []


@pytest.mark.parametrize("name", [n for n in UI if n not in UI_WITHOUT_STREAMLIT])
def test_every_ui_module_is_a_streamlit_helper(name: str) -> None:
    # A module here that needs no Streamlit is a view-model: it belongs in lab.views, beside what it presents.
    assert "streamlit" in _imports(ROOT / "lab" / "ui" / f"{name}.py"), f"lab.ui.{name} does not use Streamlit: move it to lab.views"


def test_the_exceptions_still_need_no_streamlit() -> None:
    for name in UI_WITHOUT_STREAMLIT:
        assert "streamlit" not in _imports(ROOT / "lab" / "ui" / f"{name}.py"), name
