"""Request matching for replay: logical by default, volatile fields ignored, configurable per field."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from rrkit.cassette import MatchConfig
from rrkit.cassette.match import DIFF_VALUE_LIMIT, VOLATILE_FIELDS, compare, json_diff, match_config_from_cli
from rrkit.cassette.presets import PRESETS

RECORDED: dict[str, Any] = {
    "model": "gpt-test",
    "instructions": "Be brief.",
    "input": [{"id": "msg_1", "type": "message", "role": "assistant", "content": "hi"}],
    "prompt_cache_key": "session-1",
    "client_metadata": {"run": 1},
}


def test_volatile_fields_and_item_ids_are_ignored_by_default() -> None:
    incoming = {
        **RECORDED,
        "prompt_cache_key": "session-2",
        "client_metadata": {"run": 2},
        "input": [{**RECORDED["input"][0], "id": "msg_other"}],
    }
    assert compare(RECORDED, incoming, MatchConfig()).ok


def test_each_differing_field_is_a_failed_matcher_with_its_diff() -> None:
    incoming = {**RECORDED, "model": "gpt-other", "instructions": "Be verbose."}
    result = compare(RECORDED, incoming, MatchConfig())
    assert result.failed == ["instructions", "model"]
    assert "input" in result.passed
    assert result.diffs["model"] == ['Value of model changed from "gpt-test" to "gpt-other".']


def test_matching_can_be_limited_to_some_fields() -> None:
    incoming = {**RECORDED, "instructions": "Something else", "input": []}
    assert compare(RECORDED, incoming, MatchConfig(fields=("model",))).ok
    assert not compare(RECORDED, incoming, MatchConfig(fields=("model", "instructions"))).ok


def test_volatile_fields_count_when_nothing_is_ignored() -> None:
    incoming = {**RECORDED, "prompt_cache_key": "session-2"}
    result = compare(RECORDED, incoming, MatchConfig(ignore=(), item_keys=()))
    assert result.failed == ["prompt_cache_key"]


def test_extra_ignored_field_leaves_it_out() -> None:
    incoming = {**RECORDED, "instructions": "Other"}
    assert compare(RECORDED, incoming, MatchConfig(ignore=(*MatchConfig().ignore, "instructions"))).ok


TOOL_TURN: dict[str, Any] = {
    "model": "gpt-test",
    "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<cwd>/home/a</cwd> run it"}]},
        {"type": "function_call", "call_id": "call_1", "name": "exec", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "Chunk ID: 1a2b\nWall time: 0.05 seconds\nok"},
    ],
    "tools": [{"type": "function", "name": "exec", "description": "Run a command (v1)."}],
}


def changed(path: tuple[Any, ...], value: Any, request: dict[str, Any] = TOOL_TURN) -> dict[str, Any]:
    """A deep copy of `request` with the value at `path` replaced."""
    copy = json.loads(json.dumps(request))
    target = copy
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return copy


def test_ignored_path_with_wildcard_matches_changed_tool_output() -> None:
    incoming = changed(("input", 2, "output"), "something else entirely")
    assert not compare(TOOL_TURN, incoming, MatchConfig()).ok
    assert compare(TOOL_TURN, incoming, MatchConfig(ignore=("input[*].output",))).ok


def test_ignored_path_reaches_every_text_part_of_every_item_and_only_those() -> None:
    config = MatchConfig(ignore=("input[*].content[*].text", "tools[*].description"))
    assert compare(TOOL_TURN, changed(("input", 0, "content", 0, "text"), "other"), config).ok
    assert compare(TOOL_TURN, changed(("tools", 0, "description"), "Run a command (v2)."), config).ok
    assert compare(TOOL_TURN, changed(("tools", 0, "name"), "shell"), config).failed == ["tools"]


def test_dotted_paths_and_indexes_work_as_in_redaction_paths() -> None:
    incoming = changed(("input", 2, "output"), "other")
    assert compare(TOOL_TURN, incoming, MatchConfig(ignore=("input.*.output",))).ok
    assert compare(TOOL_TURN, incoming, MatchConfig(ignore=("input[2].output",))).ok
    assert not compare(TOOL_TURN, incoming, MatchConfig(ignore=("input[1].output",))).ok


def test_normalized_groups_are_replaced_and_the_rest_of_the_string_still_counts() -> None:
    config = MatchConfig(normalize=(("input[*].output", r"Wall time: ([0-9.]+) seconds"),))
    assert compare(
        TOOL_TURN, changed(("input", 2, "output"), TOOL_TURN["input"][2]["output"].replace("0.05", "3.2")), config
    ).ok
    other_text = changed(("input", 2, "output"), "Chunk ID: 1a2b\nWall time: 0.07 seconds\nfailed")
    assert compare(TOOL_TURN, other_text, config).failed == ["input"]


def test_normalize_without_groups_replaces_the_whole_match_and_reaches_strings_under_the_path() -> None:
    config = MatchConfig(normalize=(("input[*].content", r"<cwd>[^<]*</cwd>"),))
    assert compare(TOOL_TURN, changed(("input", 0, "content", 0, "text"), "<cwd>/home/b</cwd> run it"), config).ok
    assert not compare(TOOL_TURN, changed(("input", 0, "content", 0, "text"), "<cwd>/home/b</cwd> stop"), config).ok


def test_view_leaves_the_request_as_it_was() -> None:
    before = json.dumps(TOOL_TURN)
    config = MatchConfig(ignore=("input[*].output",), normalize=(("input[*].content[*].text", "cwd"),))
    view = config.view(TOOL_TURN)
    assert json.dumps(TOOL_TURN) == before
    assert "output" not in view["input"][2]


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("input[*", "unexpected '[' at position 5"),
        ("input..output", "empty name at position 6"),
        ("input.", "it ends with '.'"),
        ("[0].output", "a path starts with a field name"),
        ("input[*]output", "a '.' must come before the name"),
        ("", "a path is a non-empty string"),
    ],
)
def test_bad_ignore_path_is_an_error_naming_it_and_what_is_wrong(path: str, problem: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"invalid ignore path {path!r}: {problem}")):
        MatchConfig(ignore=(path,))


def test_bad_normalize_regex_is_an_error_naming_the_path_and_the_regex() -> None:
    with pytest.raises(
        ValueError, match=re.escape("normalize 'input[*].output': invalid regex 'Wall (time': missing )")
    ):
        MatchConfig(normalize=(("input[*].output", "Wall (time"),))
    with pytest.raises(ValueError, match=re.escape("invalid normalize path 'input[': unexpected '['")):
        MatchConfig(normalize=(("input[", "x"),))


def test_settings_add_to_the_volatile_defaults_and_accept_one_or_many_regexes() -> None:
    config = MatchConfig.from_settings(
        {
            "ignore": "tools[*].description",
            "normalize": {"input[*].output": ["Chunk ID: (\\S+)", "Wall time: ([0-9.]+)"]},
        }
    )
    assert config.ignore == (*VOLATILE_FIELDS, "tools[*].description")
    assert config.normalize == (("input[*].output", "Chunk ID: (\\S+)"), ("input[*].output", "Wall time: ([0-9.]+)"))
    assert MatchConfig.from_settings({"preset": "codex", "allow_repeats": True}) == MatchConfig(
        presets=("codex",), allow_repeats=True
    )
    assert MatchConfig.from_settings({"on": "wire", "fields": ["model"]}) == MatchConfig(on="wire", fields=("model",))


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"ignroe": ["x"]}, "unknown match setting 'ignroe' (did you mean 'ignore'?)"),
        ({"zzz": 1}, "unknown match setting 'zzz'; valid: on, fields, ignore"),
        ({"presets": ["codx"]}, "unknown match preset 'codx' (did you mean 'codex'?); valid: codex, openai-sdk"),
        ({"allow_repeats": "yes"}, "match setting 'allow_repeats' is true or false, got 'yes'"),
        ({"ignore": 3}, "match setting 'ignore' must be a string or a list of strings, got 3"),
        ({"normalize": ["x"]}, "match setting 'normalize' maps a path to a regex"),
        ({"normalize": {"input": 3}}, "match setting 'normalize' at 'input' must be a string or a list of strings"),
        ({"on": "wires"}, "invalid match 'on' 'wires': it is 'logical' or 'wire'"),
    ],
)
def test_bad_settings_are_errors_naming_the_key_and_the_closest_valid_one(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        MatchConfig.from_settings(settings)


def test_cli_strings_split_at_the_first_equals_and_add_to_the_defaults() -> None:
    config = match_config_from_cli(["tools[*].description"], ["input[*].output=a=(\\d+)"], ["openai-sdk"], True)
    assert config == MatchConfig(
        ignore=(*VOLATILE_FIELDS, "tools[*].description"),
        normalize=(("input[*].output", "a=(\\d+)"),),
        presets=("openai-sdk",),
        allow_repeats=True,
    )


@pytest.mark.parametrize(
    ("normalize", "presets", "message"),
    [
        (["input[*].output"], [], "normalize 'input[*].output': expected PATH=REGEX"),
        (["=x"], [], "normalize '=x': expected PATH=REGEX"),
        ([], ["sdk"], "unknown match preset 'sdk'"),
        ([], ["nope"], "valid: codex, openai-sdk"),
    ],
)
def test_cli_strings_that_cannot_be_used_are_clear_errors(
    normalize: list[str], presets: list[str], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        match_config_from_cli(normalize=normalize, presets=presets)


def test_every_preset_describes_itself_and_says_why_for_each_entry() -> None:
    for name, preset in PRESETS.items():
        assert preset.name == name and preset.description
        entries = [*preset.ignore, *preset.normalize, *preset.headers]
        assert entries and all(entry.why for entry in entries)
        MatchConfig.preset(name)  # every path and regex is valid


def test_openai_sdk_preset_leaves_the_stainless_headers_out() -> None:
    config = MatchConfig.preset("openai-sdk")
    assert config.header_ignored("X-Stainless-Runtime-Version") and config.header_ignored("x-stainless-retry-count")
    assert not config.header_ignored("authorization") and not MatchConfig().header_ignored("x-stainless-os")


def test_ints_beyond_64_bits_and_deep_nesting_compare_without_crashing() -> None:
    deep: Any = "leaf"
    for _ in range(300):  # deeper than orjson encodes
        deep = [deep]
    big = {**RECORDED, "metadata_big": 2**70, "deep": deep}
    assert compare(big, json.loads(json.dumps(big)), MatchConfig()).ok
    assert compare(big, {**big, "metadata_big": 2**70 + 1}, MatchConfig()).failed == ["metadata_big"]


def test_requests_compare_as_json_values() -> None:
    assert compare({"n": 1}, {"n": 1.0}, MatchConfig()).failed == ["n"]
    assert compare({"n": True}, {"n": 1}, MatchConfig()).failed == ["n"]
    assert compare({"n": {"a": 1, "b": 2}}, {"n": {"b": 2, "a": 1}}, MatchConfig()).ok


def test_diff_keeps_a_value_containing_root_as_it_is() -> None:
    assert json_diff({"path": "/root/.pyenv"}, {"path": "/root/.venv"}, "tools") == [
        """Value of tools['path'] changed from "/root/.pyenv" to "/root/.venv"."""
    ]


def test_diff_shows_a_multiline_value_whole_with_its_newlines_escaped() -> None:
    lines = json_diff("Chunk ID: 1\nWall time: 2\nok", "Chunk ID: 1\nWall time: 2\nfailed", "output")
    assert lines == [
        'Value of output changed from "Chunk ID: 1\\nWall time: 2\\nok" to "Chunk ID: 1\\nWall time: 2\\nfailed".'
    ]


def test_diff_bounds_long_values_around_their_first_difference() -> None:
    before, after = "x" * 1000 + "BEFORE" + "y" * 1000, "x" * 1000 + "AFTER" + "y" * 1000
    (line,) = json_diff(before, after, "text")
    assert "BEFORE" in line and "AFTER" in line and "(2006 chars)" in line and "(2005 chars)" in line
    assert len(line) < 2 * DIFF_VALUE_LIMIT + 100
    (added,) = json_diff({}, {"big": ["z" * 50] * 100}, "body")
    assert added.startswith("Item body['big'] ([") and "… (" in added and len(added) < DIFF_VALUE_LIMIT + 100
