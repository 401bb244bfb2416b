"""Conformance scenarios as data: a script the fake server plays, the transports it applies to, and the
expectations a client's run is judged by; the catalogue shipped with rrkit, and the loader of scenario files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal, Self, get_args

from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler, field_validator, model_validator
from pydantic.json_schema import JsonSchemaValue, SkipJsonSchema
from pydantic_core import CoreSchema

from ..differential.observation import WATCHED_HEADERS
from ..files.documents import read_document
from ..files.invalid import validate_document
from ..protocol.exceptions import ConformError, ScriptError
from ..protocol.vocabulary import TRANSPORTS, Transport
from ..script.loader import SCRIPT_WORDS, load_script
from ..script.models import Script
from .listing import CATALOGUE
from .named import select_named

CheckKind = Literal[
    "outcome",
    "answer",
    "answered",
    "retries",
    "named_delay",
    "tool_output",
    "transport_after",
    "full_after_failure",
    "resumed",
    "polled",
    "cancelled",
    "compacted",
    "in_conversation",
    "incremental_accepted",
    "ends",
    "flow",
    "turn_states",
    "headers",
]
"""The kinds of expectation a scenario can state (rrkit.conform.checks holds what each one means)."""
CHECKS: tuple[str, ...] = get_args(CheckKind)


Action = Literal["cancel", "compact", "conversation"]
"""What a scenario may ask a client to do beyond one turn (RRKIT_ACTION): `cancel` the background response it
streams once its first output arrives; `compact` its history after a first turn, then make a second; keep two
turns in a `conversation` it creates on the server."""


def _both() -> list[Transport]:
    return list(TRANSPORTS)


_PARAMETERS = {
    "outcome": ("is_",),
    "answer": ("is_",),
    "transport_after": ("is_",),
    "retries": ("at_least", "at_most"),
    "named_delay": ("seconds",),
    "flow": ("flow",),
    "turn_states": ("turn_states",),
    "headers": ("headers",),
}
"""What each check kind needs (any one of): the loader refuses a check without it."""


class Expectation(BaseModel):
    """One thing a correct client does in this scenario: a check kind, its parameters, and the sentence saying
    what a correct client does and why (shown when a client breaks it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    check: CheckKind
    why: str = Field(min_length=1, description="what a correct client does, and why")
    is_: str | None = Field(
        None, alias="is", description="outcome / transport_after: the value required; answer: the answer's text"
    )
    at_least: Annotated[int, Field(ge=0)] | None = None
    at_most: Annotated[int, Field(ge=0)] | None = None
    seconds: Annotated[float, Field(gt=0)] | None = None
    flow: list[str] | None = Field(None, description="flow: every attempt as the server saw it, in order")
    turn_states: list[str | None] | None = Field(
        None, description="turn_states: the x-codex-turn-state each attempt sent (null: none), in order"
    )
    headers: list[str] | None = Field(
        None, description="headers: request headers every attempt over the rule's transports carries"
    )
    transports: list[Transport] | None = Field(None, description="only over these (default: every one)")

    @field_validator("headers")
    @classmethod
    def _watched(cls, names: list[str] | None) -> list[str] | None:
        unknown = [name for name in names or () if name not in WATCHED_HEADERS]
        if unknown:
            raise ValueError(
                f"{', '.join(unknown)}: rrkit watches only these request headers: {', '.join(WATCHED_HEADERS)}"
            )
        return names

    @model_validator(mode="after")
    def _parameters(self) -> Self:
        needs = _PARAMETERS.get(self.check, ())
        if needs and all(getattr(self, name) is None for name in needs):
            keys = " or ".join("is" if name == "is_" else name for name in needs)
            raise ValueError(f"check {self.check!r} needs {keys}")
        return self

    @property
    def label(self) -> str:
        """The expectation as a short phrase: `retries >= 1`, `outcome is completed`."""
        if self.check == "retries":
            bounds = [f">= {self.at_least}"] if self.at_least is not None else []
            bounds += [f"<= {self.at_most}"] if self.at_most is not None else []
            return "retries " + " and ".join(bounds or ["any"])
        if self.check == "named_delay":
            return f"waits the named {self.seconds:g} s before a retry"
        if self.check in ("flow", "turn_states"):
            return f"{self.check} over {', '.join(self.transports)}" if self.transports else self.check
        if self.check == "ends":
            return "ends on its own"
        if self.check == "headers" and self.headers is not None:
            return (
                "sends " + ", ".join(self.headers) + (f" over {', '.join(self.transports)}" if self.transports else "")
            )
        if self.check == "answer":
            return "answers with the stream's text"
        if self.is_ is not None:
            return f"{self.check} is {self.is_}"
        return self.check

    def applies(self, transport: str) -> bool:
        return self.transports is None or transport in self.transports


class _ShippedOrInline:
    """A scenario's `script` in its JSON Schema: a script, or `fixture:NAME`, one shipped with rrkit."""

    @classmethod
    def __get_pydantic_json_schema__(cls, core: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        shipped = {"type": "string", "pattern": "^fixture:.+$", "description": "a script shipped with rrkit"}
        return {"anyOf": [handler(core), shipped]}


class Scenario(BaseModel):
    """A situation a Responses client must survive: what the server does (`script`) and what a correct client
    does about it (`musts`)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str = Field(min_length=1)
    transports: list[Transport] = Field(default_factory=_both, min_length=1)
    script: Annotated[Script, _ShippedOrInline]
    musts: list[Expectation] = Field(min_length=1)
    asks: dict[str, Any] = Field(
        default_factory=dict,
        description="fields the client is asked to put on its request (RRKIT_REQUEST, JSON): `{background: true}`",
    )
    action: Action | None = Field(
        None,
        description="what the client is asked to do beyond one turn (RRKIT_ACTION): cancel, compact, conversation",
    )
    opt_in: bool = Field(
        False,
        description="left out of the catalogue's run unless named (`--only`): for the clients that can do what "
        "`asks` asks, not every one",
    )
    path: SkipJsonSchema[Path | None] = Field(None, exclude=True)  # where it was read from

    @field_validator("script", mode="before")
    @classmethod
    def _shipped_script(cls, value: Any) -> Any:
        """`script: fixture:NAME` names a shipped script (`rrkit fixtures`), inline otherwise."""
        if isinstance(value, str):
            try:
                return load_script(value)
            except ScriptError as error:
                raise ValueError(str(error)) from None
        return value


_WORDS = SCRIPT_WORDS.adding({*Scenario.model_fields, *Expectation.model_fields, "is"})


def parse_scenario(data: Any, path: Path | str = "<scenario>", tree: Any = None) -> Scenario:
    path = Path(path)
    scenario = validate_document(Scenario, data, path, tree, "conformance scenario", ConformError, _WORDS)
    scenario.path = path
    if not scenario.script.name:
        scenario.script.name = scenario.name
    return scenario


def load_scenario(path: Path | str) -> Scenario:
    """Read a scenario file (YAML or JSON)."""
    path = Path(path)
    data, tree = read_document(path, "scenario", ConformError)
    return parse_scenario(data, path, tree)


ANSWERED_WHY = "the script's stream is a whole answer: a correct client completes the turn with it (and its text)"
NOT_ANSWERED_WHY = "the script's stream is no answer: a correct client fails the turn on its own, never completing it"


def scenario_of_script(script: Script, path: Path) -> Scenario:
    """A script file judged as a scenario (`rrkit conform --scenario`): over the transport its `expect` names (else
    both), the client's turn must end as `expect.answer` says (else as `expect.outcome` does: completed or not)."""
    expect = script.expect
    answer = expect.answer if expect.answer is not None else expect.outcome == "completed"
    if answer and expect.text is not None:
        must = Expectation.model_validate({"check": "answer", "is": expect.text, "why": ANSWERED_WHY})
    else:
        why = ANSWERED_WHY if answer else NOT_ANSWERED_WHY
        must = Expectation.model_validate({"check": "outcome", "is": "completed" if answer else "failed", "why": why})
    name = re.sub(r"[^a-z0-9]+", "-", path.stem.lower()).strip("-") or "script"
    scenario = Scenario(
        name=name,
        description=script.description or f"the script {path}",
        transports=[expect.transport] if expect.transport else list(TRANSPORTS),
        script=script,
        musts=[must],
    )
    scenario.path = path
    return scenario


def load_scenario_or_script(path: Path | str) -> Scenario:
    """A scenario file, or a script file judged as one (`scenario_of_script`): what `rrkit conform --scenario` reads."""
    from ..files.kind import file_kind

    path = Path(path)
    if file_kind(path) == "script":
        return scenario_of_script(load_script(path), path)
    return load_scenario(path)


def catalogue(*, opt_in: bool = False) -> list[Scenario]:
    """Every shipped scenario, by name; the opt-in ones (`opt_in`: for the clients that can do what they ask) only
    with `opt_in=True`."""
    scenarios = [load_scenario(path) for path in sorted(CATALOGUE.glob("*.yaml"))]
    return [scenario for scenario in scenarios if opt_in or not scenario.opt_in]


def select(scenarios: list[Scenario], only: tuple[str, ...] = ()) -> list[Scenario]:
    """The scenarios named in `only` (all when empty), in catalogue order."""
    return select_named(scenarios, only, "scenario", "rrkit conform --list")


__all__ = [
    "CATALOGUE",
    "Action",
    "ConformError",
    "Expectation",
    "Scenario",
    "catalogue",
    "load_scenario",
    "load_scenario_or_script",
    "parse_scenario",
    "select",
]
