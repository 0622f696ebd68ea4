"""What one slider move costs on its way to the replay: the config serialised at most once, and validated at most once.

Issue 29: a move used to dump or re-validate the whole config five times (the widget's copy, the cache key,
the cache's parse back, the resume key, the dedup stage's key). A config is now a frozen value whose JSON form
and fingerprint are computed once, and every cache is keyed on that fingerprint.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel
from streamlit.testing.v1 import AppTest

from lab.core.config import STAGE_FIELDS, CompactionConfig
from tests.app.conftest import load_sample, new_app, no_exception, switch_to

# The agent config and its sections: what "the config" is here.
CONFIG_MODELS = (CompactionConfig, *(CompactionConfig.model_fields[s].annotation for s in STAGE_FIELDS))
SERIALISE = ("model_dump", "model_dump_json")
VALIDATE = ("model_validate", "model_validate_json")


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[tuple[str, str]]:
    """(model, method) -> calls on a config model, from any thread (AppTest runs the script in its own)."""
    calls: collections.Counter[tuple[str, str]] = collections.Counter()

    def count(owner: type, name: str) -> None:
        if owner in CONFIG_MODELS:
            calls[(owner.__name__, name)] += 1

    def instance_method(name: str) -> Callable[..., Any]:
        real = getattr(BaseModel, name)

        def wrapper(self: BaseModel, *args: Any, **kwargs: Any) -> Any:
            count(type(self), name)
            return real(self, *args, **kwargs)

        return wrapper

    def class_method(name: str) -> classmethod:  # type: ignore[type-arg]
        real = BaseModel.__dict__[name].__func__

        def wrapper(cls: type[BaseModel], *args: Any, **kwargs: Any) -> Any:
            count(cls, name)
            return real(cls, *args, **kwargs)

        return classmethod(wrapper)

    real_init = BaseModel.__init__

    def init(self: BaseModel, /, **data: Any) -> None:
        count(type(self), "__init__")
        real_init(self, **data)

    for name in SERIALISE:
        monkeypatch.setattr(BaseModel, name, instance_method(name))
    for name in VALIDATE:
        monkeypatch.setattr(BaseModel, name, class_method(name))
    monkeypatch.setattr(BaseModel, "__init__", init)
    return calls


def _ratio_key(at: AppTest, prefix: str) -> str:
    # Loading a session applies its window and prices, which rebuilds the widgets under a new generation.
    return f"{prefix}{at.session_state.get('lab.widget_gen', 0)}:watermark.ratio"


@pytest.mark.parametrize(("page", "prefix"), [("pipeline", "cfg"), ("timeline", "tl")], ids=["pipeline-page", "timeline-knob"])
def test_a_slider_move_serialises_the_config_at_most_once(counted: collections.Counter[tuple[str, str]], page: str, prefix: str) -> None:
    at = switch_to(load_sample(new_app()), page)
    before = at.session_state["lab.config"]
    at.slider(key=_ratio_key(at, prefix)).set_value(0.7)
    counted.clear()
    at.run()
    no_exception(at)
    moved = at.session_state["lab.config"]
    assert moved.watermark.ratio == 0.7 and before.watermark.ratio != 0.7
    # The sections the move did not touch are the same objects: nothing was copied or re-read.
    assert all(getattr(moved, s) is getattr(before, s) for s in STAGE_FIELDS if s != "watermark")
    serialised = sum(n for (model, name), n in counted.items() if name in SERIALISE)
    validated = sum(n for (model, name), n in counted.items() if name not in SERIALISE)
    assert serialised <= 1, dict(counted)
    # Only the moved value is checked, against its field (lab.core.frozen.with_value): no model around it is validated again.
    assert validated <= 1 and not any(model == "CompactionConfig" for model, name in counted if name not in SERIALISE), dict(counted)


def test_a_rerun_without_a_move_serialises_nothing(counted: collections.Counter[tuple[str, str]]) -> None:
    at = switch_to(load_sample(new_app()), "timeline")
    counted.clear()
    at.run()
    no_exception(at)
    assert not counted, dict(counted)
