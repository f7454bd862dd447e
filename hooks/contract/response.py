"""Metacontroller's sync hook response, encoded canonically: children (in the order given)
and status, sorted keys, no nulls, so that an unchanged resource gets the same bytes.

`children` sorts first of the answer's keys, so children kept as canonical JSON (a cached
desired state's) are written as they are, ahead of the rest."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hooks.canonical import dumps, encoded_array


def encode_response(children: Sequence[dict[str, Any]], status: dict[str, Any], finalized: bool | None = None,
                    resync_after: float | None = None) -> bytes:
    """`finalized` is written only in answer to a finalize call: Metacontroller removes its
    finalizer when it is true, even after a sync. `resync_after` (seconds, a JSON number) asks
    for one more sync that much later."""
    rest: dict[str, Any] = {"status": status}  # every key sorts after "children"
    if finalized is not None:
        rest["finalized"] = finalized
    if resync_after is not None:
        rest["resyncAfterSeconds"] = round(resync_after, 3)
    return b'{"children":' + encoded_array(children) + b"," + dumps(rest)[1:]
