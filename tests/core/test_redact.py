"""Secret redaction: every known key shape is replaced and counted, near misses are kept, JSON stays JSON."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lab.core.redact as redact_mod
from lab.core.redact import SECRET_KINDS, Tally, marker, redact_text, redact_value

# Built from pieces, so this file itself holds no string a secret scanner would flag.
BODY = "Q8x2Lm4Np6Rt8Vx0Zb2Dc4Fe6Hg8Jk0Ml2Nn4Pp6Rr8Tt0"
SECRETS = {
    "anthropic-key": "sk-" + "ant-api03-" + BODY + "_-" + BODY[:30] + "AA",
    "openai-key": "sk-" + BODY[:48],
    "openai-project-key": "sk-" + "proj-" + BODY + "-" + BODY[::-1],
    "aws-access-key": "AKIA" + "IOSFODNN7EXAMPL1",
    "github-token": "ghp" + "_" + BODY[:36],
    "github-pat": "github" + "_pat_" + "11ABCDEFG0" + BODY[:12] + "_" + BODY[:40],
    "slack-token": "xox" + "b-" + "123456789012-1234567890123-" + BODY[:24],
    "google-api-key": "AI" + "za" + "Sy" + BODY[:33],
}
KIND = {"openai-project-key": "openai-key", "github-pat": "github-token"}
PEM = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA" + BODY + "\n" + BODY[::-1] + "==\n-----END RSA " + "PRIVATE KEY-----"

NEAR_MISSES = [
    "pip install scikit-learn; import sk-learn",
    "task-1234567890abcdefghijklmnopqrstuv",
    "disk-AbCdEf1234567890abcdefghijkl",
    "sk-2024-annual-report-draft-version-final",
    "sk-this-is-a-long-but-ordinary-hyphenated-name",
    "AKIA is a prefix; AKIAshort; AKIAIOSFODNN7EXAMPLEX1234",
    "ghp_short and gho_",
    "xoxb-not-a-token",
    "AIza is how Google keys start",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----",
    "github_pat_ is the prefix of fine-grained tokens",
    "aws_secret_access_key = <your secret here>",
]


@pytest.mark.parametrize("name", list(SECRETS))
def test_each_key_shape_is_replaced_and_counted(name: str) -> None:
    kind = KIND.get(name, name)
    tally = Tally()
    out = redact_text(f"export KEY={SECRETS[name]}\nthen run it", tally)
    assert SECRETS[name] not in out and marker(kind) in out
    assert out.startswith("export KEY=") and out.endswith("\nthen run it")
    assert tally.distinct == {kind: 1}


def test_private_key_block_whole_and_cut_off() -> None:
    tally = Tally()
    out = redact_text(f"cat id_rsa\n{PEM}\nok", tally)
    assert out == f"cat id_rsa\n{marker('private-key')}\nok" and tally.distinct == {"private-key": 1}
    # A tool output cut before the END line still loses its base64 lines.
    cut = PEM.split("-----END")[0]
    out = redact_text(f"head id_rsa\n{cut}", Tally())
    assert BODY not in out and marker("private-key") in out


def test_aws_secret_key_keeps_its_name() -> None:
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    tally = Tally()
    out = redact_text(f"aws_secret_access_key = {secret}\nregion = eu", tally)
    assert out == f"aws_secret_access_key = {marker('aws-secret-key')}\nregion = eu"
    assert tally.distinct == {"aws-secret-key": 1}


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_left_alone(text: str) -> None:
    tally = Tally()
    assert redact_text(text, tally) == text
    assert not tally and tally.note() is None


def test_note_counts_distinct_secrets_and_places() -> None:
    tally = Tally()
    ant, aws = SECRETS["anthropic-key"], SECRETS["aws-access-key"]
    other = "sk-" + "ant-api03-" + BODY[::-1] + "AA"
    redact_text(f"{ant} {ant} {other} {aws}", tally)
    assert tally.distinct == {"anthropic-key": 2, "aws-access-key": 1}
    assert tally.note() == "redacted 3 secrets (anthropic-key 2, aws-access-key 1) in 4 places; --no-redact keeps them"
    merged = Tally()
    merged.merge(tally)
    redact_text(aws, merged)
    assert merged.total == 3 and sum(merged.places.values()) == 5


def test_serialized_json_stays_json_and_escapes_are_boundaries() -> None:
    ant = SECRETS["anthropic-key"]
    value = {"a": f"line\n{ant}", "b": f"tab\t{SECRETS['openai-key']}", "c": f"\x1b{SECRETS['aws-access-key']}", "d": PEM, "e": f'say "{ant}"'}
    for ascii_only in (False, True):
        text = json.dumps(value, ensure_ascii=ascii_only)
        tally = Tally()
        back = json.loads(redact_text(text, tally))
        assert back == {"a": "line\n" + marker("anthropic-key"), "b": "tab\t" + marker("openai-key"),
                        "c": "\x1b" + marker("aws-access-key"), "d": marker("private-key"), "e": f'say "{marker("anthropic-key")}"'}
        assert tally.total == 4


def test_redact_value_walks_keys_and_values() -> None:
    tally = Tally()
    out = redact_value({"k": [SECRETS["github-token"], 3, None], SECRETS["google-api-key"]: {"x": "plain"}}, tally)
    assert out == {"k": [marker("github-token"), 3, None], marker("google-api-key"): {"x": "plain"}}
    assert tally.distinct == {"github-token": 1, "google-api-key": 1}


def test_every_kind_is_listed() -> None:
    assert set(KIND.get(n, n) for n in SECRETS) | {"private-key", "aws-secret-key"} == set(SECRET_KINDS)


@settings(max_examples=200, deadline=None)
@given(st.text(), st.sampled_from(list(SECRETS.values()) + [PEM]), st.text())
def test_json_round_trip_with_any_text_around_a_secret(before: str, secret: str, after: str) -> None:
    text = json.dumps({"v": before + " " + secret + " " + after}, ensure_ascii=False)
    back = json.loads(redact_text(text))
    assert secret not in back["v"]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_text_without_prefixes_is_returned_as_is(text: str) -> None:
    if any(p in text for pat in redact_mod._PATTERNS for p in pat.prefixes):
        return
    assert redact_text(text) is text


def test_cheap_when_nothing_matches() -> None:
    # Ordinary JSON text the size of a long request dump, with near misses that make some patterns run.
    text = json.dumps({"x": ["task-notification: the quick brown fox, sk-learn, AKIA " * 10] * 20_000})
    start = time.perf_counter()
    assert redact_text(text) == text
    per_mb = (time.perf_counter() - start) / (len(text) / 1e6)
    # Far below what serializing the same text costs; generous for a loaded 2-core machine.
    assert per_mb < 0.2, f"{per_mb:.3f} s per MB"


def test_all_is_complete() -> None:
    public = {n for n, v in vars(redact_mod).items() if not n.startswith("_") and getattr(v, "__module__", None) == redact_mod.__name__}
    assert public <= set(redact_mod.__all__)
