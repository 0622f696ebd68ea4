"""The machine section: a fixed workload whose result never changes, timed first."""

from __future__ import annotations

from lab.bench import SECTIONS, run_bench
from lab.bench.machine import _payload, bench_machine, reference_workload


def test_the_workload_is_the_same_on_every_run() -> None:
    lines = _payload()
    assert _payload() == lines and sum(map(len, lines)) > 900_000
    assert reference_workload(lines) == reference_workload(list(lines))
    # A different input gives a different checksum: the checksum covers what was computed.
    assert reference_workload(lines[1:]) != reference_workload(lines)


def test_the_section_prints_its_seconds_and_checksum(capsys) -> None:  # type: ignore[no-untyped-def]
    lines, data = bench_machine(repeat=1)
    assert data["reference_seconds"] > 0 and data["checksum"] in lines[0] and data["repeat"] == 1
    results = run_bench(["machine"], quick=True)
    assert results["machine"]["checksum"] == data["checksum"]
    assert capsys.readouterr().out.startswith("== machine\nreference workload")


def test_it_runs_first_when_every_section_runs(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    import lab.bench as bench

    bench._load_optional_sections()
    fakes = {name: (lambda quick, name=name: ([name], {})) for name in SECTIONS}
    monkeypatch.setattr(bench, "SECTIONS", fakes)
    monkeypatch.setattr(bench, "_load_optional_sections", lambda: None)
    run_bench()
    printed = [line[3:] for line in capsys.readouterr().out.splitlines() if line.startswith("== ")]
    assert printed[0] == "machine" and sorted(printed) == sorted(fakes)
