"""The search space: TOML parsing, bounds and types from the config model, and one error naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from lab.core.config import CompactionConfig
from lab.errors import ConfigError
from lab.fields import config_specs
from lab.tuning import EXAMPLE_SPACE, Param, load_space, parse_space

_NUMERIC = {s.path: s for s in config_specs() if s.kind in ("slider", "number") and s.min_value is not None and s.max_value is not None}


def _one(text: str) -> Param:
    space = parse_space(text)
    assert len(space.params) == 1
    return space.params[0]


class TestParsing:
    def test_example_space_parses_into_the_fields_it_names(self) -> None:
        space = parse_space(EXAMPLE_SPACE)
        kinds = {p.path: p.kind for p in space.params}
        assert kinds["spill.threshold"] == "int" and kinds["watermark.ratio"] == "float"
        assert kinds["microcompact.enabled"] == "choice" and kinds["spill.preview_format"] == "choice"
        assert space.paths == list(kinds)  # file order kept

    def test_int_range_stays_int_and_float_range_becomes_float(self) -> None:
        assert _one("spill.threshold = [1000, 20000]") == Param("spill.threshold", "int", 1000, 20000)
        share = _one("microcompact.trigger_window_share = [0, 1]")
        assert share.kind == "float" and isinstance(share.low, float) and isinstance(share.high, float)
        assert _one("watermark.ratio = [0.5, 1]") == Param("watermark.ratio", "float", 0.5, 1.0)

    def test_sections_and_dotted_keys_are_the_same_space(self) -> None:
        assert parse_space("[spill]\nthreshold = [1000, 2000]\n") == parse_space("spill.threshold = [1000, 2000]")

    def test_choices_of_a_literal_and_of_a_switch(self) -> None:
        assert _one('spill.preview_format = ["mewcode"]').choices == ("mewcode",)
        assert _one("microcompact.enabled = [true, false]").choices == (True, False)
        assert _one("summary.tail_min_messages = { choices = [3, 5, 8] }").choices == (3, 5, 8)

    def test_table_with_log_and_step(self) -> None:
        p = _one("spill.message_budget = { low = 10000, high = 1000000, log = true }")
        assert (p.kind, p.low, p.high, p.log) == ("int", 10000, 1000000, True)
        assert _one("summary.tail_max_tokens = { low = 1000, high = 9000, step = 1000 }").step == 1000

    def test_optuna_distributions_match(self) -> None:
        from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

        d = parse_space(EXAMPLE_SPACE).distributions()
        assert isinstance(d["spill.threshold"], IntDistribution) and d["spill.threshold"].log
        assert isinstance(d["watermark.ratio"], FloatDistribution) and (d["watermark.ratio"].low, d["watermark.ratio"].high) == (0.5, 0.95)
        assert isinstance(d["microcompact.enabled"], CategoricalDistribution)

    def test_apply_sets_the_fields_on_a_copy_of_the_base(self) -> None:
        base = CompactionConfig()
        cfg = parse_space(EXAMPLE_SPACE).apply(base, {"spill.threshold": 1234, "microcompact.enabled": False})
        assert cfg.spill.threshold == 1234 and cfg.microcompact.enabled is False
        assert base.spill.threshold == CompactionConfig().spill.threshold  # the base is untouched


class TestBoundsFromTheModel:
    @pytest.mark.parametrize("syntax", ['"auto"', "{}"], ids=["auto", "empty-table"])
    def test_auto_takes_the_fields_ge_le(self, syntax: str) -> None:
        p = _one(f"summary.tail_max_tokens = {syntax}")
        field = CompactionConfig.model_fields["summary"].annotation.model_fields["tail_max_tokens"]  # type: ignore[union-attr]
        ge = next(m.ge for m in field.metadata if hasattr(m, "ge"))
        le = next(m.le for m in field.metadata if hasattr(m, "le"))
        assert (p.kind, p.low, p.high) == ("int", ge, le)
        assert p.log  # 1000 .. 1,000,000 spans three orders of magnitude

    def test_auto_on_a_share_is_uniform_float(self) -> None:
        assert _one('watermark.ratio = "auto"') == Param("watermark.ratio", "float", 0.1, 1.0)

    def test_auto_on_a_switch_and_a_literal(self) -> None:
        assert _one('spill.enabled = "auto"').choices == (True, False)
        assert _one('watermark.mode = "auto"').choices == ("ratio", "reserve")

    @pytest.mark.parametrize("path", sorted(_NUMERIC), ids=str)
    def test_every_bounded_number_can_be_swept_on_auto(self, path: str) -> None:
        spec = _NUMERIC[path]
        p = _one(f'{path} = "auto"')
        assert (p.low, p.high) == (spec.min_value, spec.max_value)
        assert p.kind == ("int" if spec.is_int else "float")

    @settings(max_examples=60, deadline=None)
    @given(path=hs.sampled_from(sorted(_NUMERIC)), a=hs.floats(0, 1), b=hs.floats(0, 1))
    def test_a_range_inside_the_bounds_parses_and_one_outside_names_the_field(self, path: str, a: float, b: float) -> None:
        spec = _NUMERIC[path]
        lo, hi = float(spec.min_value), float(spec.max_value)  # type: ignore[arg-type]
        x, y = sorted((lo + a * (hi - lo), lo + b * (hi - lo)))
        if spec.is_int:
            x, y = int(x), int(y)
        if x < y:
            p = _one(f"{path} = [{x!r}, {y!r}]")
            assert spec.min_value <= p.low < p.high <= spec.max_value  # type: ignore[operator]
        with pytest.raises(ConfigError, match=rf"^space field {path}: high .* above the field's maximum"):
            parse_space(f"{path} = [{x!r}, {(int(hi) + 1 if spec.is_int else hi + 1.0)!r}]")


class TestBadSpaces:
    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("spill.treshold = [1, 2]", "space field spill.treshold: not a config field"),
            ("spill = [1, 2]", "space field spill: is a section of the config"),
            ("spill.threshold = [10, 2000]", "space field spill.threshold: low 10 is below the field's minimum 100"),
            ("watermark.ratio = [0.5, 1.5]", "space field watermark.ratio: high 1.5 is above the field's maximum 1.0"),
            ("spill.threshold = [5000, 1000]", "space field spill.threshold: low must be below high"),
            ("spill.threshold = [1000.5, 2000]", "space field spill.threshold: is a whole-number field"),
            ("spill.threshold = [1000, 2000, 3000]", "space field spill.threshold: a range is [low, high], got 3 values"),
            ('spill.threshold = ["a", "b"]', "space field spill.threshold: low must be a number"),
            ('spill.preview_format = ["minicode", "claude"]', "space field spill.preview_format: 'claude' is not one of"),
            ('spill.enabled = ["yes", "no"]', "space field spill.enabled: is true/false"),
            ("spill.enabled = [true, true]", "space field spill.enabled: a choice is listed twice"),
            ("spill.enabled = []", "space field spill.enabled: the list of choices is empty"),
            ('dedup.read_tools = "auto"', "space field dedup.read_tools: cannot be swept"),
            ('summary.memory_text = ["a"]', "space field summary.memory_text: cannot be swept"),
            ("spill.threshold = { low = 1000 }", "space field spill.threshold: a range needs both low and high"),
            ("spill.threshold = { low = 1000, high = 2000, scale = 2 }", "space field spill.threshold: unknown option 'scale'"),
            ("watermark.ratio = { low = 0.0, high = 0.5, log = true }", None),
            ("summary.tail_min_tokens = { low = 0, high = 500, log = true }", "space field summary.tail_min_tokens: a log scale needs low > 0"),
            ("spill.threshold = 5000", "space field spill.threshold: expected [low, high]"),
            ("spill.threshold = [1000", "space: not valid TOML"),
            ("", "space: names no config field"),
        ],
        ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None,
    )
    def test_one_line_error_naming_the_field(self, text: str, message: str | None) -> None:
        with pytest.raises(ConfigError) as info:
            parse_space(text)
        assert "\n" not in str(info.value)
        if message is not None:
            assert str(info.value).startswith(message), str(info.value)

    def test_a_file_error_names_the_file(self, tmp_path: Path) -> None:
        f = tmp_path / "space.toml"
        f.write_text("spill.threshold = [1, 2]\n", encoding="utf-8")
        with pytest.raises(ConfigError, match=r"space\.toml: space field spill\.threshold: low 1 is below"):
            load_space(f)
        with pytest.raises(ConfigError, match=r"cannot read space"):
            load_space(tmp_path / "missing.toml")
