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

Then the page timings of issue 31 (its slow spots: Timeline after a slider move, Diff at an 11k window), each
against ``TARGET_SECONDS``, for two sessions a new user brings:

- sample: the sample the empty state loads with one click (``lab.ui.transcript.DEFAULT_SAMPLE``);
- sized: the corpus transcript whose message count is nearest ``SIZED_MESSAGES``, uploaded.

For each: a move of the Timeline's watermark knob (a new value: replay and figures), a switch between the pages
that show the replay (``SWITCH_PAGES``, the replay cached), and the Diff page at a ``DIFF_WINDOW`` window (the
window set on the Timeline, then Diff opened, its "next with events" button, and its last request, the longest
context). Each figure is again one ``AppTest.run()``; the verdict takes the median of the knob moves and the
slowest of the switches and of the Diff runs, so "meets" means every page the user opens meets it.
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

from ..errors import LabError
from . import CorpusMissing, corpus_files, register_section
from ..ui import keys
from ..core.config import CompactionConfig
from ..replayer import replay
from ..formats import load

__all__ = [
    "TARGET_SECONDS",
    "GENERATED_TARGET_SECONDS",
    "GENERATED_REQUESTS",
    "GENERATED_SEED",
    "bench_app",
    "bench_app_generated",
    "bench_pages",
    "page_timings",
    "knob_key",
    "sized_session",
    "DIFF_WINDOW",
    "SIZED_MESSAGES",
    "SWITCH_PAGES",
]

TARGET_SECONDS = 0.5
GENERATED_TARGET_SECONDS = 1.0
GENERATED_REQUESTS = 2_000
GENERATED_SEED = 3
# Issue 31's slow spots: a Diff at an 11k window, a session of about 120 messages.
DIFF_WINDOW = 11_000
SIZED_MESSAGES = 120
# The pages that draw the loaded replay, in a user's order; the last brings the run back to the Timeline.
SWITCH_PAGES = ("summary", "diff", "pipeline", "export", "session", "timeline")
_APP = Path(__file__).resolve().parents[1] / "app.py"
_KNOB = "watermark.ratio"


def knob_key(at: Any, path: str = _KNOB) -> str:
    """The Timeline knob's widget key now: loading a session applies its window, which starts a new widget generation."""
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
    # Streamlit (heavy) loads only when this section runs.
    from streamlit.testing.v1 import AppTest

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
        cfg = config.model_copy(update={"watermark": config.watermark.model_copy(update={"ratio": r})})
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
    return _verdict(_drive(_uploader(path), moves, core_repeats=3), TARGET_SECONDS)


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


def _page(at: Any, name: str) -> float:
    at.switch_page(f"../pages/{name}.py")
    return _timed_run(at)


def _knob_moves(at: Any, moves: int) -> list[float]:
    """The Timeline's watermark knob moved to ``moves`` values not seen before, each run timed."""
    seen = at.slider(key=knob_key(at)).value
    ratios = [r for r in (round(0.81 - 0.03 * i, 2) for i in range(moves + 1)) if r != seen][:moves]
    times = []
    for r in ratios:
        at.slider(key=knob_key(at)).set_value(r)
        times.append(_timed_run(at))
    return times


def _diff_at_window(at: Any, window: int) -> dict[str, float]:
    """From the Timeline: the window set to ``window``, then the Diff page opened, stepped and sent to its last request."""
    at.number_input(key=knob_key(at, "window")).set_value(window)
    out = {"window_set_on_timeline": _timed_run(at), "open": _page(at, "diff")}
    step = at.button(key="lab.diff.request.next")
    if not step.disabled:
        step.click()
        out["next_with_events"] = _timed_run(at)
    picker = at.number_input(key="lab.diff.request")
    picker.set_value(picker.max)
    out["last_request"] = _timed_run(at)
    return out


def bench_pages(load_session: Callable[[Any], None], moves: int = 3) -> dict[str, Any]:
    """Issue 31's page timings on the session ``load_session(at)`` brings; see the module docstring."""
    # Streamlit (heavy) loads only when this section runs.
    from streamlit.testing.v1 import AppTest

    with _app_tmp():
        at = AppTest.from_file(str(_APP), default_timeout=1800)
        _timed_run(at)
        load_session(at)
        first_timeline = _page(at, "timeline")
        knob = _knob_moves(at, moves)
        switches = {name: _page(at, name) for name in SWITCH_PAGES}
        diff = _diff_at_window(at, DIFF_WINDOW)
        transcript = at.session_state[keys.TRANSCRIPT]
        label = at.session_state[keys.LABEL]
        report_window = at.session_state[keys.CONFIG].window
    if report_window != DIFF_WINDOW:
        raise RuntimeError(f"the window knob did not reach the config: window {report_window}, set {DIFF_WINDOW}")
    worst = {"slider": statistics.median(knob), "switch": max(switches.values()), "diff": max(diff.values())}
    return {
        "transcript": label,
        "messages": len(transcript.messages),
        "first_timeline_s": round(first_timeline, 3),
        "slider_s": [round(x, 3) for x in knob],
        "switch_s": {k: round(v, 3) for k, v in switches.items()},
        "diff_window": DIFF_WINDOW,
        "diff_s": {k: round(v, 3) for k, v in diff.items()},
        "target_s": TARGET_SECONDS,
        "verdict_s": {k: round(v, 3) for k, v in worst.items()},
        "meets_target": {k: v <= TARGET_SECONDS for k, v in worst.items()},
    }


def sized_session(files: list[Path], messages: int = SIZED_MESSAGES) -> Path:
    """The transcript of ``files`` whose message count is nearest ``messages`` (ties: the first listed)."""
    counts = {}
    for path in files:
        try:
            counts[path] = len(load(path).messages)
        except LabError:
            continue  # a file the importers refuse is no candidate; the imports section reports it
    if not counts:
        raise CorpusMissing("no corpus transcript could be read")
    return min(counts, key=lambda p: abs(counts[p] - messages))


def _load_sample(at: Any) -> None:
    at.button(key="lab.load_sample").click()
    _timed_run(at)


def _uploader(path: Path) -> Callable[[Any], None]:
    def upload(at: Any) -> None:
        at.file_uploader(key="session.upload").set_value((path.name, path.read_bytes(), "application/octet-stream"))
        _timed_run(at)

    return upload


def _page_lines(title: str, data: dict[str, Any]) -> list[str]:
    target, meets = data["target_s"], data["meets_target"]

    def verdict(kind: str) -> str:
        seconds = data["verdict_s"][kind]
        return f"{seconds / target:.2f} x the {target} s target ({'meets' if meets[kind] else 'misses'} it)"

    switches = ", ".join(f"{k} {v:.3f}" for k, v in data["switch_s"].items())
    diff = ", ".join(f"{k.replace('_', ' ')} {v:.3f}" for k, v in data["diff_s"].items())
    return [
        f"{title}: {data['transcript']} ({data['messages']} messages); first timeline {data['first_timeline_s']:.2f} s",
        f"    slider move on Timeline (new value: replay + figures): median {data['verdict_s']['slider']:.3f} s over {data['slider_s']}"
        f" = {verdict('slider')}",
        f"    page switch (replay cached): slowest {data['verdict_s']['switch']:.3f} s ({switches}) = {verdict('switch')}",
        f"    Diff at window {data['diff_window']:,}: slowest {data['verdict_s']['diff']:.3f} s ({diff}) = {verdict('diff')}",
    ]


def page_timings(quick: bool) -> tuple[list[str], dict]:
    """Issue 31's page timings for the one-click sample and, with a corpus, its session nearest SIZED_MESSAGES messages."""
    moves = 2 if quick else 3
    lines = [f"page timings (target {TARGET_SECONDS} s per slider move, page switch and Diff run):"]
    data: dict[str, Any] = {"sample": bench_pages(_load_sample, moves)}
    lines += _page_lines("  one-click sample", data["sample"])
    try:
        sized = sized_session(corpus_files())
    except CorpusMissing as e:
        lines.append(f"  corpus session of ~{SIZED_MESSAGES} messages: skipped: {e}")
    else:
        data["sized"] = bench_pages(_uploader(sized), moves)
        lines += _page_lines(f"  corpus session nearest {SIZED_MESSAGES} messages", data["sized"])
    return lines, data


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
    page_lines, data["pages"] = page_timings(quick)
    return lines + page_lines, data


register_section("app", _section)
