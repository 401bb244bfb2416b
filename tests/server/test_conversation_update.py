"""A conversation update checked as the API checks it (issue 60): `metadata` is required, an object (or null, which
clears it); an update without it, or with another type, is refused with the API's 400 naming `metadata`, and the
conversation is left as it was."""

from __future__ import annotations

import httpx

from ..errortrap import Serve
from .faultclient import sdk


def test_an_update_without_metadata_or_with_a_wrong_type_is_refused_naming_it(serve: Serve) -> None:
    server = serve()
    conversation = sdk(server).conversations.create(metadata={"topic": "weather"})
    url = f"{server.http_url}/conversations/{conversation.id}"
    with httpx.Client(timeout=10) as client:
        missing = client.post(url, json={})
        assert missing.status_code == 400
        assert missing.json()["error"] == {
            "message": "Missing required parameter: 'metadata'.",
            "type": "invalid_request_error",
            "param": "metadata",
            "code": "missing_required_parameter",
        }
        wrong = client.post(url, json={"metadata": "weather"})
        assert wrong.status_code == 400
        error = wrong.json()["error"]
        assert (error["param"], error["code"]) == ("metadata", "invalid_type")
        assert error["message"] == "Invalid type for 'metadata': expected an object, but got a string instead."
        assert client.get(url).json()["metadata"] == {"topic": "weather"}  # left as it was


def test_the_sdk_s_update_replaces_the_metadata(serve: Serve) -> None:
    client = sdk(serve())
    conversation = client.conversations.create(metadata={"topic": "weather"})
    updated = client.conversations.update(conversation.id, metadata={"topic": "rain"})
    assert updated.metadata == {"topic": "rain"}
    assert client.conversations.retrieve(conversation.id).metadata == {"topic": "rain"}
