"""run_grid: the same cells in process, across local processes (in batches) and on Ray; errors as cells.

The Ray tests share the suite's one local runtime (``ray_runtime`` in tests/conftest.py);
starting it takes 15-30 s on the project machine, so they carry the ``ray`` mark
(``-m "not ray"`` leaves them out locally; CI runs them).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import lab.evaluation.grid as grid_module
from lab.cli.main import main
from lab.core.messages import Transcript
from lab.core.presets import preset
from lab.errors import ConfigError
from lab.generator import GeneratorConfig, generate, write_lab_json
from lab.evaluation import compare_folder
from lab.evaluation.grid import Cell, run_grid

CONFIGS = [preset("minicode"), preset("mewcode"), preset("codex").model_copy(update={"window": 16_000})]


def _session(seed: int, requests: int) -> Transcript:
    return generate(GeneratorConfig(seed=seed, requests=requests, typical_output_chars=900, max_output_chars=6000, huge_output_rate=0.0))


@pytest.fixture(scope="module")
def transcripts() -> list[Transcript]:
    return [_session(seed, n) for seed, n in ((1, 10), (2, 6), (3, 14))]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, transcripts: list[Transcript]) -> Path:
    root = tmp_path_factory.mktemp("grid")
    for k, t in enumerate(transcripts):
        write_lab_json(t, root / f"gen-{k}.lab.json")
    (root / "broken.json").write_text('{"lab_transcript": 1, "messages": [{"role": "robot"}]}', encoding="utf-8")
    return root


def _broken() -> Transcript:
    # Not validated, so the replay itself fails on it (as an internal error), wherever it runs.
    return Transcript.model_construct(messages=[None])


def _numbers(grid: list[list[Cell]]) -> list[list[Any]]:
    """Every cell without its timing: what must not depend on where it ran."""
    return [[(c.config, c.transcript, c.error, {k: v for k, v in (c.row or {}).items() if k != "replay_seconds"}) for c in row] for row in grid]


def _strip(table: Any) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "replay_seconds"} for r in table.records()]


class TestLocal:
    def test_processes_give_the_cells_of_one_process(self, transcripts: list[Transcript]) -> None:
        names = ["a", "b", "c"]
        one = run_grid(transcripts, CONFIGS, names=names, processes=1)
        two = run_grid(transcripts, CONFIGS, names=names, processes=2)
        assert len(one) == 3 and all(len(row) == 3 for row in one)
        assert all(c.ok for row in one for c in row)
        assert [[(c.row or {})["transcript"] for c in row] for row in one] == [names] * 3
        assert [(one[i][0].row or {})["config"] for i in range(3)] == [c.label for c in CONFIGS]
        assert (one[2][0].row or {})["window"] == 16_000
        assert _numbers(two) == _numbers(one)

    def test_a_worker_gets_batches_of_indices_not_transcripts(self, transcripts: list[Transcript], monkeypatch: pytest.MonkeyPatch) -> None:
        submitted: list[tuple[Any, ...]] = []
        init: list[tuple[Any, ...]] = []

        class Recording(grid_module.ProcessPoolExecutor):  # type: ignore[name-defined]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                init.append(kwargs["initargs"])
                super().__init__(*args, **kwargs)

            def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
                submitted.append(args)
                return super().submit(fn, *args, **kwargs)

        monkeypatch.setattr(grid_module, "ProcessPoolExecutor", Recording)
        many = transcripts * 4  # 12 transcripts x 3 configs = 36 jobs
        grid = run_grid(many, CONFIGS, processes=2)
        assert all(c.ok for row in grid for c in row)
        # The transcripts go to each worker once, when it starts; submits carry (config, transcript) index pairs.
        assert len(init) == 1 and list(init[0][0]) == many
        assert 1 < len(submitted) < 36
        jobs = [ij for (batch,) in submitted for ij in batch]
        assert all(isinstance(i, int) and isinstance(j, int) for i, j in jobs)
        assert sorted(jobs) == sorted((i, j) for i in range(3) for j in range(12))

    def test_batches_run_longest_transcripts_first_and_keep_one_transcript_together(self, transcripts: list[Transcript]) -> None:
        jobs = [(i, j) for j in range(3) for i in range(3)]
        batches = grid_module._batches(jobs, transcripts, workers=2)
        order = [ij for b in batches for ij in b]
        assert sorted(order) == sorted(jobs)
        # Transcript 2 has the most messages, transcript 1 the fewest; configs stay together per transcript.
        assert [j for _, j in order] == [2, 2, 2, 0, 0, 0, 1, 1, 1]

    @pytest.mark.parametrize("processes", [1, 2], ids=["in-process", "two-processes"])
    def test_a_failing_job_is_an_error_cell(self, transcripts: list[Transcript], processes: int) -> None:
        grid = run_grid([transcripts[0], _broken()], CONFIGS[:2], processes=processes)
        assert [c.ok for row in grid for c in row] == [True, False, True, False]
        assert all(c.error is not None and c.error.startswith("internal error: ") for row in grid for c in row[1:])

    def test_a_dead_worker_fails_its_jobs_not_the_grid(self, transcripts: list[Transcript], monkeypatch: pytest.MonkeyPatch) -> None:
        if grid_module._context().get_start_method() != "fork":
            pytest.skip("the crash is planted through fork inheritance")
        real = grid_module._job

        def crash_on_second(t: Transcript, name: str, config: Any, label: str, i: int, j: int) -> Cell:
            if j == 1:
                os._exit(3)
            return real(t, name, config, label, i, j)

        monkeypatch.setattr(grid_module, "_job", crash_on_second)
        grid = run_grid(transcripts, CONFIGS[:1], processes=2)
        assert len(grid[0]) == 3 and not grid[0][1].ok
        assert "worker failed" in (grid[0][1].error or "")

    def test_progress_counts_every_job(self, transcripts: list[Transcript]) -> None:
        seen: list[tuple[int, int]] = []
        run_grid(transcripts, CONFIGS, processes=2, progress=lambda done, total: seen.append((done, total)))
        assert seen[-1] == (9, 9) and [d for d, _ in seen] == sorted(d for d, _ in seen) and {t for _, t in seen} == {9}

    @pytest.mark.parametrize("kwargs, match", [({"processes": 0}, "processes"), ({"ray": ""}, "ray"), ({"names": ["one"]}, "names")],
                             ids=["processes", "empty-ray", "names"])
    def test_bad_arguments(self, transcripts: list[Transcript], kwargs: dict[str, Any], match: str) -> None:
        with pytest.raises(ConfigError, match=match):
            run_grid(transcripts, CONFIGS, **kwargs)

    def test_ray_missing_is_a_config_error(self, transcripts: list[Transcript], monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(__import__("sys").modules, "ray", None)  # import ray -> ImportError
        with pytest.raises(ConfigError, match="compaction-lab\\[ray\\]"):
            run_grid(transcripts, CONFIGS, ray="auto")

    def test_cli_processes_and_ray_are_exclusive(self, folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        rc = main(["compare", str(folder), "--preset", "minicode", "--processes", "2", "--ray", "auto", "--out", str(tmp_path / "t.csv")])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and "not allowed with argument" in err[0] and err[0].startswith("error: ")
        assert not (tmp_path / "t.csv").exists()


@pytest.mark.ray
class TestRay:
    def test_the_cells_of_a_local_run(self, ray_runtime: Any, transcripts: list[Transcript]) -> None:
        local = run_grid(transcripts, CONFIGS, names=["a", "b", "c"], processes=1)
        on_ray = run_grid(transcripts, CONFIGS, names=["a", "b", "c"], ray="auto")
        assert all(c.ok for row in on_ray for c in row)
        assert _numbers(on_ray) == _numbers(local)

    def test_each_transcript_is_put_in_the_object_store_once(self, ray_runtime: Any, transcripts: list[Transcript],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
        puts: list[Any] = []
        real_put = ray_runtime.put

        def counting_put(value: Any, *args: Any, **kwargs: Any) -> Any:
            puts.append(value)
            return real_put(value, *args, **kwargs)

        monkeypatch.setattr(ray_runtime, "put", counting_put)
        fresh = [_session(seed, 5) for seed in (7, 8)]
        seen: list[int] = []
        grid = run_grid(fresh + [fresh[0]], CONFIGS, ray="auto", progress=lambda done, total: seen.append(done))
        assert all(c.ok for row in grid for c in row) and seen[-1] == 9
        # 9 tasks, 2 distinct transcripts: 2 puts, and a second grid over them (a sweep's next trial) ships nothing.
        assert len(puts) == 2 and puts[0] is fresh[0] and puts[1] is fresh[1]
        run_grid(fresh, CONFIGS[:1], ray="auto")
        assert len(puts) == 2
        other = _session(9, 5)
        run_grid([other, fresh[1]], CONFIGS[:1], ray="auto")
        assert len(puts) == 3 and puts[2] is other

    def test_a_failing_job_is_an_error_cell(self, ray_runtime: Any, transcripts: list[Transcript]) -> None:
        grid = run_grid([_broken(), transcripts[1]], CONFIGS[:2], ray="auto")
        assert [c.ok for row in grid for c in row] == [False, True, False, True]
        assert (grid[0][0].error or "").startswith("internal error: AttributeError")

    def test_compare_folder_same_numbers_on_ray_processes_and_in_process(self, ray_runtime: Any, folder: Path) -> None:
        presets = ["minicode", "mewcode", "lab"]
        in_process = compare_folder(folder, presets, processes=1, window=16_000)
        pooled = compare_folder(folder, presets, processes=2, window=16_000)
        on_ray = compare_folder(folder, presets, ray="auto", window=16_000)
        assert len(in_process.rows) == 9 and all(r["invalid_requests"] == 0 for r in in_process.rows)
        assert _strip(on_ray) == _strip(in_process) == _strip(pooled)
        assert on_ray.errors == in_process.errors == pooled.errors
        assert [(e["transcript"], e["config"]) for e in on_ray.errors] == [("broken.json", p) for p in presets]

    def test_cli_compare_with_ray(self, ray_runtime: Any, folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        import pandas as pd

        out = tmp_path / "t.csv"
        assert main(["compare", str(folder), "--preset", "minicode", "--preset", "mewcode", "--window", "16000", "--ray", "auto", "--out", str(out)]) == 0
        printed = capsys.readouterr().out
        assert "compared 3 transcript(s) x 2 config(s): 6 row(s)" in printed and "skipped: broken.json" in printed
        expected = compare_folder(folder, ["minicode", "mewcode"], processes=1, window=16_000)
        written = pd.read_csv(out)
        assert written[written["error"].isna()]["cost"].tolist() == pytest.approx([r["cost"] for r in expected.rows])
