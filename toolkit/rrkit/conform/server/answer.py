"""What a server answered one step of a probe with, as the probe saw it: status, headers, the events (or the
body) in order, how the answer ended; and for a WebSocket, its upgrade."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...drive.ending import Ending
from ...protocol import events as ev
from ...protocol.errors import ending_error
from ...protocol.headers import media_type
from ...protocol.vocabulary import Transport

if TYPE_CHECKING:
    from ...drive.remote import Sent
    from ...drive.upgrade import Upgrade


@dataclass
class Answer:
    """The answer to one step."""

    probe: str
    step: int
    transport: Transport
    sent: dict[str, Any] | str  # the body or frame, or the raw text
    status: int | None = None  # HTTP status; over WebSocket the upgrade's (101)
    headers: dict[str, str] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)  # the stream's events (frames), in order
    unreadable: list[tuple[int, str]] = field(default_factory=list)  # (place, text) of data that is no JSON object
    not_utf8: str | None = None  # where the stream's bytes stopped being UTF-8 text
    body: Any = None  # a whole JSON body (not a stream)
    body_text: str | None = None  # a whole body's text (JSON or not)
    ending: Ending = Ending.WHOLE
    error: str | None = None  # what broke, in words
    upgrade: Upgrade | None = None
    connection: int | None = None  # WebSocket: which of the probe's sockets carried it (1, 2, ... as reopened)
    retried_after: tuple[str, ...] = ()  # the answers before this one, each in words, when the step was sent again
    request: str = ""  # another route's request in words: `GET /responses/resp_1?stream=true`
    query: dict[str, str] = field(default_factory=dict)  # another route's query, as sent
    origin: Answer | None = None  # the answer that made the response `{response}` named
    polls: int = 0  # how many times a polling step (`until`) was sent
    closed_code: int | None = None  # WebSocket: the close code the server's close frame carried, when it closed

    def take(self, event: dict[str, Any]) -> None:
        """One event of the answer as it came: data that was no JSON object is kept as unreadable, at its place."""
        if event.get("type") == ev.UNPARSABLE:
            self.unreadable.append((len(self.events), str(event.get("data"))[:200]))
        elif event.get("type") != ev.SSE_COMMENT:
            self.events.append(event)

    def record(self, sent: Sent) -> None:
        """What the remote-server driver read: the status and headers, each event (or the whole body), how it
        ended."""
        exchange = sent.exchange
        if exchange.response_status is not None and self.transport == "http":
            self.status, self.headers = exchange.response_status, dict(exchange.response_headers)
        for recorded in exchange.events:
            self.take(recorded.event)
        if exchange.response_body is not None:
            self.body_text = exchange.response_body.content.decode("utf-8", "replace")
            try:
                self.body = json.loads(self.body_text) if self.body_text.strip() else None
            except ValueError:
                self.body = None
        self.ending, self.error, self.not_utf8 = sent.ending, sent.error, sent.not_utf8
        self.closed_code = sent.closed_code

    @property
    def summary(self) -> str:
        """The answer in a few words: `status 500`, `cut`, `response.failed server_error`."""
        if self.ending is not Ending.WHOLE:
            return self.ending.value
        last = self.events[-1] if self.events else None
        if last is not None and last.get("type") in (ev.FAILED, ev.ERROR):
            code = ending_error(last).get("code")
            return f"{last.get('type')} {code}" if code else str(last.get("type"))
        return f"status {self.status}"

    @property
    def content_type(self) -> str:
        return media_type(self.headers.get("content-type", ""))

    @property
    def streamed(self) -> bool:
        return self.transport == "ws" or self.content_type == "text/event-stream"

    @property
    def completed(self) -> bool:
        """Whether the answer is a completed response (so a later step may continue it)."""
        if self.events:
            return self.events[-1].get("type") == ev.COMPLETED
        return isinstance(self.body, dict) and self.body.get("status") == "completed"

    @property
    def place(self) -> str:
        return f"{self.probe} [{self.transport}] step {self.step + 1}" + (f" ({self.request})" if self.request else "")

    @property
    def ok(self) -> bool:
        """Whether the request was answered whole with a 2xx."""
        return self.ending is Ending.WHOLE and self.status is not None and 200 <= self.status < 300

    @property
    def went_through(self) -> bool:
        """Whether a later step may go on from this answer: a 2xx whose stream completed, or whose body is not a
        response that failed."""
        if not self.ok:
            return False
        if self.streamed:
            return self.completed
        return not (isinstance(self.body, dict) and self.body.get("status") in ("failed", "incomplete", "cancelled"))

    @property
    def response_id(self) -> str | None:
        """The id of the response this answer carries, from its events or its body."""
        for event in self.events:
            response = event.get("response")
            if isinstance(response, dict) and isinstance(response.get("id"), str):
                return str(response["id"])
        if isinstance(self.body, dict) and isinstance(self.body.get("id"), str):
            return str(self.body["id"])
        return None
