"""`llmdeploy_resources{phase}`: how many LLMDeployments are in each phase, by what their last
sync reported, each resource counted once.

One process keeps a book of resource -> (phase, when). With `serve --workers N` a resource is
synced by whichever worker Metacontroller reaches, so each worker writes its book to the
shared metrics folder (at most once a second) and the process that serves /metrics merges
the books, the newest report of each resource winning.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from hooks.api.status import Phase

PHASES: tuple[str, ...] = get_args(Phase)
MAX_TRACKED_RESOURCES = 100_000  # the book forgets the resource synced longest ago past this
FLUSH_SECONDS = 1.0
NAME, HELP = "llmdeploy_resources", "LLMDeployments by the phase their last sync reported."

Entry = tuple[str, float]  # phase, wall-clock time of the report


class PhaseBook:
    """The latest phase of every resource this process synced (thread-safe, bounded)."""

    def __init__(self) -> None:
        self.entries: OrderedDict[str, Entry] = OrderedDict()
        self.lock = threading.Lock()
        self.changed = threading.Event()

    def saw(self, resource: str, phase: str) -> None:
        with self.lock:
            self.entries.pop(resource, None)
            self.entries[resource] = (phase, time.time())
            if len(self.entries) > MAX_TRACKED_RESOURCES:
                self.entries.popitem(last=False)
        if not self.changed.is_set():  # setting it takes a lock and wakes the writer: once will do
            self.changed.set()

    def snapshot(self) -> dict[str, Entry]:
        with self.lock:
            return dict(self.entries)


def counts(books: list[dict[str, Entry]]) -> dict[str, int]:
    """Resources per phase, the newest report of each resource across `books` winning."""
    newest: dict[str, Entry] = {}
    for book in books:
        for resource, entry in book.items():
            if resource not in newest or entry[1] > newest[resource][1]:
                newest[resource] = entry
    totals = dict.fromkeys(PHASES, 0)
    for phase, _ in newest.values():
        totals[phase] = totals.get(phase, 0) + 1
    return totals


def _family(totals: dict[str, int]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(NAME, HELP, labels=["phase"])
    for phase, total in totals.items():
        family.add_metric([phase], total)
    return family


class BookCollector(Collector):
    """The phases of one process's book."""

    def __init__(self, book: PhaseBook) -> None:
        self.book = book

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield _family(counts([self.book.snapshot()]))


class SharedBooks:
    """The books of every worker process, in the shared metrics folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def writer(self, book: PhaseBook) -> threading.Thread:
        """A daemon thread that writes `book` to the folder whenever it has changed."""
        path = self.folder / f"phases-{os.getpid()}.json"

        def flush() -> None:
            while True:
                book.changed.wait()
                book.changed.clear()
                temporary = path.with_suffix(".tmp")
                temporary.write_text(json.dumps(book.snapshot()))
                temporary.replace(path)
                time.sleep(FLUSH_SECONDS)

        thread = threading.Thread(target=flush, name="phase-book-writer", daemon=True)
        thread.start()
        return thread

    def collector(self) -> Collector:
        folder = self.folder

        class Merged(Collector):
            def collect(self) -> Iterator[GaugeMetricFamily]:
                books = []
                for path in sorted(folder.glob("phases-*.json")):
                    try:
                        books.append({k: (v[0], v[1]) for k, v in json.loads(path.read_text()).items()})
                    except (OSError, ValueError, TypeError, IndexError):
                        continue  # being replaced: the next scrape reads it
                yield _family(counts(books))

        return Merged()
