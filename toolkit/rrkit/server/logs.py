"""The server's logs made quiet for a run whose results are reported otherwise (a table, a verdict)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def quiet_server_logs() -> Iterator[None]:
    """Only critical records from rrkit's loggers while inside: scripted faults make the server warn (an unmatched
    retry, a cut stream), and the run's own report says what matters."""
    logger = logging.getLogger("rrkit")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)
