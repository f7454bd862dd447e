"""Metacontroller's last-applied annotation: the one place that reads and compares it.

Dynamic apply stores, on every child, exactly the object the hook last answered with (Go's
json.Marshal of it). The hook reads it to keep a child unchanged (re-answering it is a
no-op merge) and to tell whether a live child is about to change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hooks.canonical import digest, dumps, loads

LAST_APPLIED_ANNOTATION = "metacontroller.k8s.io/last-applied-configuration"

JSON = dict[str, Any]

_GO_ESCAPES = ((b"&", b"\\u0026"), (b"<", b"\\u003c"), (b">", b"\\u003e"),
               ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


def go_json(canonical: bytes) -> bytes:
    """Canonical JSON as Go's json.Marshal writes the same map: sorted keys like ours, but
    HTML characters escaped. They only occur inside strings, so replacing them is exact."""
    for raw, escaped in _GO_ESCAPES:
        canonical = canonical.replace(raw, escaped)
    return canonical


def parse(annotation: str | None) -> JSON | None:
    """The object an annotation holds, or None when there is none or it is not an object."""
    if annotation is None:
        return None
    try:
        obj = loads(annotation)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


@dataclass(frozen=True)
class Fingerprint:
    """Digests of an object the hook answers with, as we encode it and as Go re-encodes it."""

    canonical: bytes
    go: bytes

    @classmethod
    def of(cls, obj: JSON) -> Fingerprint:
        canonical = dumps(obj)
        return cls(digest(canonical), digest(go_json(canonical)))


def was_applied(annotation: str | None, fingerprint: Fingerprint) -> bool:
    """Whether a child's annotation records exactly the object `fingerprint` is of: first as
    Metacontroller writes it, then, for any other spelling, by decoding it."""
    if annotation is None:
        return False
    if digest(annotation.encode()) == fingerprint.go:
        return True
    obj = parse(annotation)
    return obj is not None and digest(dumps(obj)) == fingerprint.canonical
