"""Admitting a sync request: its body read within a deadline and within a byte budget shared
by every request being read or answered, before the sync counts as in flight.

A slow client (one that declares a large body and sends it a byte at a time) holds neither an
in-flight slot nor more budget than the bytes it has sent, and is cut off after the body
deadline; a client that disconnects is counted and logged, not reported as an error.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from fastapi import Request
from starlette.requests import ClientDisconnect

from hooks.web.hook import Answer, error


class Refused(Exception):
    """The request is answered without a sync; `answer` says how."""

    def __init__(self, answer: Answer) -> None:
        super().__init__(answer.fields.get("error"))
        self.answer = answer


class BodyBudget:
    """Request bodies held in memory at once, in bytes (touched only on the event loop)."""

    def __init__(self, max_body_bytes: int, total_bytes: int, timeout_seconds: float) -> None:
        self.max_body_bytes = max_body_bytes
        self.total_bytes = total_bytes
        self.timeout_seconds = timeout_seconds
        self.held = 0

    @asynccontextmanager
    async def body(self, request: Request) -> AsyncIterator[bytes]:
        """The request's body, held against the budget until the block ends; Refused with a
        413, 429, 408 or a note of the disconnect otherwise."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            raise Refused(self._too_large())
        chunks: list[bytes] = []
        size = 0
        try:
            try:
                with anyio.fail_after(self.timeout_seconds):
                    async for chunk in request.stream():
                        if size + len(chunk) > self.max_body_bytes:
                            raise Refused(self._too_large())
                        if self.held + len(chunk) > self.total_bytes:
                            raise Refused(error(429, "overloaded", "TooManyRequests",
                                                f"request bodies of {self.held} bytes are held already"))
                        self.held += len(chunk)
                        size += len(chunk)
                        chunks.append(chunk)
            except TimeoutError as e:
                raise Refused(error(408, "timeout", "RequestTimeout",
                                    f"the request body did not arrive within {self.timeout_seconds:g} s")) from e
            except ClientDisconnect as e:
                raise Refused(error(499, "disconnected", "ClientDisconnected",
                                    "the client went away before its request arrived")) from e
            yield b"".join(chunks)
        finally:
            self.held -= size

    def _too_large(self) -> Answer:
        return error(413, "too_large", "RequestTooLarge", f"the request body exceeds {self.max_body_bytes} bytes")
