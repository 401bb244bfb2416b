"""Server conformance probes as data: the requests a probe sends (over HTTP or on one WebSocket) and the checks
each answer is held to; the catalogue shipped with rrkit, and the loader of probe files."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from ...files.documents import read_document
from ...files.invalid import Vocabulary, validate_document
from ...protocol.exceptions import ConformError
from ...protocol.vocabulary import TRANSPORTS, Transport
from ..listing import PROBES
from ..named import select_named

CheckName = Literal[
    "stream",
    "completed",
    "response_object",
    "refused",
    "no_output",
    "upgrade",
    "ok",
    "resumed",
    "page",
    "status",
    "steered",
]
"""What an answer can be held to (rrkit.conform.server.checks says what each requires)."""
CHECK_NAMES: tuple[str, ...] = get_args(CheckName)


class Expect(BaseModel):
    """One check of a step's answer, with its parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    check: CheckName
    status: int = Field(400, ge=400, le=499, description="refused: the status required (default 400)")
    code: str | None = Field(None, description="refused: the error code required")
    object: str | None = Field(None, description="ok: the `object` the body states (`list`, `conversation`, ...)")
    statuses: list[str] = Field(
        default_factory=list, description="status: the response statuses allowed (`queued`, `in_progress`, ...)"
    )


class ProbeStep(BaseModel):
    """One request of a probe: a body (the default `{model, input}` with `say` as the user's words, `send` merged
    over it, `omit` keys taken out), or a `raw` text that is not JSON; `follows` continues the previous step's
    response (its id as `previous_response_id`, only the new input sent).

    A step with a `path` goes to another route of the resource (HTTP only): `method` to the path under the base
    URL, with `query`; a POST sends `send` as its body (`{model}` filled in where it says `model: true`). In the
    path, the query and the body, `{response}` stands for the first response the probe made, `{conversation}`
    for the first conversation, `{last_id}` for the previous answer's `last_id`. Such a step is sent only once the
    step before it was answered (2xx); `until` sends it again, a poll, until the response's status is one of
    those."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    method: Literal["GET", "POST", "DELETE"] = "POST"
    path: str | None = Field(None, pattern=r"^/[A-Za-z0-9_{}./-]*$")
    query: dict[str, str] = Field(default_factory=dict)
    until: list[str] = Field(default_factory=list)

    say: str = "Say hello in one word."
    send: dict[str, Any] = Field(default_factory=dict)
    omit: list[str] = Field(default_factory=list)
    raw: str | None = Field(None, description="this text as the body (over WebSocket, the frame), in place of JSON")
    steer: str | None = Field(
        None, description="WebSocket: a response.steer frame with this input, sent once the response is created"
    )
    follows: bool = False
    expect: list[Expect] = Field(min_length=1)


def _both() -> list[Transport]:
    return list(TRANSPORTS)


class Probe(BaseModel):
    """A battery item: what it sends, over which transports, and what every answer must be."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str = Field(min_length=1)
    transports: list[Transport] = Field(default_factory=_both, min_length=1)
    steps: list[ProbeStep] = Field(min_length=1)
    path: SkipJsonSchema[Path | None] = Field(None, exclude=True)  # where it was read from

    @property
    def goes_to_routes(self) -> bool:
        """Whether a step goes to another route than the create (then each step goes on from the ones before)."""
        return any(step.path is not None for step in self.steps)

    @model_validator(mode="after")
    def _fits_its_transports(self) -> Probe:
        if self.steps[0].follows:
            raise ValueError("the first step has no response to follow")
        if self.goes_to_routes and "ws" in self.transports:
            raise ValueError("a step with a `path` goes over HTTP: set `transports: [http]`")
        if any(step.steer is not None for step in self.steps) and self.transports != ["ws"]:
            raise ValueError("a step that steers goes over a WebSocket: set `transports: [ws]`")
        return self


_WORDS = Vocabulary(frozenset({*Probe.model_fields, *ProbeStep.model_fields, *Expect.model_fields}))


def load_probe(path: Path | str) -> Probe:
    """Read a probe file (YAML or JSON); ConformError naming the file, the line and the problem."""
    data, tree = read_document(Path(path), "probe", ConformError)
    probe = validate_document(Probe, data, Path(path), tree, "server conformance probe", ConformError, _WORDS)
    probe.path = Path(path)
    return probe


def probe_catalogue() -> list[Probe]:
    """Every shipped probe, in file name order."""
    return [load_probe(path) for path in sorted(PROBES.glob("*.yaml"))]


def select_probes(probes: list[Probe], only: tuple[str, ...] = ()) -> list[Probe]:
    """The probes named in `only` (all when empty), in catalogue order."""
    return select_named(probes, only, "probe", "rrkit conform --server URL --list")
