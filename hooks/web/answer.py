"""What the hook answers one sync request with: the status code and body Metacontroller
receives, and what to log and count about it. Every step of the web layer returns one instead
of raising; the memories keep them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hooks.canonical import dumps


@dataclass(frozen=True)
class Answer:
    status_code: int
    body: bytes
    outcome: str
    fields: dict[str, Any]


def error(code: int, outcome: str, kind: str, message: str, fields: dict[str, Any] | None = None) -> Answer:
    return Answer(code, dumps({"error": kind, "message": message}), outcome, {**(fields or {}), "error": message})
