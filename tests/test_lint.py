"""Lint and type checks as tests: ``ruff check`` and ``mypy`` must stay clean.

Both tools read their settings from pyproject.toml and run offline. mypy keeps
its cache in the default ``.mypy_cache`` (git-ignored): a warm run takes a
couple of seconds, a cold one most of a minute on a small machine.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT


def _run(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _report(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n{proc.stdout}{proc.stderr}"


def test_ruff_checks_bugbear_pyupgrade_simplify_and_complexity() -> None:
    import tomllib

    lint = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert {"E", "F", "W", "B", "UP", "SIM", "C901"} <= set(lint["select"])
    assert lint["mccabe"]["max-complexity"] <= 15
    # Exceptions are named file by file, never a whole rule family.
    assert not {"B", "UP", "SIM", "C901"} & set(lint.get("ignore", []))


def test_ruff_is_clean() -> None:
    # No cache: ruff takes well under a second here, and the test then writes nothing into the tree.
    proc = _run("ruff", "check", "--no-cache", "lab", "pages", "tests", timeout=120)
    assert proc.returncode == 0, _report(proc)


@pytest.mark.timeout(600)
def test_mypy_is_clean() -> None:
    # Named explicitly so that a stray mypy.ini or setup.cfg cannot take precedence over pyproject.toml.
    proc = _run("mypy", "--config-file", "pyproject.toml", "lab", timeout=540)
    assert proc.returncode == 0, _report(proc)
