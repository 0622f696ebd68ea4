"""The CLI's arrows point down: ``main`` imports the verbs, the verbs import ``common`` and ``settings``, never ``main`` or each other."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from tests.conftest import ROOT

CLI = ROOT / "lab" / "cli"
VERBS = sorted(p.stem for p in CLI.glob("*.py") if p.stem not in ("__init__", "main", "common", "settings"))
# What each module may import of its own package.
ALLOWED = {"common": set(), "settings": set(), **{verb: {"common", "settings"} for verb in VERBS}}


def _siblings(module: str) -> set[str]:
    """The lab.cli modules ``module`` imports (relative ``from .x import`` or absolute ``lab.cli.x``)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse((CLI / f"{module}.py").read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                out.update([node.module] if node.module else [a.name for a in node.names])
            elif node.module and node.module.startswith("lab.cli."):
                out.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[2] for a in node.names if a.name.startswith("lab.cli."))
    return out


@pytest.mark.parametrize("module", sorted(ALLOWED))
def test_a_cli_module_imports_only_what_sits_below_it(module: str) -> None:
    assert _siblings(module) <= ALLOWED[module], _siblings(module) - ALLOWED[module]


def test_main_registers_every_verb_module() -> None:
    assert set(VERBS) <= _siblings("main")


def test_help_needs_no_provider_sdk_optuna_pandas_or_numpy() -> None:
    # Each verb imports what it drives when it runs: --help stays quick and never loads another verb's dependencies.
    code = "\n".join([
        "import contextlib, io, sys",
        "from lab.cli.main import main",
        "for verb in ('replay', 'compare', 'probe', 'sweep', 'serve'):",
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):",
        "        main([verb, '--help'])",
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'anthropic', 'openai', 'optuna', 'pandas', 'starlette', 'uvicorn', 'numpy', 'plotly', 'streamlit'}))",
    ])
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "[]"
