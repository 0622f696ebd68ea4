"""as_current: a model kept across a Streamlit module reload comes back as the class imported now."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from lab.core.config import CompactionConfig
from lab.core.messages import Transcript
from lab.generator import generate
from lab.ui.reload import as_current


def _reimported(module: ModuleType) -> ModuleType:
    """What Streamlit's reload does: execute the module's source again, giving new class objects of the same names.

    The fresh module is not put in ``sys.modules``, so the rest of the test session keeps the classes it imported.
    """
    assert module.__spec__ is not None and module.__spec__.origin is not None
    spec = importlib.util.spec_from_file_location(module.__name__, module.__spec__.origin)
    assert spec is not None and spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    return fresh


@pytest.fixture(scope="module")
def stale_config_class() -> type[BaseModel]:
    cls = _reimported(sys.modules[CompactionConfig.__module__]).CompactionConfig
    assert cls is not CompactionConfig and cls.__qualname__ == CompactionConfig.__qualname__
    return cls


def _twin(fields: dict[str, tuple[type, object]], name: str = "Thing") -> type[BaseModel]:
    # A class statement run twice makes two class objects with one qualified name, as a reload does.
    ns: dict[str, object] = {"__annotations__": {k: t for k, (t, _) in fields.items()}, "model_config": ConfigDict(extra="forbid")}
    ns.update({k: default for k, (_, default) in fields.items()})
    return type(name, (BaseModel,), ns)


class TestCurrentClass:
    def test_an_instance_of_the_class_comes_back_as_it_is(self) -> None:
        cfg = CompactionConfig(window=50_000)
        assert as_current(cfg, CompactionConfig) is cfg

    def test_a_config_from_the_module_before_a_reload_is_rebuilt(self, stale_config_class: type[BaseModel]) -> None:
        stale = stale_config_class.model_validate(CompactionConfig(window=50_000).model_dump())
        assert not isinstance(stale, CompactionConfig)
        current = as_current(stale, CompactionConfig)
        assert type(current) is CompactionConfig
        assert current == CompactionConfig(window=50_000)

    def test_a_transcript_from_the_module_before_a_reload_is_rebuilt(self) -> None:
        stale_cls = _reimported(sys.modules[Transcript.__module__]).Transcript
        t = generate(requests=3)
        stale = stale_cls.model_validate(t.model_dump())
        current = as_current(stale, Transcript)
        assert type(current) is Transcript
        assert current.model_dump() == t.model_dump()

    def test_a_rebuilt_object_is_usable_where_the_current_class_is_required(self, stale_config_class: type[BaseModel]) -> None:
        # The reason for the helper: a new model refuses the stale instance as a field value.
        class Holder(BaseModel):
            config: CompactionConfig

        stale = stale_config_class()
        rebuilt = as_current(stale, CompactionConfig)
        assert rebuilt is not None
        assert Holder(config=rebuilt).config.window == CompactionConfig().window


class TestRefused:
    @pytest.mark.parametrize("obj", [None, 3, "CompactionConfig", {"window": 50_000}], ids=["none", "int", "str", "dict"])
    def test_what_is_no_model_is_refused(self, obj: object) -> None:
        assert as_current(obj, CompactionConfig) is None

    def test_a_model_of_another_name_is_refused(self) -> None:
        other = _twin({"window": (int, 50_000)}, name="NotAConfig")()
        assert as_current(other, CompactionConfig) is None

    def test_a_stale_twin_whose_fields_no_longer_fit_is_refused(self) -> None:
        # The reload changed the model: the stored object has a field the new class forbids.
        old, new = _twin({"a": (int, 1), "b": (int, 2)}), _twin({"a": (int, 1)})
        assert old is not new and old.__qualname__ == new.__qualname__
        assert as_current(old(), new) is None

    def test_a_stale_twin_that_fits_keeps_its_values(self) -> None:
        old, new = _twin({"a": (int, 1)}), _twin({"a": (int, 1), "b": (int, 2)})
        current = as_current(old(a=7), new)
        assert current is not None and type(current) is new
        assert current.model_dump() == {"a": 7, "b": 2}


@settings(max_examples=25, deadline=None)
@given(window=st.integers(min_value=CompactionConfig.model_fields["window"].metadata[0].ge, max_value=2_000_000))
def test_rebuilding_keeps_every_field(window: int) -> None:
    stale_cls = _twin({"window": (int, 0), "label": (str, "")}, name="CompactionConfig")
    stale = stale_cls(window=window, label="mine")
    current = as_current(stale, CompactionConfig)
    assert current is not None and (current.window, current.label) == (window, "mine")


def test_reload_needs_no_streamlit() -> None:
    code = "import sys, lab.ui.reload; print('streamlit' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"
