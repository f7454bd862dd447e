"""Running the pure sync in tests: a raw request (as Metacontroller sends it) in, the result
out, with a fixed clock unless a test gives its own."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hooks.contract.request import parse_request
from hooks.contract.response import encode_response
from hooks.core.desired import desire
from hooks.core.sync import Measure, Resolve, SyncResult, sync_through
from hooks.edge.templates import read_sources
from hooks.rendering.templateset import TemplateSet
from hooks.settings import ChildSettings, Settings
from hooks.web.hook import Hook
from hooks.web.metrics import Metrics
from hooks.workers.renderer import LocalRenderer

NOW = datetime(2026, 9, 1, 12, 0, 0, tzinfo=timezone.utc)
NOW_TEXT = "2026-09-01T12:00:00Z"


def run_sync(raw: dict[str, Any], templates: TemplateSet, settings: ChildSettings | None = None,
             now: datetime = NOW, measure: Measure | None = None, resolve: Resolve | None = None) -> SyncResult:
    """The web layer's steps, in this thread (`measure` answers a due measurement, `resolve`
    the registry references)."""
    return sync_through(parse_request(raw), now, settings or ChildSettings(),
                        lambda inputs: desire(inputs, templates), measure, resolve)


class ClockRead(AssertionError):
    """The sync used `now`."""


def _read(self: datetime, *args: Any, **kwargs: Any) -> Any:
    raise ClockRead(f"the sync read the clock ({datetime.isoformat(self)})")


class UnreadClock(datetime):
    """A `now` that fails the sync that reads it in any way (compares, subtracts, adds,
    formats, converts it): a sync that succeeds with it gives the same answer at any time.
    Python tries a subclass's reflected operator first, so `due > now` and `due - now` fail
    too."""

    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = __hash__ = __bool__ = _read
    __add__ = __radd__ = __sub__ = __rsub__ = __format__ = __str__ = _read
    astimezone = strftime = isoformat = timestamp = replace = date = time = timetz = _read
    utcoffset = tzname = dst = timetuple = utctimetuple = toordinal = weekday = isoweekday = _read
    isocalendar = ctime = _read
    year = month = day = hour = minute = second = microsecond = tzinfo = fold = property(_read)

    def __repr__(self) -> str:
        return "UnreadClock(...)"


def unread(now: datetime) -> UnreadClock:
    return UnreadClock(now.year, now.month, now.day, now.hour, now.minute, now.second, now.microsecond, now.tzinfo)


ELSEWHEN = timedelta(days=400, seconds=7)  # another time of day, date and year


def _no_measurement(plan: Any) -> Any:
    raise AssertionError("a replayable answer took a measurement")


def _no_registry(references: tuple[str, ...]) -> Any:
    assert not references, "a replayable answer asked the registry"
    return {}


def check_replay(raw: dict[str, Any], result: SyncResult, templates: TemplateSet, settings: ChildSettings,
                 now: datetime = NOW) -> None:
    """When `result` says it is replayable, the same request is given the same answer at
    another time, without the clock being read and with no fact gathered (the web layer
    replays it at any time). Another time: a use the unread clock does not trap still shows."""
    if not result.replayable:
        return
    again = run_sync(raw, templates, settings, unread(now + ELSEWHEN), _no_measurement, _no_registry)
    assert again.replayable and encoded(again) == encoded(result)


def encoded(result: SyncResult) -> bytes:
    """The answer's body, as the web layer sends it."""
    return encode_response(result.children, result.status.as_json(), result.finalized, result.resync_after)


def timeless(body: bytes) -> Any:
    """An answer with its conditions' lastTransitionTime blanked: answers to one request made
    at different moments differ only there (a new condition's time is the clock's)."""
    decoded = json.loads(body)
    for condition in (decoded.get("status") or {}).get("conditions") or []:
        condition["lastTransitionTime"] = "-"
    return decoded


def local_hook(settings: Settings | None = None, folder: Path | None = None) -> Hook:
    """The web layer's hook, rendering in this process, with the shipped templates (and
    `folder` on top) installed."""
    settings = settings or Settings()
    renderer = LocalRenderer(settings.children)
    hook = Hook(settings, renderer, Metrics())
    hook.install(renderer.load(read_sources(folder)))
    return hook
