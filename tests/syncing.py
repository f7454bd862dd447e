"""Running the pure sync in tests: a raw request (as Metacontroller sends it) in, the result
out, with a fixed clock unless a test gives its own."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from functools import partial
from typing import Any

from hooks.contract.request import parse_request
from hooks.contract.response import encode_response
from hooks.core.desired import desire
from hooks.core.facts import Facts
from hooks.core.sync import SyncResult, sync
from hooks.rendering.templateset import TemplateSet
from hooks.settings import ChildSettings

NOW = datetime(2026, 9, 1, 12, 0, 0, tzinfo=timezone.utc)
NOW_TEXT = "2026-09-01T12:00:00Z"


def run_sync(raw: dict[str, Any], templates: TemplateSet, settings: ChildSettings | None = None,
             now: datetime = NOW) -> SyncResult:
    return sync(parse_request(raw), Facts(now), settings or ChildSettings(), partial(desire, templates=templates))


def encoded(result: SyncResult) -> bytes:
    """The answer's body, as the web layer sends it."""
    return encode_response(result.children, result.status.as_json())


def timeless(body: bytes) -> Any:
    """An answer with its conditions' lastTransitionTime blanked: answers to one request made
    at different moments differ only there (a new condition's time is the clock's)."""
    decoded = json.loads(body)
    for condition in (decoded.get("status") or {}).get("conditions") or []:
        condition["lastTransitionTime"] = "-"
    return decoded
