"""The OpenAPI description's own known artefacts: where the spec departs from what the service sends or takes, each
with its reason and how rrkit treats it (a fix to the vendored excerpt where one can be made, else not checked)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..protocol.errors import BEYOND_SDK_CODES


@dataclass(frozen=True, slots=True)
class Fix:
    """A change the excerpt's generator makes to the spec's schema at `pointer` (a JSON pointer into the
    excerpt): admit null beside it, more values in its enum, the enum left open, or `also` a schema it must meet."""

    pointer: str
    admit_null: bool = False
    add_enum: tuple[str, ...] = ()
    open_enum: bool = False  # a value outside the enum is a `should` (marked `x-rrkit-open-enum`)
    also: Mapping[str, Any] | None = None  # the schema becomes `{"allOf": [schema, also]}`

    @property
    def parts(self) -> list[str]:
        """The pointer's keys, unescaped (`~1` is `/`, `~0` is `~`)."""
        return [part.replace("~1", "/").replace("~0", "~") for part in self.pointer.strip("/").split("/")]


@dataclass(frozen=True, slots=True)
class Artefact:
    """One place where the spec is wrong about the service: what it says, what the service does, how rrkit's
    checks treat it."""

    name: str
    spec: str
    service: str
    treatment: str
    fixes: tuple[Fix, ...] = ()


SCHEMAS = "/components/schemas/"
NAMED = {"type": "string", "minLength": 1}
"""A model named (what the service requires of a create and a compaction)."""

ARTEFACTS: tuple[Artefact, ...] = (
    Artefact(
        "bare_error_404",
        "a 404's schema is the bare `Error` object",
        'the service wraps it: `{"error": {"message", "type", "param", "code"}}`',
        "an error body's `error` object is held to `Error` (kind `error`); no body is held to the 404 schema "
        "(Schemathesis judges an error body by the API's error shape)",
    ),
    Artefact(
        "model_optional_on_create",
        "`model` is optional on create (`CreateResponse`) and may be null on compaction (`ModelIdsCompaction`)",
        "the service refuses a create or a compaction without a model",
        "the excerpt requires a model named on both (a valid request Schemathesis makes names one); answers are "
        "what rrkit's field checks hold, and rrkit's own request checks refuse a missing model",
        (
            Fix(SCHEMAS + "CreateResponse", also={"required": ["model"], "properties": {"model": NAMED}}),
            Fix(SCHEMAS + "CompactResponseMethodPublicBody/properties/model", also=NAMED),
        ),
    ),
    Artefact(
        "items_body_untyped",
        "the body of `POST /conversations/{conversation_id}/items` has `properties` and `required` but no "
        "`type: object`, so any JSON value (an array, a string) meets it",
        "the service takes an object",
        "the excerpt says `type: object`",
        (
            Fix(
                "/paths/~1conversations~1{conversation_id}~1items/post/requestBody/content/application~1json/schema",
                also={"type": "object"},
            ),
        ),
    ),
    Artefact(
        "only_200_documented",
        "most routes document only their 200 answer; `DELETE /responses/{id}` documents no 200 body at all",
        "every route answers errors with the error body; a deleted response is answered with a small object",
        "only a 2xx body is held to its route's schema; `responses.delete` has no kind (nothing to hold it to)",
    ),
    Artefact(
        "beta_path_keys",
        "the Responses routes stand again under path keys holding a query string (`/responses?beta=true`, ...)",
        "the query is no part of the route: the service (and rrkit) answer those requests on the plain routes",
        "left out of the excerpt (a path key with a query is no OpenAPI path template): its paths are "
        "rrkit.protocol.routes.ROUTES",
    ),
    Artefact(
        "discriminator_without_mapping",
        "no discriminator (`type`) of the spec has a mapping, and no `type` value is a schema's name (`compaction` "
        "is `CompactionBody`'s, `function_call` `FunctionToolCallResource`'s)",
        "every item and event names its kind in `type`",
        "a union's branch is chosen by each branch's own `type` enum (so a compaction item is a `CompactionBody`); "
        "Schemathesis, which needs a mapping, gets one made the same way (tests/fuzz/test_schemathesis.py)",
    ),
    Artefact(
        "usage_not_nullable",
        "`Response.usage` is a non-null object",
        "`usage` is null until the response ends (the spec's own `response.created` and `.in_progress` examples)",
        "the excerpt admits null",
        (Fix(SCHEMAS + "Response/allOf/2/properties/usage", admit_null=True),),
    ),
    Artefact(
        "incomplete_reasons",
        "`incomplete_details.reason` is `max_output_tokens` or `content_filter`",
        "the newest SDKs add `max_messages` and `steered` (a response stopped for WebSocket steering input)",
        "the excerpt adds both to the enum",
        (
            Fix(
                SCHEMAS + "Response/allOf/2/properties/incomplete_details/anyOf/0/properties/reason",
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
        (Fix(SCHEMAS + "ResponseErrorCode", add_enum=tuple(sorted(BEYOND_SDK_CODES)), open_enum=True),),
    ),
    Artefact(
        "empty_page_ids",
        "a page's `first_id` and `last_id` are strings",
        "an empty page has no first or last item: they are null (async-openai made them optional, PR #496)",
        "the excerpt admits null",
        tuple(
            Fix(f"{SCHEMAS}{page}/properties/{name}", admit_null=True)
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
