"""Catches errors the servers log (uvicorn, rrkit), so that tests can require a server that never broke."""

from __future__ import annotations

import logging

LOGGERS = ("uvicorn.error", "uvicorn.asgi", "rrkit")


class ErrorTrap(logging.Handler):
    """uvicorn reconfigures its loggers (dropping their handlers) each time a server is configured,
    so attach the trap after every start."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def attach(self) -> None:
        for name in LOGGERS:
            logger = logging.getLogger(name)
            if self not in logger.handlers:
                logger.addHandler(self)

    def detach(self) -> None:
        for name in LOGGERS:
            logging.getLogger(name).removeHandler(self)
