"""Which exchanges a query asks for (session, route, method, status, outcome, model, since, until): one filter over
the admin API's exchanges and a `--journal` file's records alike, read from query parameters or options."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from difflib import get_close_matches
from typing import Any, NamedTuple

from ..protocol.exceptions import BadRequest, SettingError
from ..protocol.numbers import decimal, integer, shown_value
from ..protocol.outcome import OutcomeKind
from ..protocol.routes import CREATE, ROUTE_NAMES
from .capture import Exchange

FILTER_PARAMS = ("session", "route", "method", "status", "outcome", "model", "since", "until")
"""The query parameters of `GET /__rrkit/exchanges` (and the options of `rrkit show`) a filter is read from."""

ID_OR_TIME = (
    "an exchange id (a whole number) or a time: ISO 8601 (2026-12-07T09:00:00Z; UTC when it gives no offset) "
    "or Unix seconds with a decimal point (1765098000.0)"
)

_STATUS_CLASS = re.compile(r"[1-5]xx")
_NEAR = 64  # the most characters of a route's name compared with the names for a hint
_UNIX_SECONDS = re.compile(r"[0-9]+\.[0-9]*")  # the decimal point is what tells a time from an exchange id


class FilterError(SettingError):
    """A filter parameter that cannot be read: `param` names it, the message says what to give."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


class ExchangeFacts(NamedTuple):
    """What a filter looks at, read alike from an `Exchange` and from a journal record (`exchange_record`)."""

    id: int
    session: str | None
    route: str
    method: str
    status: int | None  # the outcome's status when it has one, else the response's
    outcome: str | None  # the outcome's kind; None while the exchange runs
    model: str | None
    started_at: float | None


def facts_of(subject: Exchange | Mapping[str, Any]) -> ExchangeFacts:
    """The facts of an exchange, or of a journal record (a record of an older rrkit lacks `route` and `method`:
    those were creates)."""
    if not isinstance(subject, Mapping):
        outcome = subject.outcome
        model = (subject.wire_request or {}).get("model")
        return ExchangeFacts(
            subject.id,
            subject.session,
            subject.route,
            subject.method,
            outcome.status if outcome is not None and outcome.status is not None else subject.response_status,
            outcome.kind.value if outcome is not None else None,
            model if isinstance(model, str) else None,
            subject.started_at,
        )
    ended = subject.get("outcome")
    ended = ended if isinstance(ended, Mapping) else {}
    status = ended.get("status") if ended.get("status") is not None else subject.get("status")
    started_at = subject.get("started_at")
    return ExchangeFacts(
        subject["id"],
        subject.get("session"),
        subject.get("route") or CREATE,
        str(subject.get("method") or "POST"),
        status if isinstance(status, int) else None,
        ended.get("kind") if isinstance(ended.get("kind"), str) else None,
        subject.get("model") if isinstance(subject.get("model"), str) else None,
        float(started_at) if isinstance(started_at, int | float) else None,
    )


@dataclass(frozen=True, slots=True)
class ExchangeFilter:
    """The exchanges a query keeps: each field given must hold (None: any). `since` / `until` bound the start time
    (epoch seconds; `since` inclusive, `until` exclusive); `after_id` / `up_to_id` the id (after it; at most it)."""

    session: str | None = None
    route: str | None = None  # a name of rrkit.protocol.routes: `responses.create`, `models.list`, ...
    method: str | None = None  # upper case
    status: int | str | None = None  # 429, or a class: `4xx`
    outcome: OutcomeKind | None = None
    model: str | None = None
    since: float | None = None
    until: float | None = None
    after_id: int | None = None
    up_to_id: int | None = None

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> ExchangeFilter:
        """The filter query parameters (or option values) give, by the names of FILTER_PARAMS (others are left
        alone, an empty one is not given); a value that cannot be read is a FilterError naming it."""
        given = {name: value for name in FILTER_PARAMS if (value := params.get(name))}
        after_id, since = _id_or_time("since", given.get("since"))
        up_to_id, until = _id_or_time("until", given.get("until"))
        return cls(
            session=given.get("session"),
            route=_route(given["route"]) if "route" in given else None,
            method=_method(given["method"]) if "method" in given else None,
            status=_status(given["status"]) if "status" in given else None,
            outcome=_outcome(given["outcome"]) if "outcome" in given else None,
            model=given.get("model"),
            since=since,
            until=until,
            after_id=after_id,
            up_to_id=up_to_id,
        )

    @property
    def starts_somewhere(self) -> bool:
        """A lower bound is given (`since`, as an id or a time): a page is then the first exchanges from it on."""
        return self.after_id is not None or self.since is not None

    def matches(self, subject: Exchange | Mapping[str, Any]) -> bool:
        """Whether an exchange (or a journal record) is one the filter keeps."""
        facts = facts_of(subject)
        at = facts.started_at
        return (
            (self.session is None or facts.session == self.session)
            and (self.route is None or facts.route == self.route)
            and (self.method is None or facts.method.upper() == self.method)
            and (self.status is None or _status_holds(self.status, facts.status))
            and (self.outcome is None or facts.outcome == self.outcome)
            and (self.model is None or facts.model == self.model)
            and (self.after_id is None or facts.id > self.after_id)
            and (self.up_to_id is None or facts.id <= self.up_to_id)
            and (self.since is None or (at is not None and at >= self.since))
            and (self.until is None or (at is not None and at < self.until))
        )


def _status_holds(wanted: int | str, status: int | None) -> bool:
    if status is None:
        return False
    return status == wanted if isinstance(wanted, int) else status // 100 == int(wanted[0])


def _id_or_time(param: str, value: str | None) -> tuple[int | None, float | None]:
    """A whole number is an exchange id (what `since` always meant); anything else must be a time."""
    if value is None:
        return None, None
    try:
        if value.isascii() and value.isdigit():
            return integer(value, param), None
        if _UNIX_SECONDS.fullmatch(value):
            return None, decimal(value, param)
    except BadRequest as error:
        raise FilterError(param, f"{param} must be {ID_OR_TIME}: {error.message}") from None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise FilterError(param, f"{param} must be {ID_OR_TIME}, got {shown_value(value)}") from None
    return None, (when if when.tzinfo is not None else when.replace(tzinfo=UTC)).timestamp()


def _route(value: str) -> str:
    if value in ROUTE_NAMES:
        return value
    near = [name for name in ROUTE_NAMES if name.endswith("." + value)] or get_close_matches(value[:_NEAR], ROUTE_NAMES)
    hint = f" (did you mean {' or '.join(near)}?)" if near else ""
    raise FilterError(
        "route", f"route must be a route's name, one of {', '.join(ROUTE_NAMES)}; got {shown_value(value)}{hint}"
    )


def _method(value: str) -> str:
    if value.isascii() and value.isalpha():
        return value.upper()
    raise FilterError("method", f"method must be an HTTP method such as GET or POST, got {shown_value(value)}")


def _status(value: str) -> int | str:
    if _STATUS_CLASS.fullmatch(value.lower()):
        return value.lower()
    try:
        return integer(value, "status", low=100, high=599)
    except BadRequest:
        raise FilterError(
            "status",
            "status must be an HTTP status (100 to 599, such as 429) or a class of them (1xx to 5xx), got "
            f"{shown_value(value)}",
        ) from None


def _outcome(value: str) -> OutcomeKind:
    kinds = [kind.value for kind in OutcomeKind]
    if value.lower() in kinds:
        return OutcomeKind(value.lower())
    raise FilterError(
        "outcome", f"outcome must be an outcome's kind, one of {', '.join(kinds)}; got {shown_value(value)}"
    )
