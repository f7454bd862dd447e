"""Metacontroller's sync hook response, encoded canonically: children (in the order given)
and status, sorted keys, no nulls, so that an unchanged resource gets the same bytes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hooks.canonical import dumps


def encode_response(children: Sequence[dict[str, Any]], status: dict[str, Any], finalized: bool | None = None,
                    resync_after: float | None = None) -> bytes:
    """`finalized` is written only in answer to a finalize call: Metacontroller removes its
    finalizer when it is true, even after a sync. `resync_after` (seconds, a JSON number) asks
    for one more sync that much later."""
    body: dict[str, Any] = {"children": list(children), "status": status}
    if finalized is not None:
        body["finalized"] = finalized
    if resync_after is not None:
        body["resyncAfterSeconds"] = round(resync_after, 3)
    return dumps(body)
