"""The request models (pydantic), built on the first request the fast check in `request_check` cannot vouch for: a
lenient check, or a body with a field of the wrong type, which they word as the API does."""

# No `from __future__ import annotations` here: pydantic would evaluate every field's annotation string at import.
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .exceptions import INVALID_VALUE, BadRequest
from .request import TYPED_FIELDS, Item, json_type


class ResponsesRequest(BaseModel):
    """The body of `POST /responses`; every field the protocol names, plus any other field kept."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    instructions: str | None = None
    input: list[Item] | str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    reasoning: dict[str, Any] | None = None
    store: bool | None = None
    stream: bool | None = None
    include: list[str] | None = None
    service_tier: str | None = None
    prompt_cache_key: str | None = None
    text: dict[str, Any] | None = None
    client_metadata: dict[str, Any] | None = None
    stream_options: dict[str, Any] | None = None
    previous_response_id: str | None = None
    generate: bool | None = None


class ResponseCreateFrame(ResponsesRequest):
    """A WebSocket client frame `{"type": "response.create", ...}`."""

    type: Literal["response.create"]


class SamplingFields(BaseModel):
    """Fields the API checks the type and range of, outside the incremental rule's list (so unknown to the request
    models above; the rule compares them all the same, as it does any other field)."""

    model_config = ConfigDict(extra="ignore")

    temperature: float | None = Field(None, ge=0, le=2, allow_inf_nan=False)
    top_p: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    max_output_tokens: int | None = Field(None, gt=0)


def validated(body: dict[str, Any], *, frame: bool, lenient: bool) -> dict[str, Any]:
    """`request.check_request` past its fast check: the body (lenient: with its typed fields coerced), or a
    BadRequest worded as the API words it."""
    model = ResponseCreateFrame if frame else ResponsesRequest
    try:
        parsed = model.model_validate(body, strict=not lenient)
        sampling = SamplingFields.model_validate(body, strict=not lenient)
    except ValidationError as error:
        raise _invalid(error, "response.create frame" if frame else "request body") from None
    if not lenient:
        return body
    coerced = {**parsed.model_dump(include=set(TYPED_FIELDS)), **sampling.model_dump()}
    return {key: coerced[key] if key in TYPED_FIELDS and value is not None else value for key, value in body.items()}


_EXPECTED = {
    "bool": "a boolean",
    "string": "a string",
    "float": "a number",
    "int": "an integer",
    "list": "an array",
    "dict": "an object",
    "model": "an object",
    "literal": "one of the allowed values",
}
_BOUNDS = {
    "greater_than": ("below minimum value", ">"),
    "greater_than_equal": ("below minimum value", ">="),
    "less_than": ("above maximum value", "<"),
    "less_than_equal": ("above maximum value", "<="),
}


def _invalid(error: ValidationError, what: str) -> BadRequest:
    """An OpenAI-style message for the first problem pydantic found: `Invalid type for 'stream': expected a
    boolean, but got a string instead.`"""
    problem = error.errors()[0]
    param = _param(problem["loc"])
    kind = str(problem["type"])
    got = problem.get("input")
    shown = f"'{param}'" if param else what
    if kind in _BOUNDS:
        side, sign = _BOUNDS[kind]
        limit = next(iter((problem.get("ctx") or {}).values()), None)
        number = "integer" if isinstance(limit, int) else "decimal"  # the bound has its field's type
        code = f"{number}_{'below_min' if sign.startswith('>') else 'above_max'}_value"
        return BadRequest(
            f"Invalid {shown}: {number} {side}. Expected a value {sign} {limit:g}, but got {got!r} instead."
            if isinstance(limit, int | float)
            else f"Invalid {shown}: {problem['msg']}.",
            param=param,
            code=code,
        )
    if kind == "finite_number":
        return BadRequest(f"Invalid {shown}: expected a finite number.", param=param, code=INVALID_VALUE)
    if _expected(kind):
        # A union (`input`: an array or a string) fails once per member, each at the same param.
        members = [p for p in error.errors() if _param(p["loc"]) == param and _expected(str(p["type"]))]
        expected = " or ".join(dict.fromkeys(_expected(str(p["type"])) for p in members))
        return BadRequest.wrong_type(shown, expected, json_type(got), param)
    message = f"Invalid {what}: field '{param}': {problem['msg']}" if param else f"Invalid {what}: {problem['msg']}"
    return BadRequest(message, param=param)


def _expected(kind: str) -> str:
    """`a boolean` for pydantic's `bool_type` / `bool_parsing` (and so on); empty for other problems."""
    base = kind.split("_")[0]
    if base in _EXPECTED and (kind.endswith(("_type", "_parsing")) or kind in ("int_from_float", "literal_error")):
        return _EXPECTED[base]
    return ""


def _param(loc: tuple[int | str, ...]) -> str | None:
    """The OpenAI-style `param` of a validation error: the field and any list indexes (`tools[0]`),
    without pydantic's union member labels (`input.list[dict[str,any]]` is `input`)."""
    if not loc:
        return None
    param = str(loc[0])
    for part in loc[1:]:
        if not isinstance(part, int):
            break
        param += f"[{part}]"
    return param
