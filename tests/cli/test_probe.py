"""``python -m lab probe`` end to end through ``lab.cli.main`` against the fake provider, both SDKs, and its exit-2 cases."""

from __future__ import annotations

from pathlib import Path
from statistics import mean

import pytest

from lab.cli.main import main
from lab.formats import dump
from lab.probe import PROBE_KINDS, ProbeReport
from lab.testing.fake_provider import FakeProvider
from tests.probe.sessions import calc_transcript
from tests.probe.sessions import GRADES, MODELS, answer, script


@pytest.fixture
def session(tmp_path: Path) -> Path:
    path = tmp_path / "calc.lab.json"
    dump(calc_transcript(), to="lab", path=path)
    return path


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    # Keys come from the environment only: none here, so a missing --base-url must be refused.
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_probe_end_to_end(fake_provider: FakeProvider, session: Path, tmp_path: Path, provider: str, capsys: pytest.CaptureFixture[str]) -> None:
    script(fake_provider)
    out_path = tmp_path / "probes.json"
    rc = main(["probe", str(session), "--preset", "lab", "--model", MODELS[provider], "--provider", provider,
               "--base-url", fake_provider.base_url(provider), "--max-cost", "5", "--report", str(out_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("probed "))
    assert any(line.startswith("estimate: total <= $") for line in lines[:first]), "the estimate comes first"
    report = ProbeReport.read(out_path)
    assert report.points == [6] and report.graded == 4 and report.provider == provider
    assert [p.answer for p in report.probes] == [answer(k) for k in PROBE_KINDS]
    for kind in PROBE_KINDS:
        assert report.by_type[kind].score == pytest.approx(mean(GRADES[kind].values()))
    overall = mean(v for g in GRADES.values() for v in g.values())
    assert f"score (0-5): {overall:.2f}" in out
    assert all(r.api == provider for r in fake_provider.generation_requests) and len(fake_provider.generation_requests) == 8


def test_judge_model_and_points(fake_provider: FakeProvider, session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script(fake_provider)
    rc = main(["probe", str(session), "--preset", "mewcode", "--at", "2", "--at", "-1", "--model", "gpt-4.1-mini", "--judge-model", "gpt-4.1",
               "--provider", "openai", "--base-url", fake_provider.base_url_openai, "--window", "32000", "--report", str(tmp_path / "p.json")])
    assert rc == 0
    report = ProbeReport.read(tmp_path / "p.json")
    assert report.points == [2, 6] and report.judge_model == "gpt-4.1" and report.window == 32_000
    models = [r.body["model"] for r in fake_provider.generation_requests]
    assert models[0::2] == ["gpt-4.1-mini"] * 7 and models[1::2] == ["gpt-4.1"] * 7
    assert "gpt-4.1: 7 requests (7 judge)" in capsys.readouterr().out


def test_max_cost_stop_is_reported_not_fatal(fake_provider: FakeProvider, session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script(fake_provider)
    rc = main(["probe", str(session), "--preset", "lab", "--model", "claude-sonnet-4-5", "--base-url", fake_provider.base_url_anthropic,
               "--max-cost", "0.03", "--report", str(tmp_path / "p.json")])
    out = capsys.readouterr().out
    assert rc == 0 and "warning: stopped at the cost limit of $0.03" in out
    assert ProbeReport.read(tmp_path / "p.json").skipped == 3


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--model", "m"], "no API key for anthropic: set ANTHROPIC_API_KEY"),
        (["--model", "gpt-4.1", "--provider", "openai"], "no API key for openai: set OPENAI_API_KEY"),
        (["--model", "m", "--base-url", "ftp://x"], "base_url must start with http"),
        (["--model", "claude-sonnet-4-5", "--base-url", "http://127.0.0.1:9", "--at", "99"], "--at 99 is out of range"),
        (["--model", "claude-sonnet-4-5", "--base-url", "http://127.0.0.1:9", "--max-cost", "-1"], "--max-cost must be a number >= 0"),
        (["--model", "local-model", "--base-url", "http://127.0.0.1:9", "--max-cost", "1"], "no price known for model 'local-model'"),
        (["--base-url", "http://127.0.0.1:9"], "the following arguments are required: --model"),
        (["--model", "m", "--provider", "gemini"], "invalid choice: 'gemini'"),
        (["--model", "m", "--config", "c.toml"], "not allowed with argument --preset"),
    ],
    ids=["no-key", "no-openai-key", "bad-url", "at-out-of-range", "negative-cost", "unpriced-limit", "no-model", "bad-provider", "preset-and-config"],
)
def test_bad_input_exits_2_with_one_line(session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str) -> None:
    rc = main(["probe", str(session), "--preset", "lab", *extra, "--report", str(tmp_path / "p.json")])
    assert rc == 2
    assert message in _one_error_line(capsys)
    assert not (tmp_path / "p.json").exists()


def test_bad_session_and_config_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--model", "m", "--base-url", "http://127.0.0.1:9", "--report", str(tmp_path / "p.json")]
    assert main(["probe", str(tmp_path / "missing.jsonl"), "--preset", "lab", *base]) == 2
    _one_error_line(capsys)
    assert main(["probe", str(tmp_path / "missing.jsonl"), "--preset", "no-such-preset", *base]) == 2
    assert "no-such-preset" in _one_error_line(capsys)
