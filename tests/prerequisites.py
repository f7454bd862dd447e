"""What a test needs from the machine. On a developer's machine a missing tool or the
missing ../shared folder skips the test and says why; in CI (CI=true), where `make test`
provides everything, it fails it instead, so that nothing is silently left untested."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest


def venv_tool(name: str) -> str:
    """`name` from .venv-<name>, where `make test-tools` installs the large tools, else from PATH;
    or skip (fail under CI=true) without it."""
    own = Path(__file__).resolve().parent.parent / f".venv-{name}" / "bin" / name
    if os.access(own, os.X_OK):
        return str(own)
    found = shutil.which(name)
    if found is None:
        missing(f"{name} is not installed (`make test-tools` installs it into .venv-{name})")
    return found


def missing(reason: str) -> NoReturn:
    if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
        pytest.fail(f"{reason} (CI=true: prerequisites must be present)")
    pytest.skip(reason)
