"""The ``fake_provider`` fixture: a fake LLM provider server for one test.

Register as a plugin (``pytest_plugins = ["tests.fake_provider_fixture"]`` in
tests/conftest.py) or import the fixture into a test module.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lab.testing.fake_provider import FakeProvider, serve

__all__ = ["fake_provider"]


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    with serve() as fake:
        yield fake
