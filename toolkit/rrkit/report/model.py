"""The findings model every judge returns: a `Finding` (severity, rule, place, reason, evidence) in a `Case` (one
thing judged), the cases in a `Report` (one run of one judge)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, computed_field, field_validator, model_validator

from .text import bounded, bounded_within

REPORT_FORMAT: Final = 1
"""The `rrkit_report` field of every judge's JSON report; bumped on incompatible changes."""


Quoted = Annotated[str, AfterValidator(bounded)]
"""A text that may hold what a judged peer wrote: quoted by its ends past a few KiB (`text.bounded`), here where
every finding is made, so that no writer renders more (a judge quotes each thing a peer wrote smaller: `quoted`)."""


class Severity(StrEnum):
    MUST = "must"  # fails the run: breaks real clients, or a rule the run was asked to hold
    SHOULD = "should"  # a deviation from the real service, reported without failing the run


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _computed_left_out(cls, data: Any) -> Any:
        """A report read back (`Report.model_validate_json`) gives its computed fields too: they are computed
        again from the cases, not taken as written."""
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if key not in cls.model_computed_fields}
        return data


class Place(_Frozen):
    """Where a finding is: a label a person reads, and the coordinates a tool follows (None: not about one)."""

    label: Quoted = Field("", description="where, for a person: `follow-up [ws] step 2 (GET /v1/responses/ID)`")
    connection: int | None = Field(None, description="the connection's index in the cassette")
    exchange: int | None = Field(None, description="the exchange's id in the cassette")
    event: int | None = Field(None, description="an index into the exchange's (or the answer's) events")
    event_type: str | None = Field(None, description="that event's type")
    field: str | None = Field(None, description="a JSON path in the request, the event or the body")

    def __str__(self) -> str:
        parts = [self.label] if self.label else []
        if self.exchange is not None:
            parts.append(
                f"exchange {self.exchange}"
                + (f" (connection {self.connection})" if self.connection is not None else "")
            )
        if self.event is not None:
            parts.append(f"event {self.event}" + (f" ({self.event_type})" if self.event_type else ""))
        if self.field:
            parts.append(f"field {self.field}")
        return " ".join(parts)


class Finding(_Frozen):
    """One rule a judged thing breaks."""

    rule: str = Field(description="the rule's name, as the judge names it: `item_added_first`, `retries <= 0`")
    severity: Severity = Field(
        Severity.MUST,
        description="`must` fails the run (it breaks real clients); `should` departs from the real service",
    )
    place: Place = Field(Place(), description="where the rule is broken")
    reason: Quoted = Field(description="what the rule requires, and why")
    evidence: Quoted = Field("", description="what was seen")
    profile: str | None = Field(None, description="the profile whose rule this is (null: the protocol's)")
    also: tuple[int, ...] = Field((), description="the other events that break the rule the same way")

    @property
    def strength(self) -> str:
        """How binding the rule is, as a person reads it: `must`, `should` or `profile NAME`."""
        return f"profile {self.profile}" if self.profile else self.severity.value

    def __str__(self) -> str:
        more = len(self.also)
        also = f" (and at {more} more event{'s' if more > 1 else ''})" if more else ""
        reason = self.reason.removesuffix(".") if self.evidence else self.reason  # a scenario's why is sentences
        evidence = f"; {self.evidence}" if self.evidence else ""
        return f"[{self.strength}] {self.place}: {reason}{evidence}{also}"


class Held(_Frozen):
    """A rule judged and held, with what was seen (listed by judges that show their passes)."""

    rule: str = Field(description="the rule's name")
    evidence: Quoted = Field("", description="what was seen")


class Case(_Frozen):
    """One thing judged: a scenario over a transport, a probe, a cassette, a pair of cassettes."""

    group: str = Field(description="where it belongs (JUnit's classname): `rrkit.conform.http`, `rrkit.validate`")
    name: str = Field(description="what was judged: a scenario, a probe, a cassette")
    findings: tuple[Finding, ...] = Field((), description="every rule it breaks")
    held: tuple[Held, ...] = Field((), description="the rules it held (listed by the judges that show them)")
    output: Quoted = Field("", description="what the judged thing did or printed, as text")
    file: str | None = Field(None, description="the file judged, where there is one (annotations point at it)")
    skipped: Quoted | None = Field(
        None, description="why it could not be judged for this subject (neither passed nor failed); None: judged"
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        """No finding that fails the run (a case not judged fails nothing)."""
        return not any(finding.severity is Severity.MUST for finding in self.findings)


class Report(_Frozen):
    """One run of one judge: what was judged, each case, and the judge's own detail (its `detail` shape is the
    judge's, documented with it)."""

    rrkit_report: Literal[1] = Field(REPORT_FORMAT, description="the report format's version")
    tool: str = Field(description="the judge: `conform`, `conform --server`, `validate`, `diff`, `replay`")
    subject: Quoted = Field(
        description="what was judged, in a line: the client's command, the server's URL, the cassettes"
    )
    summary: Quoted = Field("", description="the verdict in a sentence")
    properties: dict[str, str] = Field(default_factory=dict, description="facts about the run (JUnit's properties)")
    cases: tuple[Case, ...] = Field((), description="each thing judged")
    detail: dict[str, Any] = Field(default_factory=dict, description="the judge's own data, in its own shape")

    @field_validator("detail")
    @classmethod
    def _quoted_detail(cls, detail: dict[str, Any]) -> dict[str, Any]:
        return {key: bounded_within(value) for key, value in detail.items()}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        """Every case ok: no finding fails the run (the command exits 1 otherwise)."""
        return all(case.ok for case in self.cases)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def counts(self) -> dict[str, int]:
        """Cases, failed cases and cases not judged; findings by severity; rules held."""
        findings = [finding for case in self.cases for finding in case.findings]
        return {
            "cases": len(self.cases),
            "failed": sum(not case.ok for case in self.cases),
            **{severity.value: sum(f.severity is severity for f in findings) for severity in Severity},
            "held": sum(len(case.held) for case in self.cases),
            "skipped": sum(case.skipped is not None for case in self.cases),
        }

    @property
    def findings(self) -> list[Finding]:
        return [finding for case in self.cases for finding in case.findings]
