"""Running the app under uvicorn, with a shutdown that loses no accepted request.

uvicorn's graceful shutdown finishes requests it has parsed but closes connections whose
request it has not read yet: `DrainingServer` stops accepting first, lets the loop read what
was already sent, then shuts down as uvicorn does.
"""

from __future__ import annotations

import asyncio
import socket
import sys

import uvicorn
from uvicorn.supervisors import Multiprocess

DRAIN_SECONDS = 1.0  # enough for the loop to read every accepted connection, sync by sync


class DrainingServer(uvicorn.Server):
    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()  # no new connections from here on
        await asyncio.sleep(DRAIN_SECONDS)
        await super().shutdown(sockets)


# The sync thread is pure CPU; the event loop needs the GIL only briefly. Python hands the
# GIL over every 5 ms by default, which would stall the loop that long per request.
GIL_SWITCH_SECONDS = 0.0005


def serve(config: uvicorn.Config) -> None:
    """Serve in this process (draining on shutdown), or with `config.workers` processes
    (uvicorn's own workers, which shut down without the drain: in Kubernetes, prefer replicas)."""
    sys.setswitchinterval(GIL_SWITCH_SECONDS)
    if config.workers > 1:
        Multiprocess(config, sockets=[config.bind_socket()]).run()
    else:
        DrainingServer(config).run()
