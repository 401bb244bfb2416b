"""What every judge drives: the client under test (rrkit's reference client, a command, a Python callable) behind
one interface, the processes it runs, and the remote-server driver. The names below load on first use (PEP 562),
so that a judge of servers loads nothing of the clients' side."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .client import (
        ANSWER_ENV,
        Assignment,
        ClientEnd,
        ClientUnderTest,
        CommandClient,
        FunctionClient,
        ReferenceClient,
        ServerURLs,
        answer_file,
        as_client,
        written_answer,
    )
    from .process import ProcessEnd, run_process

_HOMES = {
    ".client": (
        "ANSWER_ENV",
        "Assignment",
        "ClientEnd",
        "ClientUnderTest",
        "CommandClient",
        "FunctionClient",
        "ReferenceClient",
        "ServerURLs",
        "answer_file",
        "as_client",
        "written_answer",
    ),
    ".process": ("ProcessEnd", "run_process"),
}
__all__ = [
    "ANSWER_ENV",
    "Assignment",
    "ClientEnd",
    "ClientUnderTest",
    "CommandClient",
    "FunctionClient",
    "ProcessEnd",
    "ReferenceClient",
    "ServerURLs",
    "answer_file",
    "as_client",
    "run_process",
    "written_answer",
]


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
