"""Every output item type of the official SDK's union, held to what a script can write without raw `events:`:
each is scriptable or named here as not yet (issue 23 is done when `NOT_YET` is empty). A type the SDK adds, or
one made scriptable and still listed, fails the test, so the list can only shrink and never lies."""

from __future__ import annotations

from typing import get_args

from openai.types.responses.response_output_item import ResponseOutputItem

from rrkit.script.models import Output

NOT_YET = frozenset(
    {
        "additional_tools",
        "apply_patch_call",
        "apply_patch_call_output",
        "compaction",
        "computer_call",
        "computer_call_output",
        "custom_tool_call_output",
        "function_call_output",
        "local_shell_call",
        "local_shell_call_output",
        "mcp_approval_request",
        "mcp_approval_response",
        "program",
        "program_output",
        "shell_call",
        "shell_call_output",
        "tool_search_call",
        "tool_search_output",
    }
)
"""Output item types of the SDK a script cannot write yet (only as raw `events:`)."""


def _types(union: object) -> set[str]:
    found: set[str] = set()
    for model in get_args(union):
        found |= {str(literal) for literal in get_args(model.model_fields["type"].annotation)}
    return found


SDK_TYPES = _types(get_args(ResponseOutputItem)[0])
SCRIPTABLE = {get_args(tagged)[1].tag for tagged in get_args(get_args(Output)[0])}  # Union[Annotated[Out, Tag]]


def test_every_sdk_output_item_type_is_scriptable_or_named_as_not_yet() -> None:
    missing = sorted(SDK_TYPES - SCRIPTABLE - NOT_YET)
    assert not missing, f"SDK output item types rrkit neither scripts nor lists: {missing}"


def test_no_scriptable_type_is_still_listed_as_not_yet() -> None:
    assert not SCRIPTABLE & NOT_YET, f"scriptable now, drop from NOT_YET: {sorted(SCRIPTABLE & NOT_YET)}"
    assert NOT_YET <= SDK_TYPES, "a type named as not yet that the SDK no longer has"


def test_what_a_script_writes_is_an_sdk_output_item_type() -> None:
    assert SCRIPTABLE - {"refusal"} <= SDK_TYPES  # a refusal is a message's content part, written as its own item
