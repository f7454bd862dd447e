"""A pool of render worker processes, each doing one thing at a time within a budget.

A render (with loading the template set first when that worker has not compiled it yet) gets
`seconds` of wall time and `memory_bytes` of address space; past either, the worker is
killed (or exits) and replaced, and the caller gets a TemplateError for that resource only.
Every other worker goes on serving. Callers block in a thread; a caller that finds no worker
free within the budget gets `Busy`.
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from hooks.core.desired import Desired, DesiredInputs
from hooks.errors import Busy, TemplateError
from hooks.rendering.templateset import TemplateSources
from hooks.settings import ChildSettings, Settings
from hooks.workers.child import serve
from hooks.workers.renderer import KEPT_SETS

log = logging.getLogger("llmdeploy")
START_SECONDS = 60.0  # a worker imports llmdeploy before it is ready: generous on a slow node
MIN_RENDER_SECONDS = 0.2  # a render is not started with less time than this left


class _Failed(Exception):
    """The worker is gone (killed for its budget, or exited): replace it."""


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    loaded: OrderedDict[str, None] = field(default_factory=OrderedDict)

    def ask(self, request: tuple[Any, ...], deadline: float) -> Any:
        """The answer to `request`, or _Failed once the deadline passes or the worker dies."""
        try:
            self.conn.send(request)
            if not self.conn.poll(max(deadline - time.monotonic(), 0)):
                raise _Failed("timeout")
            kind, *rest = self.conn.recv()
        except (EOFError, OSError, BrokenPipeError) as e:
            raise _Failed("gone") from e
        if kind == "ok":
            return rest[0]
        if kind == "template":
            raise TemplateError(rest[0])
        if kind == "memory":
            raise _Failed(rest[0])
        raise RuntimeError(f"render worker: {rest[0]}")

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()


class WorkerPool:
    """`size` render workers with the same budget (a `Renderer`)."""

    def __init__(self, settings: ChildSettings, size: int, seconds: float, memory_bytes: int) -> None:
        self.settings = settings
        self.size = size
        self.seconds = seconds
        self.memory_bytes = memory_bytes
        self._context = multiprocessing.get_context("spawn")  # no inherited threads or sockets
        self._sources: OrderedDict[str, TemplateSources] = OrderedDict()
        self._idle: list[_Worker] = []
        self._free = threading.Condition()
        self._closed = False
        starting = [threading.Thread(target=self._start, daemon=True) for _ in range(size)]
        for thread in starting:
            thread.start()
        for thread in starting:
            thread.join()

    def load(self, sources: TemplateSources) -> str:
        digest = sources.digest()
        with self._free:
            self._sources[digest] = sources
            self._sources.move_to_end(digest)
        self._run(lambda worker, deadline: self._ensure_loaded(worker, digest, deadline))
        return digest

    def desire(self, inputs: DesiredInputs, templates: str, deadline: float | None = None) -> Desired:
        def render(worker: _Worker, by: float) -> Desired:
            self._ensure_loaded(worker, templates, by)
            desired: Desired = worker.ask(("desire", inputs, templates), by)
            return desired

        desired: Desired = self._run(render, f"{inputs.namespace}/{inputs.name}", deadline)
        return desired

    @property
    def idle(self) -> int:
        """Workers started and free right now."""
        with self._free:
            return len(self._idle)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._free:
            self._closed = True
            workers, self._idle = self._idle, []
        for worker in workers:
            worker.stop()

    def _run(self, job: Any, what: str = "the template set", until: float | None = None) -> Any:
        """`job(worker, deadline)` on a free worker: waiting for one and the job together end by
        `until` when given, and the job gets at most the budget."""
        until = until if until is not None else time.monotonic() + 2 * self.seconds
        if until - time.monotonic() < MIN_RENDER_SECONDS:
            raise Busy("no time is left for this sync to render")
        worker = self._acquire(min(self.seconds, until - time.monotonic() - MIN_RENDER_SECONDS))
        deadline = min(time.monotonic() + self.seconds, until)
        try:
            result = job(worker, deadline)
        except _Failed as e:
            worker.stop()
            self._replace()
            reason = str(e) if str(e) not in ("timeout", "gone") else (
                f"took longer than {self.seconds:g} s" if str(e) == "timeout" else "crashed")
            raise TemplateError(f"rendering {what} {reason}; its worker was replaced") from e
        except BaseException:
            self._release(worker)
            raise
        self._release(worker)
        return result

    def _ensure_loaded(self, worker: _Worker, digest: str, deadline: float) -> None:
        if digest in worker.loaded:
            return
        with self._free:
            sources = self._sources[digest]
        worker.ask(("load", sources), deadline)
        worker.loaded[digest] = None
        while len(worker.loaded) > KEPT_SETS:
            worker.loaded.popitem(last=False)

    def _acquire(self, timeout: float) -> _Worker:
        with self._free:
            if not self._free.wait_for(lambda: self._idle or self._closed, timeout=max(timeout, 0)):
                raise Busy(f"all {self.size} render workers stayed busy for as long as a sync may wait")
            if self._closed:
                raise Busy("the render workers are shut down")
            return self._idle.pop()

    def _release(self, worker: _Worker) -> None:
        with self._free:
            if self._closed:
                worker.stop()
                return
            self._idle.append(worker)
            self._free.notify()

    def _replace(self) -> None:
        threading.Thread(target=self._start, name="render-worker-start", daemon=True).start()

    def _start(self) -> None:
        """Start one worker and add it to the idle ones once it is ready; retry until it is."""
        delay = 1.0
        while not self._closed:
            parent, child = self._context.Pipe()
            process = self._context.Process(target=serve, args=(child, self.settings, self.memory_bytes),
                                            name="llmdeploy-render", daemon=True)
            process.start()
            child.close()
            worker = _Worker(process, parent)
            try:
                ready = parent.poll(START_SECONDS) and parent.recv() == ("ready",)
            except (EOFError, OSError):
                ready = False
            if ready:
                self._release(worker)
                return
            log.error("a render worker did not start (exit code %s); retrying in %g s", process.exitcode, delay)
            worker.stop()
            time.sleep(delay)
            delay = min(delay * 2, 30.0)


def worker_pool(settings: Settings, size: int | None = None) -> WorkerPool:
    """The render workers `settings` ask for (or `size` of them)."""
    budget = settings.render
    return WorkerPool(settings.children, size or budget.workers, budget.timeout_seconds, budget.memory_mib << 20)
