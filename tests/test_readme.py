"""The README's commands and code are the ones that work."""

from __future__ import annotations

import re

from tests.conftest import ROOT, SAMPLES

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_readme_opens_with_the_two_commands_ci_runs() -> None:
    bash = _blocks("bash")
    assert bash[0].strip() == "python -m pip install -e . && streamlit run lab/app.py"
    assert bash[1].strip() == 'python -m pip install -e ".[test]" && python -m pytest'
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert bash[1].strip() in ci


def test_ci_points_the_tests_at_the_corpus_and_requires_it() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = ci.index('python -m pip install -e ".[test]" && python -m pytest')
    for setting in ("export LAB_CORPUS", "export LAB_REQUIRE_CORPUS=1", "export LAB_REQUIRE_BROWSER=1"):
        assert -1 < ci.find(setting) < command, setting
    assert "../shared/corpus" in ci
    intro = README.split("---", 1)[0]
    assert "LAB_CORPUS" in intro and "LAB_REQUIRE_CORPUS=1" in intro


def test_notebook_example_runs() -> None:
    code = next(b for b in _blocks("python") if "lab.replay(" in b)
    code = code.replace('"session.jsonl"', repr(str(SAMPLES / "generated-small.lab.json")))
    namespace: dict[str, object] = {}
    exec(compile(code, "README notebook example", "exec"), namespace)  # noqa: S102 - our own README
    assert namespace["mini"].requests > 0  # type: ignore[attr-defined]
    # The replay settings example bills the same compaction at lower prices.
    assert 0 < namespace["nano"].total_cost < namespace["mini"].total_cost  # type: ignore[attr-defined]


def test_agent_example_names_real_api() -> None:
    import lab.core as core

    code = next(b for b in _blocks("python") if "Compactor(" in b)
    for name in re.findall(r"from lab\.core import ([\w, ]+)", code)[0].split(","):
        assert hasattr(core, name.strip()), name
    for method in re.findall(r"compactor\.(\w+)\(", code):
        assert hasattr(core.Compactor, method), method


def test_lab_replay_sweep_and_generate_are_plain_functions_beside_their_packages() -> None:
    import inspect

    import lab
    import lab.generator
    import lab.replayer
    import lab.tuning

    assert inspect.isfunction(lab.replay) and lab.replay is lab.replayer.replay
    assert inspect.isfunction(lab.sweep) and lab.sweep is lab.tuning.sweep
    assert inspect.isfunction(lab.generate) and lab.generate is lab.generator.generate
    report = lab.replay(SAMPLES / "generated-small.lab.json", "minicode", window=32_000)
    assert report.requests > 0 and type(report) is lab.Report
