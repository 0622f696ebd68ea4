"""Tests of ``lab.cli``, one file per module; ``run`` is the in-process call they share."""

from __future__ import annotations

import pytest

from lab.cli.main import main
from tests.conftest import SAMPLES

SAMPLE = SAMPLES / "generated-small.lab.json"


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``python -m lab ARGS`` in this process: the exit code, stdout and stderr."""
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err
