"""A small HTTP/1.1 load generator for 127.0.0.1, run in its own process.

    python -m bench.loadgen PORT METHOD PATH BODY_FILE CONCURRENCY SECONDS [VARY]

Each of CONCURRENCY keep-alive connections sends one request after another until SECONDS
pass; prints JSON: requests, per-status counts, latency percentiles, requests per second.
With VARY (digits found in the body), each request has them replaced by a serial number of
the same width: every request is byte for byte new.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path


async def worker(port: int, head: bytes, body: bytes, vary: bytes, serials: Iterator[int], deadline: float,
                 latencies: list[float], statuses: dict[int, int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            writer.write(head + (body.replace(vary, f"{next(serials):0{len(vary)}d}".encode(), 1) if vary else body))
            answer = await reader.readuntil(b"\r\n\r\n")
            status = int(answer.split(b" ", 2)[1])
            length = 0
            for line in answer.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - started)
            statuses[status] = statuses.get(status, 0) + 1
    finally:
        writer.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


async def run(port: int, method: str, path: str, body: bytes, concurrency: int, seconds: float,
              vary: bytes = b"") -> dict[str, object]:
    assert not vary or vary.isdigit() and vary in body, "VARY must be digits found in the body"
    head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    started = time.perf_counter()
    deadline = started + seconds
    serials = itertools.count()
    await asyncio.gather(*(worker(port, head, body, vary, serials, deadline, latencies, statuses)
                           for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    return {"requests": len(latencies), "statuses": statuses, "rps": len(latencies) / elapsed,
            "p50_ms": percentile(latencies, 0.50) * 1000, "p99_ms": percentile(latencies, 0.99) * 1000}


def main() -> None:
    port, method, path, body_file, concurrency, seconds = sys.argv[1:7]
    vary = sys.argv[7].encode() if len(sys.argv) > 7 else b""
    body = Path(body_file).read_bytes() if body_file != "-" else b""
    print(json.dumps(asyncio.run(run(int(port), method, path, body, int(concurrency), float(seconds), vary))))


if __name__ == "__main__":
    main()
