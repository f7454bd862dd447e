"""A bounded memory of desired states, wrapped around the pure `desire` step.

Validating and rendering is most of a sync's cost and depends only on `DesiredInputs`, so
the cache keys on the template set's serial and the inputs' digest: adding an input to that
object changes the key, and a reloaded template set never sees the old set's entries.
Children are kept as compressed canonical JSON (about 3 KiB a resource), so a whole fleet
fits.
"""

from __future__ import annotations

import dataclasses
import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass

from hooks.canonical import dumps, loads
from hooks.core.desired import Desired, DesiredInputs, desire
from hooks.rendering.templateset import TemplateSet
from hooks.settings import DEFAULT_CACHE_SIZE


@dataclass(frozen=True)
class _Entry:
    desired: Desired  # without its children
    children_zlib: bytes


class DesiredCache:
    """A thread-safe LRU map from (template set, inputs) to their desired state."""

    def __init__(self, size: int = DEFAULT_CACHE_SIZE) -> None:
        self.size = size
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def desire(self, inputs: DesiredInputs, templates: TemplateSet) -> Desired:
        """`desire(inputs, templates)`, remembered."""
        digest = inputs.digest()
        if digest is None:
            return desire(inputs, templates)
        key = templates.serial.to_bytes(8, "big") + digest
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
        if found is not None:
            children = tuple(loads(zlib.decompress(found.children_zlib)))
            return dataclasses.replace(found.desired, children=children)
        desired = desire(inputs, templates)
        entry = _Entry(dataclasses.replace(desired, children=()), zlib.compress(dumps(desired.children), 1))
        with self._lock:
            self.misses += 1
            self._entries[key] = entry
            if len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return desired
