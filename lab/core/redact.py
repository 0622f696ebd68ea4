"""Secrets a transcript holds, found and replaced before the lab writes them anywhere.

Users paste keys into agent sessions (``export ANTHROPIC_API_KEY=sk-ant-...``,
a ``cat ~/.aws/credentials``, a private key file read by a tool), and the lab
copies transcript text into reports, request dumps, exports, imports and spill
files. Every writer passes its text through ``redact_text``, which replaces
each known secret with ``[REDACTED:<kind>]`` and counts it in a ``Tally``.

Only shapes that are secrets by construction are matched (a vendor prefix and
a long random body), never "anything that looks random": a false positive
corrupts a user's data for nothing. Near misses stay: ``sk-learn``,
``task-1234``, ``-----BEGIN PUBLIC KEY-----``, a short ``AKIA`` word.

The same function serves plain text and serialized JSON: no pattern can
consume a ``"`` or a backslash except a whole ``\\n``/``\\r``/``\\t`` escape
inside a PEM block, so a replacement never cuts a JSON escape in two. A
secret right after such an escape (``"line\\nsk-ant-..."``) is still found:
the escape counts as a word boundary.

Cheap when nothing matches: each pattern runs only when one of its literal
prefixes occurs in the text (a C substring search). Pure: no I/O here.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["SECRET_KINDS", "Tally", "redact_text", "redact_value", "redaction_note", "marker"]


def marker(kind: str) -> str:
    """What a secret of ``kind`` becomes in written text."""
    return f"[REDACTED:{kind}]"


@dataclass
class Tally:
    """How many secrets were redacted, by kind: distinct values and places.

    A request dump repeats the whole context at every request, so one pasted
    key shows up hundreds of times; the note counts it once. Only a short hash
    of each value is kept, never the value.
    """

    places: Counter[str] = field(default_factory=Counter)
    _seen: dict[str, set[str]] = field(default_factory=dict, repr=False)

    def add(self, kind: str, value: str) -> None:
        self.places[kind] += 1
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        self._seen.setdefault(kind, set()).add(digest)

    def merge(self, other: Tally) -> None:
        self.places.update(other.places)
        for kind, digests in other._seen.items():
            self._seen.setdefault(kind, set()).update(digests)

    @property
    def distinct(self) -> dict[str, int]:
        """Distinct secrets by kind, most first."""
        counts = {k: len(v) for k, v in self._seen.items()}
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    @property
    def total(self) -> int:
        return sum(len(v) for v in self._seen.values())

    def note(self, hint: str | None = "--no-redact keeps them") -> str | None:
        """``redacted 3 secrets (anthropic-key 2, aws-access-key 1)``, then ``hint``; None when nothing was redacted."""
        return redaction_note(self, hint)

    def __bool__(self) -> bool:
        return bool(self.places)


def redaction_note(tally: Tally, hint: str | None = "--no-redact keeps them") -> str | None:
    """What ``tally`` counted, as one line (see ``Tally.note``)."""
    if not tally:
        return None
    kinds = ", ".join(f"{k} {n}" for k, n in tally.distinct.items())
    n = tally.total
    places = sum(tally.places.values())
    where = f" in {places} places" if places != n else ""
    return f"redacted {n} secret{'s' if n != 1 else ''} ({kinds}){where}" + (f"; {hint}" if hint else "")


# A character that may sit right before a token without joining it: anything but a token character.
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_HEX = frozenset("0123456789abcdefABCDEF")


def _starts_token(text: str, i: int) -> bool:
    """Whether a token starting at ``text[i]`` is not the tail of a longer word.

    A JSON escape before it (``\\n``, ``\\t``, ``\\u001b``) ends the previous word even though its last
    character is a letter or a digit.
    """
    if i == 0 or text[i - 1] not in _TOKEN_CHARS:
        return True
    if i >= 2 and text[i - 2] == "\\" and text[i - 1] in "nrtbf":
        return True
    return i >= 6 and text[i - 6 : i - 4] == "\\u" and all(c in _HEX for c in text[i - 4 : i])


def _mixed(body: str, run: int = 16) -> bool:
    """A random-looking body: letters and digits, with a run of ``run`` alphanumerics (keys are not hyphenated words)."""
    return (any(c.isdigit() for c in body) and any(c.isalpha() for c in body)
            and any(len(part) >= run for part in re.split(r"[-_]", body)))


@dataclass(frozen=True)
class _Pattern:
    kind: str
    # The pattern runs only if one of these occurs in the text.
    prefixes: tuple[str, ...]
    regex: re.Pattern[str]
    # Extra test on the match (the whole match, or the ``secret`` group when there is one).
    check: Callable[[str], bool] | None = None
    # The match must not continue a word on its left.
    bounded: bool = True


_B64_LINE = r"(?:\r?\n|\\r\\n|\\n)[A-Za-z0-9+/=]{16,}"
_PATTERNS: tuple[_Pattern, ...] = (
    _Pattern(
        "private-key",
        ("-----BEGIN",),
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
            # A whole block up to its END line (headers such as Proc-Type, DEK-Info included) ...
            r"(?:(?:[A-Za-z0-9+/=:, \t\r\n-]|\\[nrt]){0,16384}?-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
            # ... or, cut off before its END, the header line and the base64 lines after it.
            rf"|(?:{_B64_LINE})*)"
        ),
        bounded=False,
    ),
    _Pattern("anthropic-key", ("sk-ant-",), re.compile(r"sk-ant-[A-Za-z0-9_-]{20,}")),
    _Pattern(
        "openai-key",
        ("sk-",),
        re.compile(r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?(?P<body>[A-Za-z0-9_-]{20,})"),
        check=_mixed,
    ),
    _Pattern("aws-access-key", ("AKIA", "ASIA"), re.compile(r"(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")),
    _Pattern(
        "aws-secret-key",
        ("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "SecretAccessKey"),
        re.compile(r"(?:aws_secret_access_key|AWS_SECRET_ACCESS_KEY|SecretAccessKey)(?:\\?[\"'])?[ \t]*[:=][ \t]*(?:\\?[\"'])?"
                   r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"),
        check=lambda s: any(c.isdigit() or c in "/+" for c in s) and any(c.isupper() for c in s) and any(c.islower() for c in s),
    ),
    _Pattern("github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), re.compile(r"gh[pousr]_[A-Za-z0-9]{36,}(?![A-Za-z0-9_])")),
    _Pattern("github-token", ("github_pat_",), re.compile(r"github_pat_[A-Za-z0-9_]{40,}")),
    _Pattern("slack-token", ("xox",), re.compile(r"xox[bpaors]-[0-9]{6,}-[A-Za-z0-9-]{8,}")),
    _Pattern("google-api-key", ("AIza",), re.compile(r"AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])")),
)

SECRET_KINDS: tuple[str, ...] = tuple(dict.fromkeys(p.kind for p in _PATTERNS))


def _replace(p: _Pattern, tally: Tally | None) -> Callable[[re.Match[str]], str]:
    has_secret = "secret" in p.regex.groupindex
    has_body = "body" in p.regex.groupindex

    def sub(m: re.Match[str]) -> str:
        if p.bounded and not _starts_token(m.string, m.start()):
            return m.group(0)
        value = m.group("secret") if has_secret else m.group(0)
        if p.check is not None and not p.check(m.group("body") if has_body else value):
            return m.group(0)
        if tally is not None:
            tally.add(p.kind, value)
        if has_secret:
            return m.group(0)[: m.start("secret") - m.start()] + marker(p.kind)
        return marker(p.kind)

    return sub


def redact_text(text: str, tally: Tally | None = None) -> str:
    """``text`` with every known secret replaced by ``[REDACTED:<kind>]``; counts go to ``tally``.

    Safe on serialized JSON (see the module docstring); returns ``text`` itself when nothing matched.
    """
    for p in _PATTERNS:
        if any(prefix in text for prefix in p.prefixes):
            text = p.regex.sub(_replace(p, tally), text)
    return text


def redact_value(value: object, tally: Tally | None = None) -> object:
    """A JSON-like value (dicts, lists, strings) with its strings and keys redacted; other values as they are."""
    if isinstance(value, str):
        return redact_text(value, tally)
    if isinstance(value, dict):
        return {redact_text(k, tally) if isinstance(k, str) else k: redact_value(v, tally) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v, tally) for v in value]
    return value
