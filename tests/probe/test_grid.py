"""Probe scores as a compare column and a sweep objective: run_grid scores every replay when a probe model is given."""

from __future__ import annotations

from pathlib import Path
from statistics import mean

import pytest
from pydantic import SecretStr

from lab.cli.main import main
from lab.core.presets import preset
from lab.core.providers import ProviderSettings
from lab.errors import ConfigError
from lab.formats import dump
from lab.evaluation import ProbeSpec, run_grid
from lab.testing.fake_provider import FakeProvider
from tests.probe.sessions import GRADES, MODELS, calc_transcript, script

EXPECTED = mean(v for g in GRADES.values() for v in g.values())


def spec(fake: FakeProvider, provider: str = "anthropic") -> ProbeSpec:
    return ProbeSpec(ProviderSettings(provider=provider, model=MODELS[provider], base_url=fake.base_url(provider), max_retries=0))  # type: ignore[arg-type]


@pytest.mark.parametrize("processes", [1, 2])
def test_every_cell_gets_the_probe_score(fake_provider: FakeProvider, processes: int) -> None:
    script(fake_provider)
    t = calc_transcript()
    grid = run_grid([t], [preset("lab"), preset("minicode")], processes=processes, probe=spec(fake_provider))
    assert [[c.row["probe_score"] for c in row] for row in grid] == [[pytest.approx(EXPECTED)], [pytest.approx(EXPECTED)]]


def test_without_a_probe_model_there_is_no_column_and_no_call(fake_provider: FakeProvider) -> None:
    grid = run_grid([calc_transcript()], [preset("lab")])
    assert "probe_score" not in grid[0][0].row and fake_provider.generation_requests == []


def test_ray_tasks_get_the_settings_without_the_key() -> None:
    key = SecretStr("sk-test-123")
    s = ProbeSpec(ProviderSettings(provider="openai", model="m", api_key=key), ProviderSettings(provider="openai", model="j", api_key=key), 0.5)
    shipped = s.without_keys()
    assert shipped.settings.api_key is None and shipped.judge is not None and shipped.judge.api_key is None
    assert (shipped.settings.model, shipped.judge.model, shipped.max_cost) == ("m", "j", 0.5)
    assert s.settings.api_key is key, "the caller's settings keep their key"


def test_a_sweep_maximises_the_probe_score(fake_provider: FakeProvider) -> None:
    from lab.tuning import sweep

    script(fake_provider)
    result = sweep([calc_transcript()], {"spill.threshold": [1000, 20000]}, trials=2, population=2,
                   objectives=["probe_score", "cost"], probe=spec(fake_provider, "openai"))
    assert list(result.df["probe_score"]) == [pytest.approx(EXPECTED)] * 2


def test_the_objective_needs_a_probe_model() -> None:
    from lab.tuning import sweep

    with pytest.raises(ConfigError, match="probe_score needs a probe model"):
        sweep([calc_transcript()], {"spill.threshold": [1000, 20000]}, trials=1, objectives=["probe_score"])


def test_compare_cli_adds_the_column(fake_provider: FakeProvider, tmp_path: Path) -> None:
    import json

    script(fake_provider)
    session = tmp_path / "calc.lab.json"
    session.write_text(json.dumps(dump(calc_transcript())), encoding="utf-8")
    out = tmp_path / "table.csv"
    rc = main(["compare", str(session), "--preset", "lab", "--processes", "1", "--out", str(out),
               "--probe-model", MODELS["anthropic"], "--probe-base-url", fake_provider.base_url("anthropic")])
    assert rc == 0
    import pandas as pd

    assert pd.read_csv(out)["probe_score"].tolist() == [pytest.approx(EXPECTED)]
