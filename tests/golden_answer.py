"""How the golden tests ask the hook: one request in, (HTTP status, body bytes) out, through
the same path the web layer takes after it has read the body."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from hooks.app import Hook
from hooks.encoding import dumps
from hooks.metrics import Metrics
from hooks.selfcheck import check_templates
from hooks.settings import Settings


@lru_cache(maxsize=1)
def _hook() -> Hook:
    settings = Settings()
    return Hook(settings, check_templates(settings), Metrics())


def answer(request: dict[str, Any]) -> tuple[int, bytes]:
    result = _hook().answer(dumps(request))
    return result.status_code, result.body
