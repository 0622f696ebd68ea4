"""``explore``: the lab's timeline, config and diff as one interactive widget in a notebook.

    import lab
    ex = lab.explore("session.jsonl", "mewcode", window="proposed")
    ex                                   # controls, the timeline, the request picker and its diff
    ex.set("watermark.ratio", 0.6)       # the same as moving the slider
    ex.set("replay.pricing.input_per_mtok", 2.0)   # a replay setting: paths under replay.
    lab.dump_config(ex.config)           # export what you tuned (ex.settings: the replay settings)

Every control comes from the field specs of the config and of the replay
settings (``lab.fields``), as the app's do. Moving one validates the new config, replays the transcript and
updates the plotly ``FigureWidget`` in place: traces that exist in both the
old and new chart get their data replaced, so the widget (and its zoom) stays
on the page. A rejected value is put back and the reason shown.
"""

from __future__ import annotations

import os
from html import escape
from typing import Any, Literal
from collections.abc import Sequence

import ipywidgets as w
import plotly.graph_objects as go

from .. import figures
from ..core.config import CompactionConfig
from ..core.diagnostics import inactive_by_design
from ..core.messages import Message, Transcript
from ..errors import LabError
from ..fields import FieldSpec, run_with_value
from ..replayer.engine import replay
from ..replayer.prices import cost_text
from ..replayer.report import Report, Row, describe_compactions
from ..replayer.settings import ReplaySettings, SettingsLike, resolve_settings
from ..replayer.inputs import ConfigLike, as_transcript, resolve_config
from .controls import Controls
from .figure_update import update_in_place
from .request_view import BEFORE, Before, request_html
from ..replayer.window import propose_window, settings_for

__all__ = ["Explorer", "explore", "notable"]

WindowChoice = int | Literal["proposed"] | None


def notable(row: Row) -> bool:
    """A request where something happened: tokens freed, a boundary, an overflow, a recovery, a failure, an open breaker."""
    if row.boundary_placed or row.overflowed or row.recovered or row.failed or row.breaker_open:
        return True
    return any(ev.get("tokens_before", 0) != ev.get("tokens_after", 0) for ev in row.events)


class Explorer:
    """The notebook explorer: ``config``, ``settings`` and ``report`` are always the current ones; ``widget`` is what is shown."""

    def __init__(self, transcript: Transcript | str | os.PathLike[str] | Sequence[Message], config: ConfigLike = None,
                 settings: SettingsLike = None, *, window: WindowChoice = None) -> None:
        self.transcript = as_transcript(transcript)
        self._settings = resolve_settings(settings)
        self._config, note = self._initial_config(config, window)
        self._report = replay(self.transcript, self._config, settings=self._settings)
        self.controls = Controls(self._config, self._changed, self._settings)
        self.figure = go.FigureWidget(figures.timeline(self._report, selected=0 if self._report.rows else None))
        self.request = w.IntSlider(value=0, min=0, max=max(len(self._report.rows) - 1, 0), description="Request",
                                   continuous_update=False, tooltip="The request whose diff and events are shown below")
        self.jump = w.Dropdown(description="Jump to", style={"description_width": "initial"},
                               tooltip="Requests where something happened: tokens freed, a boundary, an overflow or a failure")
        self.before = w.ToggleButtons(options=list(BEFORE), value=BEFORE[0], tooltip="What the sent context is compared with")
        self.detail = w.HTML()
        self.status = w.HTML()
        self.note = w.HTML(f"<p><i>{escape(note)}</i></p>" if note else "")
        self.request.observe(lambda _: self._picked(), names="value")
        self.before.observe(lambda _: self._show_request(), names="value")
        self.jump.observe(self._jumped, names="value")
        self.widget = w.VBox([
            self.note, self.controls.box, self.status, self.figure,
            w.HBox([self.request, self.jump]), self.before, self.detail,
        ])
        self._refresh_jump()
        self._show_status(None)
        self._show_request()

    def _initial_config(self, config: ConfigLike, window: WindowChoice) -> tuple[CompactionConfig, str]:
        if window != "proposed":
            return resolve_config(config, window), ""
        # Imported here: the proposal is an extra pass over the session, paid only when asked for.

        cfg = resolve_config(config)
        proposal = propose_window(self.transcript, config=cfg, settings=self._settings)
        if proposal.window is not None:
            cfg = resolve_config(cfg, proposal.window)
            # Measured with the hidden part counted: the replays count it too, as the app's and the CLI's do.
            self._settings = settings_for(proposal, self._settings)
        return cfg, proposal.reason

    # -- what a user reads -------------------------------------------------------------------

    @property
    def config(self) -> CompactionConfig:
        """A copy of the current config, e.g. for ``lab.dump_config``."""
        return self._config.model_copy(deep=True)

    @property
    def settings(self) -> ReplaySettings:
        """A copy of the current replay settings, e.g. for ``lab.replayer.settings.dump_settings``."""
        return self._settings.model_copy(deep=True)

    @property
    def report(self) -> Report:
        """The replay under the current config and settings."""
        return self._report

    def set(self, path: str, value: Any) -> None:
        """Set one setting by dotted path (``"watermark.ratio"``, ``"replay.cache.enabled"``), exactly as moving its control does."""
        if path not in self.controls.widgets:
            raise LabError(f"no config control {path!r}; one of: {', '.join(self.controls.widgets)}")
        self.controls.widgets[path].value = self.controls.to_shown(path, value)

    def select(self, k: int) -> None:
        """Show request ``k``."""
        self.request.value = k

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    # -- reactions ---------------------------------------------------------------------------

    def _changed(self, spec: FieldSpec, value: Any, old: Any) -> None:
        try:
            config, settings = run_with_value(self._config, self._settings, spec.path, value)
            report = replay(self.transcript, config, settings=settings)
        except LabError as e:
            self.controls.show(spec.path, old)
            self._show_status(f"{spec.path}: {e}")
            return
        self._config, self._settings, self._report = config, settings, report
        self.controls.follow(config, settings)
        n = len(report.rows)
        self.request.max = max(n - 1, 0)
        self._refresh_jump()
        self._redraw()
        self._show_status(None)
        self._show_request()

    def _picked(self) -> None:
        self._redraw()
        self._show_request()

    def _jumped(self, change: dict[str, Any]) -> None:
        if change["new"] is not None:
            self.request.value = change["new"]

    # -- drawing -----------------------------------------------------------------------------

    def _redraw(self) -> None:
        selected = self.request.value if self._report.rows else None
        update_in_place(self.figure, figures.timeline(self._report, selected=selected))

    def _refresh_jump(self) -> None:
        hits = [r for r in self._report.rows if notable(r)]
        options: list[tuple[str, int | None]] = [(f"{len(hits)} request(s) where something happened", None)]
        for r in hits:
            stages = ", ".join(sorted({str(e.get("stage")) for e in r.events if e.get("tokens_before") != e.get("tokens_after")}))
            options.append((f"request {r.index}" + (f": {stages}" if stages else ""), r.index))
        self.jump.options = options
        self.jump.value = None

    def _show_status(self, error: str | None) -> None:
        r = self._report
        # The same words as the CLI and the app: compactions by kind, content beside names recall.
        content = "n/a" if r.content_recall is None else f"{r.content_recall:.1%}"
        names = "n/a" if r.needed_later_recall is None else f"{r.needed_later_recall:.1%}"
        line = (f"{len(r.rows)} requests at a {r.window:,}-token window: peak sent {r.peak_sent:,} of raw {r.peak_raw:,}, "
                f"{describe_compactions(r.compactions_by_kind)}, {r.failures} failure(s), {r.overflows} overflow(s), "
                f"{r.invalid_requests} invalid; content recall {content} ({r.content_needed} needed"
                f"{', too few to rank configs' if r.content_thin else ''}), names recall {names}; "
                f"re-read {r.reread_tokens:,} tokens; cost {cost_text(r.total_cost, r.settings)}")
        err = f"<p style='color: #b00020'><b>Not applied:</b> {escape(error)}</p>" if error else ""
        # Beside the numbers: what this config skips at this window on purpose (a larger peak at a smaller window).
        off = "".join(f"<p><i>Inactive by design: {escape(note)}.</i></p>" for note in self.inactive)
        self.status.value = f"{err}<p>{escape(line)}</p>{off}"

    @property
    def inactive(self) -> list[str]:
        """What the current config does not do at its window by design (``lab.core.diagnostics.inactive_by_design``)."""
        return inactive_by_design(self._config)

    def _show_request(self) -> None:
        if not self._report.rows:
            self.detail.value = "<p><i>This transcript has no model requests: there is nothing to show.</i></p>"
            return
        before: Before = self.before.value
        self.detail.value = request_html(self._report, self.request.value, before)


def explore(transcript: Transcript | str | os.PathLike[str] | Sequence[Message], config: ConfigLike = None,
            settings: SettingsLike = None, *, window: WindowChoice = None) -> Explorer:
    """An interactive explorer of ``transcript`` (a Transcript or a path) under ``config`` (a preset name, config or mapping).

    ``settings``: the replay settings (``ReplaySettings`` or a mapping; None: the defaults), tunable in its Replay section.
    ``window``: an int overrides the config's window; ``"proposed"`` uses the window the lab proposes for this
    session (``lab.replayer.window.propose_window``), so the config has something to do; None keeps the config's.
    """
    return Explorer(transcript, config, settings, window=window)
