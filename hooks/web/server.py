"""Running the app under uvicorn, with a shutdown that loses no accepted request.

uvicorn's graceful shutdown finishes requests it has parsed but closes connections whose
request it has not read yet: `DrainingServer` stops accepting first, lets the loop read what
was already sent, then shuts down as uvicorn does.
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import sys
import tempfile
from typing import Any

import uvicorn
from uvicorn.supervisors import Multiprocess

from hooks.edge.templates import read_sources
from hooks.errors import ConfigError
from hooks.settings import Settings
from hooks.web.app import create_app
from hooks.web.metrics import Metrics, serve_metrics, workers_registry
from hooks.workers.pool import worker_pool

DRAIN_SECONDS = 1.0  # enough for the loop to read every accepted connection, sync by sync


def check_tls(settings: Settings) -> None:
    """Load the certificate and key as uvicorn will, so that a wrong file is one clear line
    (ConfigError) before anything starts, not a traceback from inside uvicorn."""
    cert, key = settings.server.tls_cert_file, settings.server.tls_key_file
    if cert is None or key is None:
        return
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"cannot load the TLS certificate {cert} with key {key}: {e}") from e


class DrainingServer(uvicorn.Server):
    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()  # no new connections from here on
        await asyncio.sleep(DRAIN_SECONDS)
        await super().shutdown(sockets)


# Threads that hold the GIL (a large body's sync, a rollout's move, waiting on a render
# worker) would stall the event loop for Python's default 5 ms switch interval at a time.
GIL_SWITCH_SECONDS = 0.0005


def serve(settings: Settings, host: str, port: int, workers: int) -> None:
    """Serve in this process, draining on shutdown, or with `workers` processes (uvicorn's own
    workers, which shut down without the drain: in Kubernetes, prefer replicas). Refuses to
    start (TemplateError) while the template set is broken."""
    check_tls(settings)
    sys.setswitchinterval(GIL_SWITCH_SECONDS)
    renderer = worker_pool(settings, size=1 if workers > 1 else None)
    try:
        renderer.load(read_sources(settings.templates.folder))
    except BaseException:
        renderer.close()
        raise
    common: dict[str, Any] = {
        "host": host, "port": port, "log_config": None, "access_log": False,
        "timeout_graceful_shutdown": settings.server.graceful_shutdown_seconds,
        "ssl_certfile": settings.server.tls_cert_file, "ssl_keyfile": settings.server.tls_key_file,
    }
    metrics_port = settings.server.metrics_port
    if workers > 1:
        renderer.close()  # it only checked the set: each worker process starts its own
        # Each worker builds its app from the environment; metrics are summed across them.
        os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="llmdeploy-metrics-"))
        if metrics_port:
            serve_metrics(host, metrics_port, workers_registry())
        config = uvicorn.Config("hooks.web.app:create_app_from_env", factory=True, workers=workers, **common)
        Multiprocess(config, sockets=[config.bind_socket()]).run()
    else:
        metrics = Metrics()
        if metrics_port:
            serve_metrics(host, metrics_port, metrics.registry)
        DrainingServer(uvicorn.Config(create_app(settings, metrics, renderer=renderer), **common)).run()
