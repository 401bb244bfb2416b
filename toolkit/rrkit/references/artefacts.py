"""The OpenAPI description's own known artefacts: where the spec departs from what the service sends, each with its
reason and how the field checks treat it (a fix to the vendored excerpt where one can be made, else not checked)."""

from __future__ import annotations

from dataclasses import dataclass

from ..protocol.errors import BEYOND_SDK_CODES


@dataclass(frozen=True, slots=True)
class Fix:
    """A change the excerpt's generator makes to the spec's schema at `pointer` (a JSON pointer into the
    excerpt): admit null beside it, more values in its enum, or the enum left open."""

    pointer: str
    admit_null: bool = False
    add_enum: tuple[str, ...] = ()
    open_enum: bool = False  # a value outside the enum is a `should` (marked `x-rrkit-open-enum`)


@dataclass(frozen=True, slots=True)
class Artefact:
    """One place where the spec is wrong about the service: what it says, what the service does, how rrkit's
    checks treat it."""

    name: str
    spec: str
    service: str
    treatment: str
    fixes: tuple[Fix, ...] = ()


ARTEFACTS: tuple[Artefact, ...] = (
    Artefact(
        "bare_error_404",
        "a 404's schema is the bare `Error` object",
        'the service wraps it: `{"error": {"message", "type", "param", "code"}}`',
        "an error body's `error` object is held to `Error` (kind `error`); no body is held to the 404 schema",
    ),
    Artefact(
        "model_optional_on_create",
        "`model` is optional on create",
        "the service refuses a create without `model`",
        "requests are not held to the spec here, only answers (rrkit's own request checks refuse it)",
    ),
    Artefact(
        "only_200_documented",
        "most routes document only their 200 answer; `DELETE /responses/{id}` documents no 200 body at all",
        "every route answers errors with the error body; a deleted response is answered with a small object",
        "only a 2xx body is held to its route's schema; `responses.delete` has no kind (nothing to hold it to)",
    ),
    Artefact(
        "discriminator_without_mapping",
        "the output item union's discriminator (`type`) has no mapping, `compaction` included",
        "every item names its kind in `type`, `compaction` too",
        "a union's branch is chosen by each branch's own `type` enum (so a compaction item is a `CompactionBody`)",
    ),
    Artefact(
        "usage_not_nullable",
        "`Response.usage` is a non-null object",
        "`usage` is null until the response ends (the spec's own `response.created` and `.in_progress` examples)",
        "the excerpt admits null",
        (Fix("/$defs/Response/allOf/2/properties/usage", admit_null=True),),
    ),
    Artefact(
        "incomplete_reasons",
        "`incomplete_details.reason` is `max_output_tokens` or `content_filter`",
        "the newest SDKs add `max_messages` and `steered` (a response stopped for WebSocket steering input)",
        "the excerpt adds both to the enum",
        (
            Fix(
                "/$defs/Response/allOf/2/properties/incomplete_details/anyOf/0/properties/reason",
                add_enum=("max_messages", "steered"),
            ),
        ),
    ),
    Artefact(
        "response_error_codes",
        "a failed response's `error.code` is one of a closed list (the SDK's literal)",
        "the service sends more codes (`context_length_exceeded`, `insufficient_quota`, `server_is_overloaded`, ...: "
        "rrkit.protocol.errors.BEYOND_SDK_CODES) and adds new ones; a client must take a code it does not know",
        "the excerpt adds those codes, and a code outside the list is a `should`, not a `must`",
        (Fix("/$defs/ResponseErrorCode", add_enum=tuple(sorted(BEYOND_SDK_CODES)), open_enum=True),),
    ),
    Artefact(
        "empty_page_ids",
        "a page's `first_id` and `last_id` are strings",
        "an empty page has no first or last item: they are null (async-openai made them optional, PR #496)",
        "the excerpt admits null",
        tuple(
            Fix(f"/$defs/{page}/properties/{name}", admit_null=True)
            for page in ("ResponseItemList", "ConversationItemList")
            for name in ("first_id", "last_id")
        ),
    ),
    Artefact(
        "websocket_error_frame",
        "the `error` event is SSE's flat `{type, code, message, param, sequence_number}`",
        "an error on a WebSocket is a frame `{type: error, status, error: {type, code, message, param}}`",
        "an `error` event carrying an `error` object is a WebSocket error frame: that object is held to `Error`",
    ),
)
"""Every known artefact of the spec, explicitly (a new one is a row here, with its reason)."""

FIXES: tuple[Fix, ...] = tuple(fix for artefact in ARTEFACTS for fix in artefact.fixes)
"""What the excerpt's generator changes in the spec (tests/references/make_openapi_excerpt.py)."""
