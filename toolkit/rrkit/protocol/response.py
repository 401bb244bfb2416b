"""Pydantic models of what the server sends: output items, usage and the `response` object (extra fields kept)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class InputTokensDetails(_Open):
    cached_tokens: int = 0
    cache_write_tokens: int = 0


class OutputTokensDetails(_Open):
    reasoning_tokens: int = 0


class Usage(_Open):
    input_tokens: int
    output_tokens: int
    total_tokens: int
    input_tokens_details: InputTokensDetails = InputTokensDetails()
    output_tokens_details: OutputTokensDetails = OutputTokensDetails()


class MessageItem(_Open):
    type: Literal["message"]
    id: str | None = None
    role: str
    status: str | None = None
    content: list[dict[str, Any]]


class ReasoningItem(_Open):
    type: Literal["reasoning"]
    id: str | None = None
    summary: list[dict[str, Any]] = []
    encrypted_content: str | None = None


class FunctionCallItem(_Open):
    type: Literal["function_call"]
    id: str | None = None
    call_id: str
    name: str
    arguments: str


class CustomToolCallItem(_Open):
    type: Literal["custom_tool_call"]
    id: str | None = None
    call_id: str
    name: str
    input: str


class OtherItem(_Open):
    """An output item of a type rrkit does not model; kept as sent."""

    type: str


OutputItem = Annotated[
    MessageItem | ReasoningItem | FunctionCallItem | CustomToolCallItem | OtherItem, Field(union_mode="left_to_right")
]


class ResponseError(_Open):
    code: str | None = None
    message: str = ""


class IncompleteDetails(_Open):
    reason: str | None = None


class ResponseObject(_Open):
    """The `response` of lifecycle events; `end_turn: false` asks the client to sample again."""

    id: str
    object: Literal["response"] = "response"
    created_at: float
    model: str
    status: str | None = None
    output: list[OutputItem] = []
    parallel_tool_calls: bool = False
    tool_choice: str | dict[str, Any] = "auto"
    tools: list[dict[str, Any]] = []
    usage: Usage | None = None
    error: ResponseError | None = None
    incomplete_details: IncompleteDetails | None = None
    end_turn: bool | None = None
