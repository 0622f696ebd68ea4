"""Grid workers die with their parent, and SIGTERM ends a compare as cleanly as Ctrl-C.

A ``compare`` killed with SIGTERM or SIGKILL used to leave its worker processes
replaying for ten minutes and more. These tests run the real CLI in a
subprocess, find its workers in /proc, signal the parent and wait (bounded) for
the workers to go. Linux only: that is where /proc lists a process's children.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from lab.generator import GeneratorConfig, generate, write_lab_json
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds child processes through /proc (Linux)")

# Bounds on every wait: the workers should be gone within about a second; a loaded CI machine gets more.
GONE_WITHIN = 10.0
START_WITHIN = 60.0


def _state(pid: int) -> str | None:
    """The process's state letter from /proc, or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()[0]


def _alive(pid: int) -> bool:
    state = _state(pid)
    return state is not None and state not in ("Z", "X")  # a zombie has ended; only its reaper is missing


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
            out.append(int(entry.name))
    return out


def _wait_for(predicate: Callable[[], bool], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Sessions long enough that the grid is still running when it is signalled."""
    root = tmp_path_factory.mktemp("lifetime")
    for seed in range(4):
        write_lab_json(generate(GeneratorConfig(seed=seed, requests=300)), root / f"s{seed}.lab.json")
    return root


def _start_compare(folder: Path, out: Path) -> tuple[subprocess.Popen[str], list[int]]:
    args = [sys.executable, "-m", "lab", "compare", str(folder), "--preset", "minicode", "--preset", "mewcode", "--preset", "codex",
            "--processes", "2", "--out", str(out)]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workers: list[int] = []

    def started() -> bool:
        workers[:] = _children(proc.pid)
        return len(workers) >= 2 or proc.poll() is not None

    assert _wait_for(started, START_WITHIN), "the compare never started its workers"
    assert proc.poll() is None and len(workers) == 2, f"the compare ended before it could be signalled: {proc.communicate()}"
    return proc, workers


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_workers_die_with_a_signalled_compare(sig: signal.Signals, folder: Path, tmp_path: Path) -> None:
    proc, workers = _start_compare(folder, tmp_path / "t.csv")
    try:
        os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=GONE_WITHIN)
        assert _wait_for(lambda: not any(_alive(w) for w in workers), GONE_WITHIN), f"workers still alive: {[w for w in workers if _alive(w)]}"
    finally:
        for pid in [proc.pid, *workers]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=GONE_WITHIN)
    if sig == signal.SIGTERM:
        # As Ctrl-C: one line, its own exit status, no traceback, and no table half written.
        assert proc.returncode == 143 and err.strip() == "error: terminated"
        assert not list(tmp_path.iterdir())
    else:
        assert proc.returncode == -signal.SIGKILL


_ORPHAN_SCRIPT = textwrap.dedent(
    """
    import multiprocessing, os, sys, time
    from lab.evaluation.grid import die_with_parent

    def child(parent):
        die_with_parent(parent, use_prctl=False)
        time.sleep(120)

    if __name__ == "__main__":
        p = multiprocessing.get_context(sys.argv[1]).Process(target=child, args=(os.getpid(),))
        p.start()
        print(p.pid, flush=True)
        time.sleep(120)
    """
)


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_portable_watch_ends_an_orphan_without_prctl(method: str, tmp_path: Path) -> None:
    script = tmp_path / "orphan.py"
    script.write_text(_ORPHAN_SCRIPT, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script), method], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    child = 0
    try:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        # Give the child time to reach die_with_parent (a spawned child imports the lab first).
        time.sleep(2.0)
        assert _alive(child)
        proc.kill()
        proc.wait(timeout=GONE_WITHIN)
        assert _wait_for(lambda: not _alive(child), GONE_WITHIN), "the orphan outlived its parent"
    finally:
        if child and _alive(child):
            os.kill(child, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=GONE_WITHIN)
        if proc.stdout is not None:
            proc.stdout.close()
