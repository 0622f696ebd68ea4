"""The core imports without any UI library, and its public API is complete."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

UI_MODULES = ("streamlit", "plotly", "ipywidgets", "anywidget")
FORBIDDEN_PACKAGES = ("lab.formats", "lab.replayer", "lab.ui", "lab.notebook")


@pytest.mark.parametrize("module", ["lab.core", "lab.core.compactor", "lab.core.presets"])
def test_core_never_imports_ui_or_front_ends(module: str) -> None:
    code = (
        "import sys, importlib\n"
        f"m = importlib.import_module({module!r})\n"
        "import lab.core as core\n"
        "for name in core.__all__: getattr(core, name)\n"
        "from lab.core import Compactor\n"
        "Compactor().process_request([])\n"
        "loaded = sorted(sys.modules)\n"
        f"bad = [n for n in loaded if n.split('.')[0] in {UI_MODULES!r} or n.startswith({FORBIDDEN_PACKAGES!r})]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_all_is_complete_and_resolvable() -> None:
    import lab.core as core

    assert len(core.__all__) == len(set(core.__all__))
    for name in core.__all__:
        assert getattr(core, name) is not None, name
    for name in ("Compactor", "CompactionOutcome", "preset", "load_config", "Message", "MemoryStore", "RuleSummarizer", "LabError", "is_prompt_too_long"):
        assert name in core.__all__


def test_unknown_attribute_is_an_attribute_error() -> None:
    import lab.core as core

    with pytest.raises(AttributeError):
        core.NotAThing  # noqa: B018


def test_core_works_when_ui_libraries_are_not_installed() -> None:
    # A finder that makes the UI libraries unimportable, as on a machine without them.
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {UI_MODULES!r}:\n"
        "            raise ImportError(f'{name} is not installed')\n"
        "        return None\n"
        "sys.meta_path.insert(0, Block())\n"
        "import lab, lab.core\n"
        "from lab.core import Compactor, preset\n"
        "from tests.builders import session\n"
        "out = Compactor(preset('minicode').model_copy(update={'window': 4000})).process_request(session())\n"
        "assert out.tokens_after < out.tokens_before, out\n"
        "import lab.formats, lab.generator\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_import_lab_loads_no_notebook_library_until_explore_is_asked_for() -> None:
    code = (
        "import sys, lab\n"
        "lab.replay, lab.figures\n"
        f"print([n for n in sys.modules if n.split('.')[0] in {UI_MODULES[2:]!r}])\n"
        "lab.explore\n"
        "print('ipywidgets' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "True"]
