"""A WebSocket client that sends a text frame that is not UTF-8 gets the socket closed with 1007, and the server
logs a line about the client, never a traceback (a peer's bad bytes are no server error)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosedError

from rrkit.script import Script

from ..errortrap import Serve

pytestmark = pytest.mark.hostile


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_text_frame_that_is_not_utf8_closes_1007_and_logs_no_traceback(serve: Serve) -> None:
    server = serve(Script())
    kept, logger = Kept(), logging.getLogger("uvicorn.error")  # uvicorn's own logger: it does not propagate

    async def send_bad_text() -> int | None:
        async with connect(server.ws_url + "/responses") as ws:
            await ws.send(b'{"type":"response.create","model":"m","input":"\xff"}', text=True)
            try:
                await asyncio.wait_for(ws.recv(), 30)
            except ConnectionClosedError as closed:
                return closed.rcvd.code if closed.rcvd is not None else None
        return None

    logger.addHandler(kept)
    try:
        assert asyncio.run(send_bad_text()) == 1007
    finally:
        logger.removeHandler(kept)
    said = [record for record in kept.records if "UTF-8" in record.getMessage()]
    assert said and all(record.exc_info is None and record.levelno < logging.ERROR for record in said)
