"""Canonical JSON: the same value always gives the same bytes, and a short digest of them.

Used wherever bytes are compared or remembered: the answer Metacontroller receives, the
last-applied comparison, the desired-state cache key.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson


def dumps(value: Any) -> bytes:
    """Sorted keys, no whitespace."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


def digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()
