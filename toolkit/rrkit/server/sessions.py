"""Sessions' names, bounds and refusals (the registry is in `state.Sessions`): light, for the options that set them."""

from __future__ import annotations

import re

from ..protocol.exceptions import RRKitError
from ..protocol.headers import SESSION_HEADER

SESSION_PARAM = "session"  # an admin request may name its session in the query instead
IDLE_SECONDS = 300.0
MAX_SESSIONS = 256
NAME_LENGTH = 200
_NAME = re.compile(rf"[\x21-\x7e]{{1,{NAME_LENGTH}}}")  # visible ASCII: a pytest node id, a uuid, a job name


class SessionRefused(RRKitError):
    """A request whose session cannot be had: a name that is no name, a source that cannot be split, no room."""

    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)  # RRKitError's: the message
        self.status, self.message, self.code = status, message, code


def check_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise SessionRefused(
            400,
            f"{SESSION_HEADER}: {name[:80]!r} is no session name: give 1 to {NAME_LENGTH} visible ASCII characters "
            "(letters, digits, punctuation; no spaces), such as the test's node id.",
            "invalid_session",
        )
    return name
