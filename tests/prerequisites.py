"""What a test needs from the machine. On a developer's machine a missing tool or the
missing ../shared folder skips the test and says why; in CI (CI=true), where `make test`
provides everything, it fails it instead, so that nothing is silently left untested."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def missing(reason: str) -> NoReturn:
    if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
        pytest.fail(f"{reason} (CI=true: prerequisites must be present)")
    pytest.skip(reason)
