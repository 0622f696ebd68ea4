"""``CompactorState.snapshot``: a resume checkpoint's packed copy of the decisions, forked as often as needed."""

from __future__ import annotations

from lab.core.events import CompactorState, StateSnapshot
from lab.core.messages import Usage
from lab.core.stages.dedup import DedupState
from lab.core.stages.microcompact import MicrocompactState
from lab.core.stages.spill import SpillState
from lab.core.stages.watermark import BreakerState


def _state() -> CompactorState:
    stages = {
        "spill": SpillState(ledger={"a": "stub", "k": None}, paths={"a": "p"}),
        "dedup": DedupState(ledger={"d": "s"}, seen={"x", "y"}),
        "watermark": BreakerState(2, 5.0),
        "microcompact": MicrocompactState(),
    }
    state = CompactorState(session_id="s", stages=stages, claims={"a": "spill"}, anchor=Usage(input_tokens=3), anchor_messages=4,
                           first_request="do it", last_request_time=9.0)
    state.tracks["auto"] = object()
    return state


def test_a_snapshot_forks_into_what_fork_gives() -> None:
    state = _state()
    snap = state.snapshot()
    assert isinstance(snap, StateSnapshot)
    copy = snap.fork()
    assert copy == state == state.fork() and copy.tracks == {}
    assert list(copy.stages) == list(state.stages) and list(copy.stages["spill"].ledger) == ["a", "k"]
    assert type(copy.stages["dedup"].seen) is set and type(copy.claims) is dict


def test_a_snapshot_is_independent_of_the_state_and_of_its_forks() -> None:
    state = _state()
    snap = state.snapshot()
    state.stages["spill"].paths["b"] = "q"
    state.stages["dedup"].seen.add("z")
    state.claims["b"] = "spill"
    state.stages["watermark"].failures = 0
    first = snap.fork()
    assert first.spill_paths == {"a": "p"} and first.stages["dedup"].seen == {"x", "y"} and first.claims == {"a": "spill"}
    assert first.stages["watermark"] == BreakerState(2, 5.0)
    first.stages["spill"].ledger["c"] = "stub"
    first.stages["dedup"].seen.add("w")
    first.claims["c"] = "dedup"
    first.stages["watermark"].failures = 7
    second = snap.fork()
    assert second == _state() and "c" not in state.claims and state.stages["watermark"].failures == 0


def test_snapshots_of_a_growing_ledger_share_what_they_both_hold() -> None:
    state = _state()
    first = state.snapshot()
    state.stages["spill"].ledger["b"] = None
    state.stages["dedup"].seen.add("z")
    state.claims["b"] = "spill"
    second = state.snapshot()
    spill1, spill2 = dict(first.stages)["spill"], dict(second.stages)["spill"]
    # The second holds the first's chunks, the very tuples, and one of its own for what is new.
    assert spill2.ledger.keys[0] is spill1.ledger.keys[0] and spill2.ledger.keys[1] == ("b",)
    assert dict(second.stages)["dedup"].seen.keys[0] is dict(first.stages)["dedup"].seen.keys[0]
    assert second.claims.keys[0] is first.claims.keys[0]
    assert first.fork() == _state()
    assert second.fork() == state and list(second.fork().stages["spill"].ledger) == ["a", "k", "b"]


def test_a_ledger_changed_otherwise_is_packed_whole() -> None:
    state = _state()
    first = state.snapshot()
    ledger, seen = state.stages["spill"].ledger, state.stages["dedup"].seen
    ledger["a"] = "another stub"  # a value changed in place
    del state.claims["a"]
    state.claims["c"] = "dedup"  # one removed, one added: as long as before
    seen.discard("x")
    seen.update({"p", "q"})  # grown, but not a superset
    second = state.snapshot()
    assert dict(second.stages)["spill"].ledger.keys[0] is not dict(first.stages)["spill"].ledger.keys[0]
    copy = second.fork()
    assert copy == state and copy.stages["spill"].ledger == {"a": "another stub", "k": None}
    assert copy.stages["dedup"].seen == {"y", "p", "q"} and copy.claims == {"c": "dedup"}
    assert first.fork() == _state()
