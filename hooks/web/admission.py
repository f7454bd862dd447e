"""Admitting a sync request: its body read within a deadline and within a byte budget shared
by every request being read, answered or sent back, before the sync counts as in flight.

A slow client (one that declares a large body and sends it slowly, or stalls) holds neither an
in-flight slot nor more budget than the bytes it has sent, and unfinished bodies may hold only
half the budget beyond their first 64 KiB: whatever they do, complete syncs are still
admitted. A body gets `timeout_seconds` to arrive (408 after), an answer as long to be sent;
the bytes stay held until it has been. A client that disconnects is counted, not an error.
"""

from __future__ import annotations

import asyncio

from fastapi import Request
from fastapi.responses import Response
from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope, Send

from hooks.web.answer import Answer, error

FREE_PREFIX_BYTES = 64 << 10  # of each body: what a sync of an ordinary resource needs


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
        self.unfinished = 0  # bytes beyond their first 64 KiB, of bodies still arriving

    async def receive(self, request: Request) -> tuple[bytes, Held]:
        """The request's body and its hold on the budget; Refused with a 413, 429, 408 or a
        note of the disconnect."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            raise Refused(self._too_large())
        hold = Held(self)
        chunks: list[bytes] = []
        try:
            async with asyncio.timeout(self.timeout_seconds):
                async for chunk in request.stream():
                    self._take(hold, len(chunk))
                    chunks.append(chunk)
        except BaseException as e:
            hold.release()
            if isinstance(e, TimeoutError):
                raise Refused(error(408, "timeout", "RequestTimeout",
                                    f"the request body did not arrive within {self.timeout_seconds:g} s")) from e
            if isinstance(e, ClientDisconnect):
                raise Refused(error(499, "disconnected", "ClientDisconnected",
                                    "the client went away before its request arrived")) from e
            raise
        self.unfinished -= hold.beyond_prefix
        hold.beyond_prefix = 0
        return b"".join(chunks), hold

    def _take(self, hold: Held, size: int) -> None:
        if hold.size + size > self.max_body_bytes:
            raise Refused(self._too_large())
        beyond = max(0, hold.size + size - max(hold.size, FREE_PREFIX_BYTES))
        if self.held + size > self.total_bytes or self.unfinished + beyond > self.total_bytes // 2:
            raise Refused(error(429, "overloaded", "TooManyRequests",
                                f"request bodies of {self.held} bytes are held already"))
        self.held += size
        self.unfinished += beyond
        hold.size += size
        hold.beyond_prefix += beyond

    def _too_large(self) -> Answer:
        return error(413, "too_large", "RequestTooLarge", f"the request body exceeds {self.max_body_bytes} bytes")


class Held:
    """One body's bytes in the budget, until `release`."""

    def __init__(self, budget: BodyBudget) -> None:
        self.budget = budget
        self.size = 0
        self.beyond_prefix = 0

    def release(self) -> None:
        self.budget.held -= self.size
        self.budget.unfinished -= self.beyond_prefix
        self.size = self.beyond_prefix = 0


class HeldResponse(Response):
    """A response that keeps its request's bytes held until it has been sent (a client that
    does not read its answer keeps them, and is cut off after `send_seconds`)."""

    def __init__(self, content: bytes, status_code: int, headers: dict[str, str], held: Held | None,
                 send_seconds: float) -> None:
        super().__init__(content, status_code, headers=headers, media_type="application/json")
        self.held = held
        self.send_seconds = send_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with asyncio.timeout(self.send_seconds):
                await super().__call__(scope, receive, send)
        finally:
            if self.held is not None:
                self.held.release()

