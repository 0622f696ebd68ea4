"""The lab inside Jupyter: ``explore(transcript, config)`` returns an interactive explorer.

Needs the ``notebook`` extra (ipywidgets, and anywidget for plotly's
``FigureWidget``); nothing else in the lab imports this package, so the core
and the app run without them. The worked example, ``quickstart.ipynb``, ships
here as package data, beside the explorer it drives.
"""

from .explore import Explorer, explore, notable
from .request_view import events_html, request_html

__all__ = ["Explorer", "explore", "notable", "request_html", "events_html"]
