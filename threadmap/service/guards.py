"""What keeps a browser page on another site and slow or greedy clients from misusing the
server: the cross-origin write guard (an ASGI middleware) and the HTTP server's bounds — a
deadline for each request's head and body, and a bound on connections (uvicorn's).

These bound what one server process can be made to hold; they are no substitute for a reverse
proxy in front of a server that faces a network (see docs/service.md).
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

import h11
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from threadmap.service.core import Settings

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class OriginGuard:
    """A page on another site may POST here (text/plain and forms need no preflight): a browser
    says where it comes from, and only this server's own page may write.  ``Origin: null`` (a
    sandboxed frame, a ``data:`` page, a redirect) is a foreign origin too.  Every answer is
    marked ``nosniff``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        origin = headers.get("origin")
        if scope["method"] in WRITE_METHODS and origin is not None and \
                (origin == "null" or urlsplit(origin).netloc != headers.get("host", "")):
            response = JSONResponse({"detail": f"cross-origin request from {origin} refused"}, status_code=403,
                                    headers={"X-Content-Type-Options": "nosniff"})
            await response(scope, receive, send)
            return

        async def send_nosniff(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []),
                                                   (b"x-content-type-options", b"nosniff")]}
            await send(message)

        await self.app(scope, receive, send_nosniff)


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline for each request to arrive whole: from the
    connection (or the end of the previous answer) to the last byte of the body.  A client
    that trickles its head or its body is dropped when the deadline passes, so slow clients
    cannot hold connections without end.  ``request_seconds`` is set per server
    (:func:`uvicorn_options`)."""

    request_seconds: float = 30.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def _arm(self) -> None:
        self._request_timer = self.loop.call_later(self.request_seconds, self._request_deadline)

    def _request_deadline(self) -> None:
        # their_state is DONE once the whole request (head and body) is in; IDLE before its
        # head, SEND_BODY during its body: anything short of DONE at the deadline is too slow
        if not self.transport.is_closing() and self.conn.their_state is not h11.DONE:
            self.transport.close()

    def on_response_complete(self) -> None:
        self._request_timer.cancel()
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request on this connection has the same deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._request_timer.cancel()
        super().connection_lost(exc)


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """``uvicorn.run`` keywords for a server with these settings: the request deadline, the
    bound on connections (past it a 503), a short keep-alive."""
    protocol = type("DeadlineH11Protocol", (DeadlineH11Protocol,), {"request_seconds": settings.request_seconds})
    return {"http": protocol, "limit_concurrency": settings.max_connections, "timeout_keep_alive": 5,
            "log_level": "warning", "timeout_graceful_shutdown": 5}
