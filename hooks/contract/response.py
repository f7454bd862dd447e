"""Metacontroller's sync hook response, encoded canonically: children (in the order given)
and status, sorted keys, no nulls, so that an unchanged resource gets the same bytes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hooks.canonical import dumps


def encode_response(children: Sequence[dict[str, Any]], status: dict[str, Any]) -> bytes:
    return dumps({"children": list(children), "status": status})
