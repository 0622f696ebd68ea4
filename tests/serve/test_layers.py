"""The proxy sits above the core: importing the core or the CLI loads no web server stack."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("module", ["lab.core", "lab.core.compactor", "lab.cli.main", "lab.serve.conversations", "lab.serve.recording"])
def test_no_web_stack_below_the_app(module):
    code = f"import sys, {module}; print(sorted(n for n in sys.modules if n.split('.')[0] in ('starlette', 'uvicorn')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"
