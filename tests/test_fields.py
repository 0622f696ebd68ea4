"""``lab.fields``: the config's widget specs, shared by the app and the notebook, and free of any UI library."""

from __future__ import annotations

import subprocess
import sys

import lab.fields as fields
from lab.core.config import CompactionConfig
from tests.conftest import ROOT


def test_it_imports_without_any_ui_library() -> None:
    code = (
        "import sys, lab.fields\n"
        "lab.fields.config_specs()\n"
        "print([n for n in sys.modules if n.split('.')[0] in ('streamlit', 'plotly', 'ipywidgets', 'anywidget')])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_app_draws_the_same_specs() -> None:
    from lab.ui import widgets

    for name in ("FieldSpec", "field_specs", "config_specs", "config_choices", "to_widget", "from_widget", "with_value", "humanize"):
        assert getattr(widgets, name) is getattr(fields, name), name


def test_flat_values_reads_every_spec_path() -> None:
    cfg = CompactionConfig(window=64_000)
    values = fields.flat_values(cfg, fields.config_specs())
    assert values["window"] == 64_000
    assert values["watermark.ratio"] == cfg.watermark.ratio
    assert set(values) == {s.path for s in fields.config_specs()}


def test_all_is_complete() -> None:
    public = {n for n, v in vars(fields).items() if not n.startswith("_") and getattr(v, "__module__", None) == fields.__name__}
    assert public <= set(fields.__all__)
    assert all(hasattr(fields, n) for n in fields.__all__)
