"""How a sweep holds sessions out: which sessions each fold's search never sees, and its share of the trials.

A config a sweep picks on a set of sessions scores higher on that set than on
the next session (issue 28: in-sample first, held-out in the middle of the
pack). So a sweep splits its sessions into folds: each fold's search runs on
the other sessions, and its configs are scored on the fold's sessions, which
that search never saw.

    count(n, folds)          the number of folds: 5 at 10 sessions or more, one per session below (leave-one-session-out);
                             0 means no held-out scoring (``folds`` 0 or 1, or a single session)
    plan(n, k, seed)         the held-out session indices of each fold: a seeded partition of range(n)
    shares(trials, k)        the trials each fold's search gets: ``trials`` split as evenly as it goes
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError

__all__ = ["DEFAULT_FOLDS", "LEAVE_ONE_OUT_BELOW", "count", "plan", "shares"]

DEFAULT_FOLDS = 5
# Below this many sessions, each fold holds out one session: 5 folds of 1-2 sessions would waste searches.
LEAVE_ONE_OUT_BELOW = 10


def count(n: int, folds: int | None) -> int:
    """How many folds ``n`` sessions are split into; 0 when nothing is held out.

    ``folds`` None is the default (5 folds from 10 sessions, leave-one-session-out below); 0 and 1
    turn held-out scoring off. A single session cannot be held out, so the default is off there too,
    but asking for folds with one session is an error, as is asking for more folds than sessions.
    """
    if folds is None:
        if n < 2:
            return 0
        return DEFAULT_FOLDS if n >= LEAVE_ONE_OUT_BELOW else n
    if not isinstance(folds, int) or isinstance(folds, bool) or folds < 0:
        raise ConfigError(f"folds must be a whole number >= 0 (0 or 1: no held-out scoring), got {folds!r}")
    if folds <= 1:
        return 0
    if folds > n:
        raise ConfigError(f"folds {folds} is more than the {n} session(s) to sweep over: each fold holds out at least one session"
                          + ("; sweep over more sessions or give folds=0" if n < 2 else f"; use at most {n} (one per session)"))
    return folds


def plan(n: int, k: int, seed: int) -> list[list[int]]:
    """The held-out session indices of each of ``k`` folds: every index in exactly one fold, sizes within one of each other.

    The sessions are shuffled by ``seed`` first, so folds do not follow the listing order (a folder
    sorted by name often groups sessions of one agent), and the same seed gives the same folds.
    """
    if k < 2 or k > n:
        raise ConfigError(f"cannot split {n} session(s) into {k} folds")
    order = np.random.default_rng(seed).permutation(n)
    return [sorted(int(i) for i in order[f::k]) for f in range(k)]


def shares(trials: int, k: int) -> list[int]:
    """``trials`` split over ``k`` folds: the first ``trials % k`` folds get one more."""
    base, extra = divmod(trials, k)
    return [base + (1 if f < extra else 0) for f in range(k)]
