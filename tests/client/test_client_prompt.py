"""Prompt -> request: a pure compilation to the protocol's request, in the standard and the Lite encoding."""

from __future__ import annotations

from dataclasses import replace

from rrkit.client import ModelClient, user_message
from rrkit.client.prompt import compile_lite, compile_request
from rrkit.protocol import ResponsesRequest, from_lite, is_lite
from rrkit.protocol.lite import ALL_TURNS, instructions_in_input, without_lite_settings

from .client_support import PROMPT, WEATHER_TOOL


def test_a_prompt_compiles_to_a_request_with_tool_choice_auto_and_stream_true() -> None:
    prompt = PROMPT.extended(user_message("Hello."))
    request = compile_request(prompt)
    assert request["tool_choice"] == "auto" and request["stream"] is True
    assert request["model"] == "gpt-test" and request["instructions"] == "Be brief."
    assert request["input"] == [user_message("Hello.")]
    assert request["tools"] == [WEATHER_TOOL]
    assert request["parallel_tool_calls"] is False
    ResponsesRequest.model_validate(request)


def test_compilation_is_pure() -> None:
    prompt = PROMPT.extended(user_message("Hello."))
    first = compile_request(prompt)
    first["input"].append(user_message("mutated"))
    first["tools"][0]["name"] = "mutated"
    assert compile_request(prompt) == compile_request(PROMPT.extended(user_message("Hello.")))
    assert prompt.tools[0]["name"] == "get_weather"


def test_reasoning_output_schema_verbosity_and_cache_key_map_to_their_fields() -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    prompt = replace(
        PROMPT,
        reasoning={"effort": "medium", "summary": "auto"},
        output_schema=schema,
        verbosity="low",
        prompt_cache_key="session-1",
        include=("reasoning.encrypted_content",),
    )
    request = compile_request(prompt)
    assert request["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert request["text"] == {
        "verbosity": "low",
        "format": {"type": "json_schema", "name": "rrkit_output_schema", "schema": schema, "strict": True},
    }
    assert request["prompt_cache_key"] == "session-1"
    assert request["include"] == ["reasoning.encrypted_content"]


def test_the_lite_encoding_moves_instructions_and_tools_into_the_input() -> None:
    prompt = replace(PROMPT.extended(user_message("Hello.")), parallel_tool_calls=True)
    lite = compile_lite(prompt)
    assert "instructions" not in lite and "tools" not in lite
    assert lite["parallel_tool_calls"] is False
    assert lite["input"][0] == {"type": "additional_tools", "role": "developer", "tools": [WEATHER_TOOL]}
    assert lite["input"][1]["role"] == "developer"
    assert lite["reasoning"] == {**(compile_request(prompt).get("reasoning") or {}), "context": ALL_TURNS}
    assert is_lite(lite)
    standard = compile_request(prompt)
    assert without_lite_settings(from_lite(lite)) == without_lite_settings(instructions_in_input(standard))


async def test_the_client_fills_in_the_session_cache_key_unless_the_prompt_sets_one() -> None:
    async with ModelClient("http://127.0.0.1:9/v1", prompt_cache_key="session-key") as client:
        assert client.compile(PROMPT)["prompt_cache_key"] == "session-key"
        assert client.compile(replace(PROMPT, prompt_cache_key="own"))["prompt_cache_key"] == "own"
