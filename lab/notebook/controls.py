"""ipywidgets controls generated from the field specs of the config and the replay settings, one section per stage.

The specs come from ``lab.fields``, the same ones the Streamlit app draws, so
a field's bounds, help text (shown as the tooltip) and choices are declared
once, on the pydantic model. ``Controls`` holds one widget per setting by
dotted path and reports each change as a model-side value; it knows nothing
about replays. The replay settings come last, as the "Replay" section, their
paths under ``replay.`` (``lab.fields.settings_specs``).

A setting that has no effect under the rest of the config or settings
(``lab.fields.inactive_run_fields``) is disabled, with the reason as its
tooltip, as in the app.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

import ipywidgets as w

from ..core.config import STAGE_FIELDS, CompactionConfig
from ..fields import SETTINGS_GROUP, FieldSpec, config_specs, from_widget, humanize, inactive_run_fields, run_values, settings_specs, to_widget
from ..replayer.settings import ReplaySettings

__all__ = ["Controls", "control", "OnChange"]

OnChange = Callable[[FieldSpec, Any, Any], None]
_STYLE = {"description_width": "initial"}


def control(spec: FieldSpec, value: Any) -> w.ValueWidget:
    """One widget for ``spec`` showing ``value``; it only fires when the user lets go (no replay per keystroke)."""
    shown = to_widget(spec, value)
    common: dict[str, Any] = {"description": spec.label, "tooltip": spec.help or None, "style": _STYLE}
    if spec.kind == "toggle":
        return w.Checkbox(value=bool(shown), indent=False, **common)
    if spec.kind == "select":
        options = list(spec.options)
        if shown not in options:
            options.append(shown)
        return w.Dropdown(options=options, value=shown, **common)
    if spec.kind in ("slider", "number"):
        return _numeric(spec, shown, common)
    if spec.kind == "textarea":
        return w.Textarea(value=shown, continuous_update=False, **common)
    return w.Text(value=shown, continuous_update=False, **common)


def _numeric(spec: FieldSpec, shown: Any, common: dict[str, Any]) -> w.ValueWidget:
    lo, hi = spec.min_value, spec.max_value
    if spec.kind == "slider" and lo is not None and hi is not None:
        cls = w.IntSlider if spec.is_int else w.FloatSlider
        return cls(value=shown, min=lo, max=hi, step=spec.step, continuous_update=False, **common)
    # Bounded text boxes default to 0..100 and would clamp a 200k window, so a missing bound stays unbounded.
    if lo is not None and hi is not None:
        cls = w.BoundedIntText if spec.is_int else w.BoundedFloatText
        return cls(value=shown, min=lo, max=hi, step=spec.step, continuous_update=False, **common)
    cls = w.IntText if spec.is_int else w.FloatText
    return cls(value=shown, step=spec.step, continuous_update=False, **common)


class Controls:
    """Every setting of a ``CompactionConfig`` and its ``ReplaySettings`` as a widget.

    Window and counter on top, then one accordion section per stage, then the replay settings.
    """

    def __init__(self, config: CompactionConfig, on_change: OnChange, settings: ReplaySettings | None = None) -> None:
        settings = settings if settings is not None else ReplaySettings()
        self.specs: dict[str, FieldSpec] = {s.path: s for s in [*config_specs(), *settings_specs()]}
        values = run_values(config, settings, self.specs.values())
        self.widgets: dict[str, w.ValueWidget] = {p: control(s, values[p]) for p, s in self.specs.items()}
        self._on_change = on_change
        # Set while the explorer writes a value back (a rejected change), so that write is not a new change.
        self._quiet = False
        for path, widget in self.widgets.items():
            widget.observe(self._observer(path), names="value")
        self.sections = self._sections(config)
        self.box = w.VBox([self._row(""), self.sections])
        self.follow(config, settings)

    def _observer(self, path: str) -> Callable[[dict[str, Any]], None]:
        spec = self.specs[path]

        def observe(change: dict[str, Any]) -> None:
            if not self._quiet:
                self._on_change(spec, from_widget(spec, change["new"]), from_widget(spec, change["old"]))

        return observe

    def _row(self, group: str) -> w.Box:
        widgets = [self.widgets[p] for p, s in self.specs.items() if s.group == group]
        return w.HBox(widgets) if not group else w.VBox(widgets)

    def _sections(self, config: CompactionConfig) -> w.Accordion:
        groups = (*STAGE_FIELDS, SETTINGS_GROUP)
        acc = w.Accordion(children=[self._row(g) for g in groups])
        for i, group in enumerate(groups):
            acc.set_title(i, self._title(group, config))
        self._groups = groups
        return acc

    @staticmethod
    def _title(group: str, config: CompactionConfig) -> str:
        enabled = getattr(getattr(config, group, None), "enabled", True)
        return humanize(group) + ("" if enabled else " (off)")

    def follow(self, config: CompactionConfig, settings: ReplaySettings) -> None:
        """Section titles say which stages are off, and idle settings are disabled with the reason as tooltip."""
        for i, group in enumerate(self._groups):
            self.sections.set_title(i, self._title(group, config))
        idle = inactive_run_fields(config, settings)
        for path, widget in self.widgets.items():
            reason = idle.get(path)
            widget.disabled = reason is not None
            help_text = self.specs[path].help
            widget.tooltip = f"{help_text}\n\nNo effect now: {reason}" if reason else (help_text or None)

    def to_shown(self, path: str, value: Any) -> Any:
        """A model-side value as the widget at ``path`` holds it (a list as comma-separated text, ...)."""
        return to_widget(self.specs[path], value)

    def show(self, path: str, value: Any) -> None:
        """Put a model-side value in a widget without reporting it as a change."""
        self._quiet = True
        try:
            self.widgets[path].value = self.to_shown(path, value)
        finally:
            self._quiet = False
