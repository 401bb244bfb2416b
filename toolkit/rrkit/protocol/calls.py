"""The calls a client runs itself (a function, a custom tool, a shell, a patch, a computer action, an MCP approval, a
client tool search) and the input item that answers each, linked to its call by one field."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .exceptions import NotAnAnswer
from .request import Item

CallResult = str | bool | Sequence[Mapping[str, Any]] | Mapping[str, Any]
"""What running a call gave: the answer's own fields (a mapping), or a plain value its kind knows how to carry
(text for most kinds; `True`/`False` for an approval; the tools found, for a tool search)."""


def _text(field: str) -> Callable[[object], dict[str, Any] | None]:
    return lambda result: {field: result} if isinstance(result, str) else None


def _shell(result: object) -> dict[str, Any] | None:
    if not isinstance(result, str):
        return None
    return {"output": [{"stdout": result, "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]}


def _patch(result: object) -> dict[str, Any] | None:
    return {"status": "completed", "output": result} if isinstance(result, str) else None


def _screenshot(result: object) -> dict[str, Any] | None:
    return {"output": {"type": "computer_screenshot", "image_url": result}} if isinstance(result, str) else None


def _approval(result: object) -> dict[str, Any] | None:
    return {"approve": result} if isinstance(result, bool) else None


def _tools_found(result: object) -> dict[str, Any] | None:
    if isinstance(result, (str, bytes, Mapping)) or not isinstance(result, Sequence):
        return None
    return {"execution": "client", "tools": list(result)}


def _by_client(item: Mapping[str, Any]) -> bool:
    return item.get("execution") == "client"


def _local(item: Mapping[str, Any]) -> bool:
    environment = item.get("environment")
    return not (isinstance(environment, Mapping) and environment.get("type") == "container_reference")


@dataclass(frozen=True)
class ClientCall:
    """One kind of call the client runs: the input item that answers it, the answer's field that names the call
    (`link`) and the call's field it copies (`names`), and how a plain result becomes the answer's fields."""

    call_type: str
    answer_type: str
    plain: Callable[[object], dict[str, Any] | None]
    plain_result: str
    """What a plain result is, said in the error when a result fits neither form."""
    tools: tuple[str, ...] = ()
    """The tool types a request declares to let the model make this call (empty: a tool it names, a function's or a
    custom tool's)."""
    link: str = "call_id"
    names: str = "call_id"
    asks_client: Callable[[Mapping[str, Any]], bool] = lambda item: True
    """Whether this call is the client's to run (some kinds are run by the service too)."""

    def key(self, call: Item) -> str:
        """The id the answer must carry."""
        return str(call.get(self.names))

    def answer(self, call: Item, result: CallResult) -> Item:
        """The input item answering `call` with `result` (NotAnAnswer when the result cannot)."""
        fields = dict(result) if isinstance(result, Mapping) else self.plain(result)
        if fields is None:
            shown = type(result).__name__
            raise NotAnAnswer(
                f"a {self.call_type} ({self.names} {self.key(call)}) is answered with {self.plain_result} or the "
                f"fields of its {self.answer_type}; the tool handler gave {shown}"
            )
        return {**fields, "type": self.answer_type, self.link: self.key(call)}


CLIENT_CALLS: dict[str, ClientCall] = {
    call.call_type: call
    for call in (
        ClientCall("function_call", "function_call_output", _text("output"), "text"),
        ClientCall("custom_tool_call", "custom_tool_call_output", _text("output"), "text"),
        ClientCall("local_shell_call", "local_shell_call_output", _text("output"), "text", ("local_shell",), "id"),
        ClientCall(
            "shell_call", "shell_call_output", _shell, "text (its stdout, exit code 0)", ("shell",), asks_client=_local
        ),
        ClientCall(
            "apply_patch_call",
            "apply_patch_call_output",
            _patch,
            "text (the log of a completed patch)",
            ("apply_patch",),
        ),
        ClientCall(
            "computer_call",
            "computer_call_output",
            _screenshot,
            "text (the screenshot's URL)",
            ("computer_use_preview", "computer"),
        ),
        ClientCall(
            "mcp_approval_request",
            "mcp_approval_response",
            _approval,
            "True or False",
            ("mcp",),
            link="approval_request_id",
            names="id",
        ),
        ClientCall(
            "tool_search_call",
            "tool_search_output",
            _tools_found,
            "a list of the tools found",
            ("tool_search",),
            asks_client=_by_client,
        ),
    )
}
"""Every output item the client must run and answer before the model can go on (a tool search only when its
`execution` is `client`, a shell call unless its `environment` is a container the service runs it in), by the
call's type (openai 3.63's output and input item unions; a test holds it to them).
A local shell call's answer names it by `id` (the SDK: "the unique ID of the local shell tool call generated by
the model", the call's `call_id`); an approval's by `approval_request_id` (the request's `id`)."""

ANSWERS: dict[str, ClientCall] = {call.answer_type: call for call in CLIENT_CALLS.values()}


def client_call(item: Mapping[str, Any]) -> ClientCall | None:
    """The kind of call `item` is when the client must run it, else None."""
    kind = CLIENT_CALLS.get(str(item.get("type")))
    return kind if kind is not None and kind.asks_client(item) else None


def answer_to(call: Item, result: CallResult) -> Item:
    """The input item answering a call the client runs (NotAnAnswer for any other item)."""
    kind = client_call(call)
    if kind is None:
        raise NotAnAnswer(f"a {call.get('type')} item is no call the client runs")
    return kind.answer(call, result)


def call_key(item: Mapping[str, Any]) -> str | None:
    """The id a call the client runs is answered by, else None."""
    kind = client_call(item)
    return kind.key(dict(item)) if kind else None


def answered_key(item: Mapping[str, Any]) -> str | None:
    """The id of the call an answer names, else None."""
    kind = ANSWERS.get(str(item.get("type")))
    return str(item.get(kind.link)) if kind else None


def tool_called(item: Mapping[str, Any]) -> str | None:
    """The tool a call the client runs needs declared: a function's or custom tool's name, else the tool type
    (the first one, where several declare it); None for any other item."""
    kind = client_call(item)
    if kind is None:
        return None
    return kind.tools[0] if kind.tools else str(item.get("name"))


def tool_declared(tool: Mapping[str, Any]) -> str | None:
    """What a request's `tools` entry lets the model call, as `tool_called` names it: a function's or custom tool's
    name (a function's nested under `function` in the Chat Completions shape), else its tool type."""
    kind = tool.get("type")
    for call in CLIENT_CALLS.values():
        if kind in call.tools:
            return call.tools[0]
    inner = tool.get("function")
    name = tool.get("name") or (inner.get("name") if isinstance(inner, Mapping) else None)
    return name if isinstance(name, str) else None


def stand_in(call: Item, text: str) -> CallResult:
    """What a harness that runs nothing answers a call with: `text` where the call's kind takes text, an approval
    granted, a client tool search that found no tools."""
    kind = client_call(call)
    if kind is CLIENT_CALLS["mcp_approval_request"]:
        return True
    if kind is CLIENT_CALLS["tool_search_call"]:
        return []
    return text
