"""Bench section "app": seconds from a slider change to a redrawn timeline, through Streamlit's AppTest.

Two sessions go through the app as a user would bring them:

- corpus: the largest corpus transcript, uploaded through the Session page;
- generated: a session of ``GENERATED_REQUESTS`` model requests made on the
  Session page's Generate tab (``lab.generator``, seed ``GENERATED_SEED``, as
  the growth bench in ``lab.bench.replay`` makes its sessions).

Loading a session applies the window it proposes. Then the Timeline page is
opened and the watermark-ratio knob beside the chart is moved to values not
seen before (each one a cache miss: a fresh replay plus the three figures)
and back to one already seen (a cache hit: drawing only). Each figure is the
wall time of one ``AppTest.run()``, the closest thing to "the browser sent a
widget change and got the page back" without a browser. A move's replay
resumes from the previous position's checkpoint where the two configs still
agree (``lab.replayer.resume``), as it does for a user. The core's own time
to replay every request for the same configs (the app's, at the window it
applied; ``resume=False``) is printed beside it, so what the resume saves
and what the app adds can both be told apart. The target is ``TARGET_SECONDS`` for the corpus session and
``GENERATED_TARGET_SECONDS`` for the generated one.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterator

from . import CorpusMissing, corpus_files, register_section

__all__ = [
    "TARGET_SECONDS",
    "GENERATED_TARGET_SECONDS",
    "GENERATED_REQUESTS",
    "GENERATED_SEED",
    "bench_app",
    "bench_app_generated",
    "knob_key",
]

TARGET_SECONDS = 0.5
GENERATED_TARGET_SECONDS = 1.0
GENERATED_REQUESTS = 2_000
GENERATED_SEED = 3
_APP = Path(__file__).resolve().parents[1] / "app.py"
_KNOB = "watermark.ratio"


def knob_key(at: Any, path: str = _KNOB) -> str:
    """The Timeline knob's widget key now: loading a session applies its window, which starts a new widget generation."""
    from ..ui import keys

    gen = at.session_state.get(keys.GEN, 0)
    return f"tl{gen}:{path}"


def _timed_run(at: Any) -> float:
    start = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - start
    if at.exception:
        raise RuntimeError(f"the app raised: {[e.value for e in at.exception]}")
    return elapsed


@contextmanager
def _app_tmp() -> Iterator[None]:
    """The app's session folders go to a fresh temp dir, removed afterwards."""
    tmp = tempfile.mkdtemp(prefix="lab-bench-app-")
    old_tmp = os.environ.get("LAB_APP_TMP")
    os.environ["LAB_APP_TMP"] = tmp
    try:
        yield
    finally:
        if old_tmp is None:
            os.environ.pop("LAB_APP_TMP", None)
        else:
            os.environ["LAB_APP_TMP"] = old_tmp
        shutil.rmtree(tmp, ignore_errors=True)


def _drive(load_session: Callable[[Any], None], moves: int, core_repeats: int) -> dict[str, Any]:
    """Start the app, load a session with ``load_session(at)``, then time the Timeline knob; see the module docstring."""
    from streamlit.testing.v1 import AppTest

    from ..core.config import CompactionConfig
    from ..replayer import replay
    from ..ui import keys

    with _app_tmp():
        at = AppTest.from_file(str(_APP), default_timeout=1800)
        first_run = _timed_run(at)
        start = time.perf_counter()
        load_session(at)
        load = time.perf_counter() - start
        at.switch_page("../pages/timeline.py")
        first_timeline = _timed_run(at)
        ratios = [round(0.84 - 0.03 * i, 2) for i in range(moves)]
        misses = []
        for r in ratios:
            at.slider(key=knob_key(at)).set_value(r)
            misses.append(_timed_run(at))
        at.slider(key=knob_key(at)).set_value(ratios[0])
        hit = _timed_run(at)
        # The app's own config (the window it applied, the preset's other settings) and transcript.
        config: CompactionConfig = at.session_state[keys.CONFIG]
        transcript = at.session_state[keys.TRANSCRIPT]
        label = at.session_state[keys.LABEL]
    if config.watermark.ratio != ratios[0]:
        raise RuntimeError(f"the knob did not reach the config: ratio {config.watermark.ratio}, set {ratios[0]}")

    core_times = []
    for r in ratios[:core_repeats]:
        cfg = config.model_copy(deep=True)
        cfg.watermark.ratio = r
        start = time.perf_counter()
        core = replay(transcript, cfg, resume=False)
        core_times.append(time.perf_counter() - start)
    return {
        "transcript": label,
        "messages": len(transcript.messages),
        "requests": core.requests,
        "window": config.window,
        "app_first_run_s": round(first_run, 3),
        "load_and_overview_s": round(load, 3),
        "first_timeline_s": round(first_timeline, 3),
        "slider_to_timeline_s": [round(x, 3) for x in misses],
        "slider_to_timeline_median_s": round(statistics.median(misses), 3),
        "slider_to_timeline_cached_s": round(hit, 3),
        "core_replay_s": round(statistics.median(core_times), 3),
    }


def _verdict(data: dict[str, Any], target: float) -> dict[str, Any]:
    median = data["slider_to_timeline_median_s"]
    return {**data, "target_s": target, "ratio_to_target": round(median / target, 2), "meets_target": median <= target}


def bench_app(path: Path, moves: int = 5) -> dict[str, Any]:
    """The knob on ``path``, uploaded through the Session page."""

    def upload(at: Any) -> None:
        at.file_uploader(key="session.upload").set_value((path.name, path.read_bytes(), "application/octet-stream"))
        _timed_run(at)

    return _verdict(_drive(upload, moves, core_repeats=3), TARGET_SECONDS)


def bench_app_generated(requests: int = GENERATED_REQUESTS, moves: int = 3, seed: int = GENERATED_SEED) -> dict[str, Any]:
    """The knob on a session generated on the Session page's Generate tab."""

    def generate(at: Any) -> None:
        at.number_input(key="gen:requests").set_value(requests)
        at.number_input(key="gen:seed").set_value(seed)
        submit = [b for b in at.button if b.label == "Generate session"]
        if len(submit) != 1:
            raise RuntimeError(f"the Session page has {len(submit)} 'Generate session' buttons, expected 1")
        submit[0].click()
        _timed_run(at)

    data = _drive(generate, moves, core_repeats=1)
    if data["requests"] != requests:
        raise RuntimeError(f"the app generated {data['requests']} requests, asked for {requests}")
    return _verdict(data, GENERATED_TARGET_SECONDS)


def _lines(title: str, data: dict[str, Any]) -> list[str]:
    verdict = "meets" if data["meets_target"] else "misses"
    return [
        f"{title}: {data['transcript']} ({data['messages']} messages, {data['requests']} requests, window {data['window']:,} as applied on load)",
        f"  load + overview: {data['load_and_overview_s']:.2f} s; first timeline: {data['first_timeline_s']:.2f} s",
        f"  slider change -> redrawn timeline (new value, replay + figures): median {data['slider_to_timeline_median_s']:.3f} s "
        f"over {len(data['slider_to_timeline_s'])} moves {data['slider_to_timeline_s']}",
        f"    = {data['ratio_to_target']:.2f} x the {data['target_s']} s target ({verdict} it)",
        f"  slider back to a value seen before (cached replay, drawing only): {data['slider_to_timeline_cached_s']:.3f} s",
        f"  core replay of every request for the same configs, no resume (median): {data['core_replay_s']:.3f} s",
    ]


def _section(quick: bool) -> tuple[list[str], dict]:
    lines: list[str] = []
    data: dict[str, Any] = {}
    try:
        files = corpus_files()
    except CorpusMissing as e:
        # The generated session needs no corpus: only the corpus half is skipped.
        lines.append(f"largest corpus transcript: skipped: {e}")
    else:
        largest = max(files, key=lambda p: p.stat().st_size)
        data["corpus"] = bench_app(largest, moves=3 if quick else 5)
        lines += _lines("largest corpus transcript", data["corpus"])
    data["generated"] = bench_app_generated(moves=2 if quick else 3)
    lines += _lines(f"generated session ({GENERATED_REQUESTS:,} requests)", data["generated"])
    return lines, data


register_section("app", _section)
