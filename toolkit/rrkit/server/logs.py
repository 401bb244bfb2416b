"""The server's logs made quiet for a run whose results are reported otherwise (a table, a verdict)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

QUIETED = {"rrkit": logging.CRITICAL, "asyncio": logging.ERROR}
"""The loggers a judged run quiets, to that level: rrkit's (scripted faults make the server warn: an unmatched retry,
a cut stream) and asyncio's (a write to a socket its client closed, after a cut or a client that gave up)."""


@contextmanager
def quiet_server_logs() -> Iterator[None]:
    """The loggers of `QUIETED` quiet while inside: the run's own report says what matters."""
    loggers = {logging.getLogger(name): level for name, level in QUIETED.items()}
    before = {logger: logger.level for logger in loggers}
    for logger, level in loggers.items():
        logger.setLevel(level)
    try:
        yield
    finally:
        for logger, level in before.items():
            logger.setLevel(level)
