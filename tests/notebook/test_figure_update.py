"""``update_in_place``: a FigureWidget shows a new chart while staying the same widget."""

from __future__ import annotations

import plotly.graph_objects as go

from lab.notebook.figure_update import update_in_place


def _fig(*traces: tuple[str, list[int]], title: str = "t") -> go.Figure:
    fig = go.Figure([go.Scatter(x=list(range(len(y))), y=y, name=name) for name, y in traces])
    fig.update_layout(title=title)
    return fig


def test_shared_traces_keep_their_objects_and_get_the_new_data() -> None:
    widget = go.FigureWidget(_fig(("a", [1, 2]), ("b", [3, 4])))
    a = widget.data[0]
    update_in_place(widget, _fig(("a", [5, 6, 7]), ("b", [8]), title="new"))
    assert widget.data[0] is a
    assert list(a.y) == [5, 6, 7] and list(widget.data[1].y) == [8]
    assert widget.layout.title.text == "new"


def test_gone_traces_are_dropped_new_ones_added_in_the_fresh_order() -> None:
    widget = go.FigureWidget(_fig(("a", [1]), ("gone", [2]), ("c", [3])))
    update_in_place(widget, _fig(("a", [1]), ("new", [9]), ("c", [4])))
    assert [t.name for t in widget.data] == ["a", "new", "c"]
    assert list(widget.data[1].y) == [9]


def test_the_selected_line_moves_rather_than_piling_up() -> None:
    widget = go.FigureWidget(_fig(("a", [1, 2, 3])))
    for x in (0, 2):
        fresh = _fig(("a", [1, 2, 3]))
        fresh.add_vline(x=x)
        update_in_place(widget, fresh)
    assert [s.x0 for s in widget.layout.shapes] == [2]


def test_duplicate_names_fall_back_to_a_full_redraw_on_the_same_widget() -> None:
    widget = go.FigureWidget(_fig(("a", [1]), ("a", [2])))
    update_in_place(widget, _fig(("a", [7]), ("a", [8]), ("b", [9])))
    assert [list(t.y) for t in widget.data] == [[7], [8], [9]]


def test_a_users_zoom_survives_an_update() -> None:
    widget = go.FigureWidget(_fig(("a", [1, 2, 3])))
    widget.layout.xaxis.range = [1, 2]  # what a zoom in the browser syncs back
    update_in_place(widget, _fig(("a", [1, 2, 3, 4]), title="after"))
    assert tuple(widget.layout.xaxis.range) == (1, 2)
    assert widget.layout.title.text == "after"
