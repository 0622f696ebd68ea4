"""Bring a plotly ``FigureWidget`` up to date with a freshly drawn figure without replacing the widget.

A new widget per control move would redraw the output cell, lose the zoom and
send the whole figure again. Instead, traces are matched by name: a trace in
both keeps its place and gets the new data, one that is gone is dropped, one
that is new is added, and the order becomes the new figure's. The layout
(title, the selected-request line, the recall axis) is merged in rather than
replaced, so a zoom the user made (the axes' ranges) survives; the shapes are
replaced whole, and the template, which never changes between two charts of
one kind, is not sent again.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

__all__ = ["update_in_place"]

# Trace keys the widget owns: the type never changes under one name, and the uid identifies the trace in the browser.
_OWNED = ("type", "uid")


def _props(trace: Any) -> dict[str, Any]:
    data = trace.to_plotly_json()
    for key in _OWNED:
        data.pop(key, None)
    return data


def update_in_place(widget: go.FigureWidget, fresh: go.Figure) -> None:
    """Make ``widget`` show ``fresh``; the widget object and the traces both share stay the same objects."""
    names = [t.name for t in fresh.data]
    if len(set(names)) != len(names) or len({t.name for t in widget.data}) != len(widget.data):
        # Without unique names traces cannot be matched: start over on the same widget.
        widget.data = ()
        widget.add_traces(list(fresh.data))
    else:
        wanted = set(names)
        kept = [t for t in widget.data if t.name in wanted and t.type == fresh.data[names.index(t.name)].type]
        if len(kept) != len(widget.data):
            widget.data = tuple(kept)
        have = {t.name for t in widget.data}
        new = [t for t in fresh.data if t.name not in have]
        if new:
            widget.add_traces(new)
        order = {name: i for i, name in enumerate(names)}
        if [t.name for t in widget.data] != names:
            widget.data = tuple(sorted(widget.data, key=lambda t: order[t.name]))
        by_name = {t.name: t for t in widget.data}
        with widget.batch_update():
            for t in fresh.data:
                by_name[t.name].update(_props(t), overwrite=True)
    layout = fresh.layout.to_plotly_json()
    layout.pop("template", None)
    with widget.batch_update():
        widget.layout.shapes = ()
        widget.update_layout(layout)
