"""Prometheus metrics of the hook, served at GET /metrics (and alone on the metrics port).

One `Metrics` object per process, built by the app. With several worker processes
(`--workers`), prometheus_client's multiprocess mode sums them: the CLI points
PROMETHEUS_MULTIPROC_DIR at a private folder before the workers start; the resources-by-phase
gauge is merged from the workers' books (see `hooks.web.phases`).
"""

from __future__ import annotations

import os
from pathlib import Path

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
    start_http_server,
)

from hooks.web.phases import BookCollector, PhaseBook, SharedBooks

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CONTENT_TYPE = CONTENT_TYPE_LATEST
MULTIPROCESS_FOLDER = "PROMETHEUS_MULTIPROC_DIR"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.multiprocess = MULTIPROCESS_FOLDER in os.environ
        self.requests = Counter("llmdeploy_hook_requests", "Hook requests answered, by hook and outcome.",
                                ["hook", "outcome"], registry=self.registry)
        self.latency = Histogram("llmdeploy_hook_request_duration_seconds", "Time to answer a hook request.",
                                 ["hook", "outcome"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.render = Histogram("llmdeploy_render_duration_seconds", "Time to render one resource's children.",
                                buckets=LATENCY_BUCKETS, registry=self.registry)
        self.reloads = Counter("llmdeploy_template_reloads", "Template folder reloads, by result.",
                               ["result"], registry=self.registry)
        self.replayed = Counter("llmdeploy_answers_replayed", "Syncs answered with the answer to the same request "
                                "before, which holds at any time (no sync was run).", registry=self.registry)
        self.in_flight = Gauge("llmdeploy_hook_in_flight", "Sync requests being answered now.",
                               registry=self.registry, multiprocess_mode="livesum")
        self._by_outcome: dict[tuple[str, str], tuple[Counter, Histogram]] = {}
        self.phases = PhaseBook()
        if self.multiprocess:
            SharedBooks(Path(os.environ[MULTIPROCESS_FOLDER])).writer(self.phases)
        else:
            self.registry.register(BookCollector(self.phases))

    def observe(self, hook: str, outcome: str, seconds: float) -> None:
        found = self._by_outcome.get((hook, outcome))
        if found is None:  # looking the labelled series up costs more than counting
            found = self._by_outcome[hook, outcome] = (self.requests.labels(hook, outcome),
                                                      self.latency.labels(hook, outcome))
        found[0].inc()
        found[1].observe(seconds)

    def saw_phase(self, resource: str, phase: str) -> None:
        self.phases.saw(resource, phase)

    def reloaded(self, ok: bool) -> None:
        self.reloads.labels("ok" if ok else "error").inc()

    def exposition(self) -> bytes:
        return generate_latest(workers_registry() if self.multiprocess else self.registry)


def workers_registry() -> CollectorRegistry:
    """A registry that sums what every worker process of `serve --workers N` records."""
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    registry.register(SharedBooks(Path(os.environ[MULTIPROCESS_FOLDER])).collector())
    return registry


def serve_metrics(host: str, port: int, registry: CollectorRegistry) -> None:
    """Serve `registry` on a port of its own (a thread), so that a scraper can be let in
    without letting it call the hook."""
    start_http_server(port, addr=host, registry=registry)
