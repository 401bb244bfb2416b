"""What every judge drives: the client under test (rrkit's reference client, a command, a Python callable) behind
one interface, and the processes it runs."""

from __future__ import annotations

from .client import (
    Assignment,
    ClientEnd,
    ClientUnderTest,
    CommandClient,
    FunctionClient,
    ReferenceClient,
    ServerURLs,
    as_client,
)
from .process import ProcessEnd, run_process

__all__ = [
    "Assignment",
    "ClientEnd",
    "ClientUnderTest",
    "CommandClient",
    "FunctionClient",
    "ProcessEnd",
    "ReferenceClient",
    "ServerURLs",
    "as_client",
    "run_process",
]
