"""The scale section: its workload, its sizes, and the lines it prints, on sizes small enough for a test.

Nothing here asserts a speed or a memory figure: the section measures, the README quotes what it prints."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from lab.bench import SECTIONS, _load_optional_sections
from lab.bench import scale as section
from lab.errors import ConfigError, LabError
from lab.formats import load
from lab.generator.tiny import generate_tiny_jsonl


def test_the_workload_is_many_tiny_messages_the_importer_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "tiny.jsonl"
    written = generate_tiny_jsonl(path, 400, seed=3)
    assert written >= 400
    t = load(path)
    assert len(t.messages) == written
    # Tiny: a few words each, so the file's bytes go to the format, not the text.
    assert path.stat().st_size < 600 * written
    assert {m.role for m in t.messages} == {"user", "assistant"}
    # The same seed gives the same bytes; another seed does not.
    again = tmp_path / "again.jsonl"
    generate_tiny_jsonl(again, 400, seed=3)
    assert again.read_bytes() == path.read_bytes()
    generate_tiny_jsonl(again, 400, seed=4)
    assert again.read_bytes() != path.read_bytes()
    with pytest.raises(ConfigError):
        generate_tiny_jsonl(tmp_path / "none.jsonl", 3)


def test_sizes_come_from_the_environment_when_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(section.SIZES_ENV, raising=False)
    assert section.sizes(False) == section.SIZES and section.sizes(True) == section.QUICK_SIZES
    monkeypatch.setenv(section.SIZES_ENV, "30000, 10000,100000")
    assert section.sizes(False) == (10_000, 30_000, 100_000)
    for bad in ("ten", "5000", "10,20"):
        monkeypatch.setenv(section.SIZES_ENV, bad)
        with pytest.raises(LabError, match=section.SIZES_ENV):
            section.sizes(False)


def test_one_size_is_measured_in_its_own_process(tmp_path: Path) -> None:
    path = tmp_path / "tiny.jsonl"
    generate_tiny_jsonl(path, 200, seed=1)
    got = section.run_size(path, "mewcode", 4_000)
    assert got["messages"] == len(load(path).messages) and got["requests"] > 0
    assert got["file_bytes"] == path.stat().st_size
    # The peak is the process's highest RSS, so never below what it held before the file was read.
    assert got["rss_peak"] >= got["rss_after_import"] >= got["rss_base"] > 0
    assert got["replay_seconds"] > 0 and json.loads(json.dumps(got)) == got


def test_a_failed_replay_is_one_lab_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text("not a transcript\n")
    with pytest.raises(LabError, match="broken.jsonl"):
        section.run_size(broken)


def test_the_section_prints_sizes_ratios_and_targets() -> None:
    lines, data = section.bench_scale(True, chosen=(200, 600), rounds=1, window=4_000, big_mb=0.2)
    text = "\n".join(lines)
    small, big = data["rows"]
    assert small["size"] == 200 and big["size"] == 600 and big["messages"] >= 600
    # One row per size, then the linearity of the larger against the smaller, then memory per size.
    assert sum(1 for line in lines if re.match(r"\s+[\d,]+\s+[\d,]+\s", line)) == 2
    linear = next(line for line in lines if line.startswith("linearity"))
    mark = "ok" if big["linear_ok"] else "OVER"
    assert f"x{big['linearity']:.2f}" in linear and f"target <= x{section.LINEAR_TARGET}" in linear and linear.endswith(mark)
    # The ratio is the runs' own: time per message of the larger over the smaller's.
    per = [(r["import_seconds"] + r["replay_seconds"]) / r["messages"] for r in (small, big)]
    assert big["linearity"] == pytest.approx(per[1] / per[0])
    memory = [line for line in lines if line.startswith("replay peak")]
    assert len(memory) == 2
    for row, line in zip(data["rows"], memory, strict=True):
        assert row["memory_over_file"] == pytest.approx((row["rss_peak"] - row["rss_base"]) / row["file_bytes"])
        assert f"{row['memory_over_file']:.1f}x file" in line
    # The peak's growth per byte of file, from the smaller size to the larger: the figure no constant moves.
    growth = next(line for line in lines if line.startswith("growth"))
    expected = (data["rows"][1]["rss_peak"] - small["rss_peak"]) / (data["rows"][1]["file_bytes"] - small["file_bytes"])
    assert data["rows"][1]["memory_marginal"] == pytest.approx(expected) and f"{expected:.1f} bytes of peak per byte of file" in growth
    # The verdict: the smallest constant that holds at both sizes, its part beyond the bare import bounded, and the growth.
    constant = max(r["rss_peak"] - section.MEMORY_TARGET * r["file_bytes"] for r in data["rows"])
    base = max(r["rss_base"] for r in data["rows"])
    assert data["memory_constant"] == pytest.approx(constant) and data["memory_growth"] == [pytest.approx(expected)]
    assert data["memory_ok"] == (expected <= section.MEMORY_TARGET and constant <= base + section.FIXED_ALLOWANCE)
    verdict = next(line for line in lines if line.startswith("memory: "))
    assert f"+ {constant / 1e6:,.1f} MB at every size" in verdict and verdict.endswith("ok" if data["memory_ok"] else "OVER")
    big = data["big"]
    assert big["file_bytes"] >= 200_000 and big["memory_over_file"] == pytest.approx((big["rss_peak"] - big["rss_base"]) / big["file_bytes"])
    big_line = next(line for line in lines if line.startswith("big messages"))
    assert f"{big['memory_over_file']:.1f}x file" in big_line and big_line.endswith("ok" if big["memory_ok"] else "OVER")
    assert "constant: the same process's RSS" in text and data["memory_target"] == section.MEMORY_TARGET


def test_the_section_is_registered() -> None:
    _load_optional_sections()
    assert "scale" in SECTIONS


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM is Linux's")
def test_a_fresh_process_does_not_report_its_big_parents_memory_as_its_own() -> None:
    """ru_maxrss survives execve and starts from the parent's size at fork: the section's peak must not."""
    import subprocess

    ballast = bytearray(300 * 2**20)
    ballast[:: 4096] = b"\x01" * len(ballast[:: 4096])  # touch every page, so it is resident
    code = "from lab.bench.scale import _rss_bytes; print(_rss_bytes())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(done.stdout) < 200 * 2**20
    del ballast
