"""The value helpers every reader shares (lab.formats._build)."""

from __future__ import annotations

import pytest

from lab.formats._build import path_from_uri, positive_int, token_count


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ("file:///home/dev/calc", "/home/dev/calc"),
        ("file:///c%3A/Users/dev/app", "c:/Users/dev/app"),
        ("file:///srv/my%20app", "/srv/my app"),
        ("/plain/path", "/plain/path"),
        ("vscode-remote://ssh-remote+box/home/dev", None),
        ("", None),
        (None, None),
        (7, None),
    ],
)
def test_path_from_uri(value: object, path: str | None) -> None:
    assert path_from_uri(value) == path


def test_counts_take_only_positive_numbers() -> None:
    assert [positive_int(v) for v in (3, 0, -2, True, 2.0, "3", None)] == [3, 0, 0, 0, 0, 0, 0]
    # JavaScript writes every number as a float: whole ones below 2**53 count, the rest do not.
    assert [token_count(v) for v in (3, 3.0, 0, -1.0, False, 2**53, float("nan"), "3")] == [3, 3, 0, 0, 0, 0, 0, 0]
