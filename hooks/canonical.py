"""Canonical JSON: the same value always gives the same bytes, and a short digest of them.

Used wherever bytes are compared or remembered: the answer Metacontroller receives, the
last-applied comparison, the desired-state cache key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Any, overload

import orjson


def dumps(value: Any) -> bytes:
    """Sorted keys, no whitespace."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


def digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


class CanonicalArray(Sequence[Any]):
    """A JSON array kept as its canonical bytes (`encoded`), decoded when an item is first
    read: a cached desired state's children go into the answer as these bytes, and are
    decoded only when the sync reads them (it does not on the usual path). Equal to any
    sequence of the same items."""

    __slots__ = ("encoded", "_length", "_items")

    def __init__(self, encoded: bytes, length: int) -> None:
        self.encoded = encoded
        self._length = length  # told, not counted: counting would decode
        self._items: tuple[Any, ...] | None = None

    def _decoded(self) -> tuple[Any, ...]:
        if self._items is None:
            items = tuple(loads(self.encoded))
            if len(items) != self._length:
                raise ValueError(f"a canonical array said to hold {self._length} items holds {len(items)}")
            self._items = items
        return self._items

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Any, ...]: ...

    def __getitem__(self, index: int | slice) -> Any:
        return self._decoded()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._decoded())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CanonicalArray):
            return self.encoded == other.encoded
        return isinstance(other, Sequence) and not isinstance(other, (str, bytes)) and self._decoded() == tuple(other)

    __hash__ = None  # type: ignore[assignment]  # like a list: its items are dicts

    def __repr__(self) -> str:
        return f"CanonicalArray({self._length} items, {len(self.encoded)} bytes)"


def encoded_array(items: Sequence[Any]) -> bytes:
    """The canonical JSON of `items` as an array, without encoding them again when they are
    kept as such already."""
    return items.encoded if isinstance(items, CanonicalArray) else dumps(list(items))
