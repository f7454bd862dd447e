"""Bounded memories the web layer keeps around the pure sync.

`DesiredCache`: validating and rendering is most of a sync's cost and depends only on
`DesiredInputs` and the template set, so entries are keyed by the set's digest and the
inputs' digest: adding an input to that object changes the key, and another template set
never sees this one's entries. Children are kept as compressed canonical JSON (about 3 KiB a
resource, with lz4), so that a whole fleet fits.

`AnswerMemory`: whole answers to byte-identical requests, for answers that read no clock and
needed no fact (about 3 KiB a resource, compressed).
"""

from __future__ import annotations

import dataclasses
import hashlib
import pickle
import threading
import time
from collections import OrderedDict
from typing import Any, Generic, TypeVar

import lz4.block

from hooks.canonical import CanonicalArray, encoded_array
from hooks.core.desired import Desired, DesiredInputs
from hooks.settings import DEFAULT_CACHE_BYTES, DEFAULT_CACHE_SIZE
from hooks.web.answer import Answer

Meta = TypeVar("Meta")


def _compress(data: bytes) -> bytes:
    compressed: bytes = lz4.block.compress(data)  # with its size: `_decompress` needs no other
    return compressed


def _decompress(data: bytes) -> bytes:
    decompressed: bytes = lz4.block.decompress(data)
    return decompressed


ENTRY_OVERHEAD = 320  # bytes an entry takes besides its key, data and meta: the objects holding them


class CompressedLRU(Generic[Meta]):
    """A thread-safe LRU map from keys to compressed bytes and what goes with them (kept
    pickled: as objects, what a render worker sent back takes several times its size, and
    none of it would be counted), bounded in entries and in the bytes they take, all counted.
    An entry larger than 1/64 of them is not kept: computing it again costs less than
    crowding out the fleet."""

    def __init__(self, size: int = DEFAULT_CACHE_SIZE, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[bytes, tuple[bytes, bytes]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def recall(self, key: bytes) -> tuple[bytes, Meta] | None:
        """The bytes kept under `key`, decompressed, and what goes with them."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
        meta: Meta = pickle.loads(found[1])
        return _decompress(found[0]), meta

    def keep(self, key: bytes, data: bytes, meta: Meta) -> None:
        if self.size <= 0:
            return
        entry = (_compress(data), pickle.dumps(meta, pickle.HIGHEST_PROTOCOL))
        cost = _cost(key, entry)
        if cost > self.max_bytes // 64:
            return
        with self._lock:
            previous = self._entries.pop(key, None)
            self.bytes -= _cost(key, previous) if previous else 0
            self._entries[key] = entry
            self.bytes += cost
            while len(self._entries) > self.size or self.bytes > self.max_bytes:
                evicted_key, evicted = self._entries.popitem(last=False)
                self.bytes -= _cost(evicted_key, evicted)


def _cost(key: bytes, entry: tuple[bytes, bytes]) -> int:
    return len(key) + len(entry[0]) + len(entry[1]) + ENTRY_OVERHEAD


class DesiredCache(CompressedLRU[tuple[int, Desired]]):
    """Desired states by (template set, inputs): their children as canonical JSON, handed back
    as such (`CanonicalArray`: the answer takes the bytes, nothing decodes them unless read)."""

    @staticmethod
    def key(inputs: DesiredInputs, templates: str) -> bytes | None:
        """None when the inputs cannot be digested (nothing is remembered for them)."""
        digest = inputs.digest()
        return None if digest is None else templates.encode() + digest

    def get(self, key: bytes | None) -> Desired | None:
        found = self.recall(key) if key is not None else None
        if found is None:
            return None
        children, (count, desired) = found
        return dataclasses.replace(desired, children=CanonicalArray(children, count))

    def put(self, key: bytes | None, desired: Desired) -> None:
        if key is not None:
            self.keep(key, encoded_array(desired.children),
                      (len(desired.children), dataclasses.replace(desired, children=())))


class AnswerMemory(CompressedLRU[tuple[int, str, dict[str, Any]]]):
    """Answers by (template set, the request's exact bytes), for answers that hold at any time
    (`SyncResult.replayable`): most syncs are resyncs of a resource nothing happened to, byte
    for byte the request before."""

    @staticmethod
    def key(body: bytes, templates: str) -> bytes:
        return templates.encode() + hashlib.sha256(body).digest()

    def get(self, key: bytes) -> Answer | None:
        found = self.recall(key)
        if found is None:
            return None
        body, (status_code, outcome, fields) = found
        return Answer(status_code, body, outcome, fields)

    def put(self, key: bytes, answer: Answer) -> None:
        self.keep(key, answer.body, (answer.status_code, answer.outcome, answer.fields))


class FailureMemory:
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
