"""What `rrkit diff` reports: each difference's kind, its place on each side and both values, the diff's stable
shape (`to_dict`), and the findings every judge shares (`to_report`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Literal

from ..report import Case, Finding, Place, Report

DIFF_FORMAT = 1  # the `rrkit_diff` field of `DiffReport.to_dict`; bump it on incompatible changes
View = Literal["logical", "wire", "both"]
VIEWS: tuple[View, ...] = ("logical", "wire", "both")


class Kind(StrEnum):
    ROUTE = "route"  # the method, path or route (protocol.routes) of a request
    CONTENT = "content"  # the logical request: what the model sees
    WIRE = "wire"  # the wire request, where the logical requests agree (or with view="wire")
    INCREMENTALITY = "incrementality"  # a full request where the other side sent a delta, or the reverse
    EVENTS = "events"  # an event missing, extra or of another type
    EVENT_FIELD = "event_field"  # a field of an event both sides sent
    OUTCOME = "outcome"  # how the exchange ended (kind, code, reason, ...), its response id
    STATUS = "status"  # the HTTP status (or a WebSocket error frame's)
    BODY = "body"  # a whole (non-streamed) answer
    HEADERS = "headers"  # request or response headers
    CONNECTION = "connection"  # transport, which connection, the connection's handshake and close
    TIMING = "timing"  # start times and event offsets (strict only)
    EXCHANGE_MISSING = "exchange_missing"  # an exchange of A that B does not have
    EXCHANGE_EXTRA = "exchange_extra"  # an exchange of B that A does not have
    PROTOCOL = "protocol"  # a rule of the protocol one side breaks (`validate_cassette`)


@dataclass(frozen=True, slots=True)
class Side:
    """Where a difference is on one side, and its value there (bounded, `match.shown`; None: not there)."""

    connection: int | None = None
    exchange: int | None = None
    event: int | None = None
    path: str = ""
    value: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Difference:
    kind: Kind
    path: str  # A's path (B's where only B has it), in the syntax of ignore paths: input[2].arguments
    a: Side
    b: Side
    detail: str = ""
    rule: str | None = None  # for PROTOCOL: the rule broken (validate.RULES)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind.value, "path": self.path, "detail": self.detail}
        if self.rule is not None:
            data["rule"] = self.rule
        data["a"], data["b"] = self.a.to_dict(), self.b.to_dict()
        return data


@dataclass(frozen=True, slots=True)
class CassetteSummary:
    name: str
    exchanges: int
    events: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "exchanges": self.exchanges, "events": self.events}


@dataclass
class DiffReport:
    a: CassetteSummary
    b: CassetteSummary
    strict: bool
    ignore: tuple[str, ...]
    view: View
    pairs: list[tuple[int | None, int | None]]  # aligned exchange ids (A, B); None where one side has none
    differences: list[Difference] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not self.differences

    def counts(self) -> dict[str, int]:
        """Differences per kind, in the order of `Kind`."""
        found = {kind.value: 0 for kind in Kind}
        for difference in self.differences:
            found[difference.kind.value] += 1
        return {kind: count for kind, count in found.items() if count}

    def to_dict(self) -> dict[str, Any]:
        """The stable shape of `rrkit diff --json`:

        `{"rrkit_diff": 1, "a": {name, exchanges, events}, "b": {...}, "options": {strict, ignore, view},
        "equal": bool, "counts": {kind: n}, "pairs": [[a_id, b_id], ...], "differences": [{kind, path, detail,
        rule?, "a": {connection, exchange, event, path, value}, "b": {...}}, ...]}`; a value is a bounded
        one-line rendering (JSON, strings quoted), null where that side has nothing.
        """
        return {
            "rrkit_diff": DIFF_FORMAT,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "options": {"strict": self.strict, "ignore": list(self.ignore), "view": self.view},
            "equal": self.equal,
            "counts": self.counts(),
            "pairs": [list(pair) for pair in self.pairs],
            "differences": [difference.to_dict() for difference in self.differences],
        }

    def to_case(self, name: str = "", file: str | None = None) -> Case:
        """The pair as one case of the findings model: a finding per difference, at A's place (B's where only B
        has it)."""
        return Case(
            group="rrkit.diff",
            name=name or f"{self.a.name} vs {self.b.name}",
            findings=tuple(_finding(difference) for difference in self.differences),
            output=f"{len(self.pairs)} exchange pair(s); {self.a.exchanges} and {self.b.exchanges} exchange(s)",
            file=file,
        )

    def to_report(self) -> Report:
        """`rrkit diff`'s report: one case; `detail` is the diff's own shape (`to_dict`)."""
        verdict = "no difference" if self.equal else f"{len(self.differences)} difference(s)"
        subject = f"{self.a.name} vs {self.b.name}"
        case = self.to_case(subject, file=self.b.name)
        return Report(
            tool="diff", subject=subject, summary=f"rrkit diff: {verdict}", cases=(case,), detail=self.to_dict()
        )


AGREE_ON: dict[Kind, str] = {
    Kind.ROUTE: "both sides send the request to the same route",
    Kind.CONTENT: "both sides send the same logical request",
    Kind.WIRE: "both sides send the same wire request",
    Kind.INCREMENTALITY: "both sides send a full request, or both a delta",
    Kind.EVENTS: "both sides have the same events, in the same order",
    Kind.EVENT_FIELD: "an event both sides have is the same on both",
    Kind.OUTCOME: "the exchange ends the same way on both sides",
    Kind.STATUS: "both sides have the same status",
    Kind.BODY: "both sides answer with the same body",
    Kind.HEADERS: "both sides send the same headers",
    Kind.CONNECTION: "both sides use the same connections, opened and closed the same way",
    Kind.TIMING: "both sides keep the same times (--strict)",
    Kind.EXCHANGE_MISSING: "B has every exchange A has",
    Kind.EXCHANGE_EXTRA: "A has every exchange B has",
    Kind.PROTOCOL: "neither side breaks a rule of the protocol",
}
"""What each kind of difference says the two sides should agree on: a diff finding's reason."""


def _finding(difference: Difference) -> Finding:
    on_b = difference.a.exchange is None and difference.b.exchange is not None
    side = difference.b if on_b else difference.a
    label = "B" if on_b else "A"
    place = Place(
        label=label, connection=side.connection, exchange=side.exchange, event=side.event, field=difference.path or None
    )
    evidence = difference.detail or f"A has {difference.a.value}, B has {difference.b.value}"
    reason = AGREE_ON[difference.kind]
    return Finding(rule=difference.rule or difference.kind.value, place=place, reason=reason, evidence=evidence)
