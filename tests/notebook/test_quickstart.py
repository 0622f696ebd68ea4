"""The shipped notebook runs headless, top to bottom, in a real kernel, and ships with the package."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from nbclient import NotebookClient

import lab

NOTEBOOK = Path(lab.__file__).parent / "notebook" / "quickstart.ipynb"
WIDGET = "application/vnd.jupyter.widget-view+json"


def _kernel() -> str:
    # ipykernel installs the "python3" spec with itself; jupyter_client runs it with this interpreter.
    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:  # pragma: no cover - only where ipykernel is missing
        pytest.fail(f"no python3 kernel: install the test extra into {sys.executable}")
    return "python3"


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # A scratch folder as the kernel's cwd: the notebook must not lean on the checkout (it runs from an installed package).
    cwd = tmp_path_factory.mktemp("nb")
    NotebookClient(nb, kernel_name=_kernel(), timeout=300, resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def _outputs(nb: nbformat.NotebookNode, marker: str) -> list[dict]:
    cell = next(c for c in nb.cells if c.cell_type == "code" and marker in c.source)
    return cell.outputs


def test_every_cell_runs_without_an_error(executed: nbformat.NotebookNode) -> None:
    code = [c for c in executed.cells if c.cell_type == "code"]
    assert code and all(c.get("execution_count") for c in code)
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert errors == []


def test_it_plots_compares_and_explores(executed: nbformat.NotebookNode) -> None:
    plot = _outputs(executed, "lab.figures.timeline(mew)")
    assert any("application/vnd.plotly.v1+json" in o.get("data", {}) for o in plot)
    table = _outputs(executed, "style_compare")
    assert any("mewcode" in o.get("data", {}).get("text/html", "") for o in table)
    explorer = _outputs(executed, "ex = lab.explore(")
    assert any(WIDGET in o.get("data", {}) for o in explorer)
    driven = "".join(o.get("text", "") for o in _outputs(executed, 'ex.set("window"'))
    assert "at 48k:" in driven and "window: 48000" in driven


def test_the_notebook_is_package_data() -> None:
    assert resources.files("lab").joinpath("notebook/quickstart.ipynb").is_file()
    import tomllib

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    assert "notebook/*.ipynb" in pyproject["tool"]["setuptools"]["package-data"]["lab"]


def test_it_opens_a_real_corpus_session_when_lab_corpus_is_set(executed: nbformat.NotebookNode) -> None:
    # Issue 31, item 12: the kernel inherits LAB_CORPUS; with a corpus the first cell opens a real session from it.
    from lab.corpus import corpus_dir, corpus_files

    first = "".join(o.get("text", "") for o in _outputs(executed, "corpus = corpus_dir()"))
    corpus = corpus_dir()
    if corpus is not None and corpus_files(corpus):
        assert first.startswith("corpus session ") and "proposed so this session compacts" in first
    else:
        assert "corpus session" not in first and "messages" in first


def test_the_explorer_says_what_is_inactive_by_design(executed: nbformat.NotebookNode) -> None:
    driven = "".join(o.get("text", "") for o in _outputs(executed, 'ex.set("window"'))
    # mewcode compacts at 48k (above its 33,000 min_window): nothing is inactive there, and nothing is claimed
    assert "inactive by design" not in driven
