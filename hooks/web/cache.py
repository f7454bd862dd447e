"""A bounded memory of desired states, kept by the web layer around the `desire` step.

Validating and rendering is most of a sync's cost and depends only on `DesiredInputs` and the
template set, so entries are keyed by the set's digest and the inputs' digest: adding an
input to that object changes the key, and another template set never sees this one's
entries. Children are kept as compressed canonical JSON (about 3 KiB a resource), so that a
whole fleet fits.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, TypeVar

from hooks.canonical import dumps, loads
from hooks.core.desired import Desired, DesiredInputs
from hooks.settings import DEFAULT_CACHE_BYTES, DEFAULT_CACHE_SIZE

Answer = TypeVar("Answer")


@dataclass(frozen=True)
class _Entry:
    desired: Desired  # without its children
    children_zlib: bytes


class DesiredCache:
    """A thread-safe LRU map from (template set, inputs) to their desired state, bounded in
    entries and in the bytes its compressed children take."""

    def __init__(self, size: int = DEFAULT_CACHE_SIZE, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def key(inputs: DesiredInputs, templates: str) -> bytes | None:
        """None when the inputs cannot be digested (nothing is remembered for them)."""
        digest = inputs.digest()
        return None if digest is None else templates.encode() + digest

    def get(self, key: bytes | None) -> Desired | None:
        if key is None:
            return None
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
        children = tuple(loads(zlib.decompress(found.children_zlib)))
        return dataclasses.replace(found.desired, children=children)

    def put(self, key: bytes | None, desired: Desired) -> None:
        if key is None or self.size <= 0:
            return
        entry = _Entry(dataclasses.replace(desired, children=()), zlib.compress(dumps(desired.children), 1))
        if len(entry.children_zlib) > self.max_bytes // 64:
            return  # a huge resource: rendering it again costs less than crowding out the fleet
        with self._lock:
            previous = self._entries.pop(key, None)
            self.bytes -= len(previous.children_zlib) if previous else 0
            self._entries[key] = entry
            self.bytes += len(entry.children_zlib)
            while len(self._entries) > self.size or self.bytes > self.max_bytes:
                _, evicted = self._entries.popitem(last=False)
                self.bytes -= len(evicted.children_zlib)


class FailureMemory(Generic[Answer]):
    """Answers of renders that failed, by the same key, for `seconds` (thread-safe, bounded)."""

    def __init__(self, seconds: float, size: int = 1024) -> None:
        self.seconds = seconds
        self.size = size
        self._entries: OrderedDict[bytes, tuple[float, Answer]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: bytes | None) -> Answer | None:
        if key is None:
            return None
        with self._lock:
            found = self._entries.get(key)
            if found is None or found[0] < time.monotonic():
                self._entries.pop(key, None)
                return None
            return found[1]

    def put(self, key: bytes | None, answer: Answer) -> None:
        if key is None:
            return
        with self._lock:
            self._entries[key] = (time.monotonic() + self.seconds, answer)
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
