"""The official SDK's strictest reading of a stream event: what a test of "the SDK parses it" holds an event to."""

from __future__ import annotations

from typing import Any

import pydantic
from openai._models import validate_type  # what the SDK runs when `_strict_response_validation=True`
from openai.types.responses import ResponseStreamEvent

STRICT = pydantic.TypeAdapter(ResponseStreamEvent)


def assert_sdk_accepts(event: dict[str, Any]) -> None:
    """The event passes the SDK's own strict check and pydantic strict mode, and loses or coerces nothing."""
    sdk = validate_type(type_=ResponseStreamEvent, value=event)  # type: ignore[arg-type]
    strict = STRICT.validate_python(event, strict=True)
    assert sdk.type == event["type"]
    assert type(strict) is type(sdk)
    assert sdk.model_dump(mode="json", by_alias=True, exclude_unset=True) == event
