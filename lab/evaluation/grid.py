"""Replay many transcripts under many configs: in this process, across local processes, or on Ray.

``run_grid`` is the one place that fans a grid of jobs out; ``compare_folder``
and the sweep both go through it, so a result never depends on where it ran
(replays are deterministic). A job that fails becomes an error entry in its
cell; it never stops the others. Each job's row is ``rows.summary_row`` plus a
column per scorer (``lab.evaluation.scorers``: callables run after the replay,
where it ran, such as ``ProbeSpec``'s LLM probes).

Where a job runs, and what crosses to it:

- in process (``processes=1``): nothing crosses;
- local processes: each worker receives the transcripts, configs and the one
  ``ReplaySettings`` once, when
  it starts (inherited under fork, pickled once per worker otherwise), then
  batches of (config, transcript) index pairs, so a job costs two integers on
  the way out and its row on the way back;
- Ray (``ray="auto"`` or an address): each transcript is put in the object
  store once and every task takes its ``ObjectRef`` (and the settings' small
  JSON dump); Ray schedules the tasks.
"""

from __future__ import annotations

import ctypes
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
from contextlib import suppress
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Sequence

from ..core.config import CompactionConfig
from ..core.messages import Transcript
from ..errors import ConfigError, LabError
from ..replayer.engine import replay
from ..replayer.settings import ReplaySettings, SettingsLike, resolve_settings
from .rows import summary_row
from .scorers import ProbeSpec, Scorer

if TYPE_CHECKING:  # pragma: no cover
    from types import ModuleType

__all__ = ["Cell", "run_grid", "ray_module", "die_with_parent"]

Progress = Callable[[int, int], Any]
# Jobs per worker handed out in this many batches: few enough that a submit is rare next to a replay,
# enough that a worker finishing early takes over work instead of idling at the end.
_BATCHES_PER_WORKER = 8


@dataclass(frozen=True)
class Cell:
    """One transcript under one config: the compare table's row, or the error that stopped it."""

    config: int
    transcript: int
    row: dict[str, Any] | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.row is not None


def _job(t: Transcript, name: str, config: dict[str, Any] | CompactionConfig, label: str, i: int, j: int,
         scorers: Sequence[Scorer] = (), settings: dict[str, Any] | ReplaySettings | None = None) -> Cell:
    start = time.perf_counter()
    try:
        cfg = config if isinstance(config, CompactionConfig) else CompactionConfig.model_validate(config)
        rs = settings if isinstance(settings, ReplaySettings) or settings is None else ReplaySettings.model_validate(settings)
        report = replay(t, cfg, settings=rs)
        # Scored here, where the replay ran: a failing scorer fails its cell like a failing replay.
        scores = {s.column: s(report, t) for s in scorers}
    except LabError as e:
        return Cell(i, j, None, str(e).splitlines()[0] if str(e) else type(e).__name__)
    except Exception as e:  # noqa: BLE001 - one bad transcript must not end a grid
        return Cell(i, j, None, f"internal error: {type(e).__name__}: {e}")
    row = summary_row(report, name, label, time.perf_counter() - start)
    row.update(scores)
    return Cell(i, j, row)


def _context() -> multiprocessing.context.BaseContext:
    # fork is cheap (the workers inherit the imported lab and the transcripts) but unsafe in a process
    # with threads (the Streamlit app); there the fork server starts clean workers instead.
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        return multiprocessing.get_context("forkserver")
    return multiprocessing.get_context("spawn")


# --- worker lifetime ----------------------------------------------------------------------------------
# A worker must not outlive the process that started it: a compare killed with SIGKILL (or SIGTERM before
# this) left its workers replaying for ten minutes and more. Linux kills a worker when its parent dies
# (PR_SET_PDEATHSIG); everywhere, a daemon thread in the worker also watches the parent and exits with it.

_PR_SET_PDEATHSIG = 1
# How often the watch thread looks at the parent: the bound on how long an orphan lives without prctl.
_WATCH_SECONDS = 0.5


def _parent_alive(parent: int, forked: bool) -> bool:
    if forked:
        # Started by the parent itself (fork, spawn): an orphan is re-parented (to init or a subreaper).
        return os.getppid() == parent
    if os.name == "nt":
        return True  # no cheap probe there; the pool's own pipe ends the worker soon after
    try:  # started by a fork server: ask about the parent by its pid
        os.kill(parent, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _watch_parent(parent: int, forked: bool) -> None:
    while _parent_alive(parent, forked):
        time.sleep(_WATCH_SECONDS)
    os._exit(1)


def die_with_parent(parent: int, *, use_prctl: bool = True) -> None:
    """Make this process end when ``parent`` does (call it first thing in a worker).

    ``use_prctl=False`` leaves only the portable watch thread (what other systems get), for tests.
    """
    # The CLI's SIGTERM handler is inherited under fork; in a worker SIGTERM must simply end it.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if use_prctl and sys.platform.startswith("linux"):
        with suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    forked = os.getppid() == parent
    # The parent may have died before prctl took effect (or under a fork server, which is the real parent).
    if not forked and not _parent_alive(parent, forked):
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent, forked), name="lab-watch-parent", daemon=True).start()


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """End a pool now: cancel what has not started and terminate the workers (an interrupt must not wait for them)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        with suppress(Exception):
            p.terminate()
    deadline = time.monotonic() + 5
    for p in procs:
        with suppress(Exception):
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()


# What a local worker process holds for the whole grid, set once by ``_init_worker``.
_WORKER: tuple[Sequence[Transcript], list[str], list[CompactionConfig], list[str], tuple[Scorer, ...], ReplaySettings] | None = None


def _init_worker(transcripts: Sequence[Transcript], names: list[str], dumped: list[dict[str, Any]], labels: list[str],
                 scorers: tuple[Scorer, ...] = (), settings: dict[str, Any] | None = None, parent: int | None = None) -> None:
    global _WORKER
    if parent is not None:
        die_with_parent(parent)
    # Validated once per worker rather than once per job; every mode validates the same JSON dumps.
    _WORKER = (transcripts, names, [CompactionConfig.model_validate(c) for c in dumped], labels, scorers,
               ReplaySettings.model_validate(settings or {}))


def _batch(jobs: list[tuple[int, int]]) -> list[Cell]:
    assert _WORKER is not None, "a grid worker runs only after _init_worker"
    transcripts, names, configs, labels, scorers, settings = _WORKER
    return [_job(transcripts[j], names[j], configs[i], labels[i], i, j, scorers, settings) for i, j in jobs]


def _batches(jobs: list[tuple[int, int]], transcripts: Sequence[Transcript], workers: int) -> list[list[tuple[int, int]]]:
    """Jobs cut into runs of one transcript after another, the longest transcripts first.

    A run stays on one transcript as long as it can, so a worker replays it under several configs
    back to back (the memoized mention tokens stay warm); longest first, so the last batches,
    which decide when the grid ends, are short ones.
    """
    order = sorted(jobs, key=lambda ij: (-len(transcripts[ij[1]].messages), ij[1], ij[0]))
    size = max(1, math.ceil(len(order) / (workers * _BATCHES_PER_WORKER)))
    return [order[k : k + size] for k in range(0, len(order), size)]


def _failed(jobs: list[tuple[int, int]], why: str) -> list[Cell]:
    return [Cell(i, j, None, why) for i, j in jobs]


def _run_processes(transcripts: Sequence[Transcript], names: list[str], dumped: list[dict[str, Any]], labels: list[str],
                   jobs: list[tuple[int, int]], processes: int, tick: Callable[[list[Cell]], None], scorers: tuple[Scorer, ...] = (),
                   settings: dict[str, Any] | None = None) -> None:
    workers = min(processes, len(jobs))
    # A key in a scorer (the probe settings) reaches the workers through the pool's pipe, in memory, never a file.
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=_context(), initializer=_init_worker,
                               initargs=(list(transcripts), names, dumped, labels, scorers, settings, os.getpid()))
    try:
        pending: dict[Future[list[Cell]], list[tuple[int, int]]] = {pool.submit(_batch, b): b for b in _batches(jobs, transcripts, workers)}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                batch = pending.pop(f)
                try:
                    cells = f.result()
                except Exception as e:  # noqa: BLE001 - a dead worker fails its jobs, not the grid
                    cells = _failed(batch, f"worker failed: {type(e).__name__}: {e}")
                tick(cells)
    except BaseException:
        # Ctrl-C, SIGTERM (the CLI raises it as an interrupt), a failing progress callback: the workers go now.
        _stop_pool(pool)
        raise
    pool.shutdown(wait=True)


# --- Ray ---------------------------------------------------------------------------------------------

_REMOTE: Any = None
# Object refs of the last grid's transcripts, by identity, for the Ray session they were put in:
# a sweep that calls run_grid once per trial with the same transcripts ships each of them once.
_PUT: dict[str, Any] = {"session": None, "refs": {}}


def ray_module() -> ModuleType:
    """``ray``, or a ConfigError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError("Ray is not installed: pip install 'compaction-lab[ray]' (or pip install 'ray>=2.9')") from None
    return ray


def _connect(address: str) -> ModuleType:
    ray = ray_module()
    if not ray.is_initialized():
        try:
            # "auto": Ray's own lookup (RAY_ADDRESS, then a cluster `ray start` left on this machine), else a local runtime.
            ray.init(address=None if address == "auto" else address)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise LabError(f"cannot connect to Ray at {address}: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    return ray


def _refs(ray: ModuleType, transcripts: Sequence[Transcript]) -> list[Any]:
    ctx = ray.get_runtime_context()
    session = f"{ctx.get_node_id()}/{ctx.get_job_id()}"
    old: dict[int, tuple[Transcript, Any]] = _PUT["refs"] if _PUT["session"] == session else {}
    new: dict[int, tuple[Transcript, Any]] = {}
    for t in transcripts:
        if id(t) not in new:
            # The cache holds the transcript itself, so its id cannot be reused by another object while cached.
            new[id(t)] = old[id(t)] if id(t) in old and old[id(t)][0] is t else (t, ray.put(t))
    _PUT["session"], _PUT["refs"] = session, new
    return [new[id(t)][1] for t in transcripts]


def _run_ray(address: str, transcripts: Sequence[Transcript], names: list[str], dumped: list[dict[str, Any]], labels: list[str],
             jobs: list[tuple[int, int]], tick: Callable[[list[Cell]], None], scorers: tuple[Scorer, ...] = (),
             settings: dict[str, Any] | None = None) -> None:
    global _REMOTE
    ray = _connect(address)
    if _REMOTE is None:
        # Defined here, not with a decorator at import, so the lab imports without Ray installed.
        _REMOTE = ray.remote(_job)
    refs = _refs(ray, transcripts)
    # Task arguments may be stored or spilled by Ray: a key never goes with them.
    shipped = tuple(s.without_keys() for s in scorers)
    pending = {_REMOTE.remote(refs[j], names[j], dumped[i], labels[i], i, j, shipped, settings): (i, j) for i, j in jobs}
    while pending:
        # Whatever finished within a moment, not one ref per call: a wait over n refs costs O(n).
        done, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0.2)
        for ref in done:
            i, j = pending.pop(ref)
            try:
                cell = ray.get(ref)
            except ray.exceptions.RayError as e:  # the task's worker died or the object was lost
                cell = Cell(i, j, None, f"ray task failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            tick([cell])


def run_grid(
    transcripts: Sequence[Transcript],
    configs: Sequence[CompactionConfig],
    *,
    names: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
    processes: int = 1,
    progress: Progress | None = None,
    ray: str | None = None,
    probe: ProbeSpec | None = None,
    scorers: Sequence[Scorer] = (),
    settings: SettingsLike = None,
) -> list[list[Cell]]:
    """Replay every transcript under every config; ``result[i][j]`` is config ``i`` on transcript ``j``.

    ``names`` label the transcripts and ``labels`` the configs in each row (default: their positions).
    ``processes=1`` runs in this process; more runs that many local worker processes.
    ``ray="auto"`` (a cluster this machine knows, else a local Ray runtime) or ``ray=ADDRESS`` runs each
    job as a Ray task instead, and ``processes`` is not used; Ray is initialised only if it is not already.
    ``progress(done, total)`` is called as jobs finish. ``scorers`` add a column each to every row
    (``lab.evaluation.scorers``); ``probe`` is the LLM-probe scorer (the row's ``probe_score``; each job then
    makes model calls), run after the others. ``settings``: the one ``ReplaySettings`` (or mapping) every job
    is billed and timed with; None: the defaults.
    """
    if not isinstance(processes, int) or processes < 1:
        raise ConfigError(f"processes must be >= 1, got {processes!r}")
    if ray is not None and (not isinstance(ray, str) or not ray.strip()):
        raise ConfigError(f"ray must be 'auto' or a cluster address, got {ray!r}")
    names = list(names) if names is not None else [str(j) for j in range(len(transcripts))]
    labels = list(labels) if labels is not None else [c.label for c in configs]
    if len(names) != len(transcripts) or len(labels) != len(configs):
        raise ConfigError(f"{len(names)} names for {len(transcripts)} transcripts, {len(labels)} labels for {len(configs)} configs")
    scoring = (*scorers, probe) if probe is not None else tuple(scorers)
    columns = [s.column for s in scoring]
    if len(set(columns)) != len(columns):
        raise ConfigError(f"two scorers fill one column: {', '.join(columns)}")
    dumped = [c.model_dump(mode="json") for c in configs]
    # Shipped as JSON like the configs, so every mode validates the same thing.
    rs = resolve_settings(settings).model_dump(mode="json")
    jobs = [(i, j) for j in range(len(transcripts)) for i in range(len(configs))]
    out: list[list[Cell | None]] = [[None] * len(transcripts) for _ in configs]
    done = 0

    def tick(cells: list[Cell]) -> None:
        nonlocal done
        for cell in cells:
            out[cell.config][cell.transcript] = cell
        done += len(cells)
        if progress is not None:
            progress(done, len(jobs))

    if not jobs:
        pass
    elif ray is not None:
        _run_ray(ray.strip(), transcripts, names, dumped, labels, jobs, tick, scoring, rs)
    elif processes == 1 or len(jobs) == 1:
        for i, j in jobs:
            tick([_job(transcripts[j], names[j], dumped[i], labels[i], i, j, scoring, rs)])
    else:
        _run_processes(transcripts, names, dumped, labels, jobs, processes, tick, scoring, rs)
    return [[c for c in row if c is not None] for row in out]
