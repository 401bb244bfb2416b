"""The client's Prompt, its pure compilation to a Responses request (standard or Lite), a session's defaults."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..protocol.lite import to_lite
from ..protocol.request import Item

Encoding = Literal["standard", "lite"]
OUTPUT_SCHEMA_NAME = "rrkit_output_schema"


@dataclass(frozen=True, slots=True)
class Prompt:
    """Everything the model should see, independent of the transport that will carry it."""

    model: str
    instructions: str = ""
    history: tuple[Item, ...] = ()
    tools: tuple[dict[str, Any], ...] = ()
    parallel_tool_calls: bool = False
    reasoning: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    verbosity: str | None = None
    prompt_cache_key: str | None = None
    store: bool = False
    include: tuple[str, ...] = ()
    service_tier: str | None = None
    client_metadata: dict[str, Any] | None = None
    stream_options: dict[str, Any] | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    """Request fields set verbatim after compilation (a field the API added later, or a test's change)."""

    def with_history(self, history: Sequence[Item]) -> Prompt:
        return replace(self, history=tuple(history))

    def extended(self, *items: Item) -> Prompt:
        return replace(self, history=(*self.history, *items))


def text_controls(prompt: Prompt) -> dict[str, Any] | None:
    """The `text` field: verbosity and a strict JSON-schema output format, or None when neither is set."""
    text: dict[str, Any] = {}
    if prompt.verbosity is not None:
        text["verbosity"] = prompt.verbosity
    if prompt.output_schema is not None:
        text["format"] = {
            "type": "json_schema",
            "name": OUTPUT_SCHEMA_NAME,
            "schema": prompt.output_schema,
            "strict": True,
        }
    return text or None


def compile_request(prompt: Prompt) -> dict[str, Any]:
    """Pure: the logical request (the HTTP body) of a prompt, with `tool_choice: "auto"` and `stream: true`."""
    request: dict[str, Any] = {
        "model": prompt.model,
        "instructions": prompt.instructions,
        "input": [dict(item) for item in prompt.history],
        "tools": [dict(tool) for tool in prompt.tools],
        "tool_choice": "auto",
        "parallel_tool_calls": prompt.parallel_tool_calls,
        "reasoning": dict(prompt.reasoning) if prompt.reasoning is not None else None,
        "store": prompt.store,
        "stream": True,
        "include": list(prompt.include),
    }
    optional: dict[str, Any] = {
        "service_tier": prompt.service_tier,
        "prompt_cache_key": prompt.prompt_cache_key,
        "text": text_controls(prompt),
        "client_metadata": prompt.client_metadata,
        "stream_options": prompt.stream_options,
    }
    request.update({name: value for name, value in optional.items() if value is not None})
    request.update(prompt.overrides)
    return request


def compile_lite(prompt: Prompt) -> dict[str, Any]:
    """Pure: the same prompt in the Responses Lite encoding (docs/protocol.md: Responses Lite)."""
    return to_lite(compile_request(prompt))


def compile_prompt(prompt: Prompt, encoding: Encoding = "standard") -> dict[str, Any]:
    return compile_lite(prompt) if encoding == "lite" else compile_request(prompt)


@dataclass(frozen=True, slots=True)
class RequestDefaults:
    """What a session puts on every request: its headers, and in the body its prompt cache key (unless the
    prompt sets one) and encoding."""

    headers: Mapping[str, str]
    prompt_cache_key: str
    encoding: Encoding = "standard"

    def compile(self, prompt: Prompt) -> dict[str, Any]:
        """The logical request of `prompt`."""
        if prompt.prompt_cache_key is None:
            prompt = replace(prompt, prompt_cache_key=self.prompt_cache_key)
        return compile_prompt(prompt, self.encoding)


def user_message(text: str) -> Item:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
