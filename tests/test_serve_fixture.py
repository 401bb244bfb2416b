"""The `serve` fixture fails a test whose server logged an error, unless the test allowed that error by name."""

from __future__ import annotations

import logging

import httpx
import pytest

from rrkit.script import Script, reply

from .errortrap import Serve


def log_failure(message: str) -> None:
    try:
        raise RuntimeError(message)
    except RuntimeError:
        logging.getLogger("rrkit").exception("answering failed")


def test_a_logged_server_error_fails_the_test_with_its_traceback() -> None:
    serve = Serve()
    serve(Script().add(reply("hi")))
    log_failure("boom in the app")
    with pytest.raises(AssertionError, match=r"(?s)the fake server logged errors:.*Traceback.*boom in the app"):
        serve.finish()


def test_an_allowed_error_passes_but_must_happen() -> None:
    serve = Serve()
    serve()
    serve.allow_errors("expected breakage")
    log_failure("expected breakage")
    serve.finish()

    unmet = Serve()
    unmet.allow_errors("never logged")
    with pytest.raises(AssertionError, match="allowed server error never logged"):
        unmet.finish()


def test_a_block_server_is_guarded_and_stopped_at_its_end() -> None:
    serve = Serve()
    with serve.running(Script().add(reply("hi"))) as server:
        assert httpx.get(server.http_url.removesuffix("/v1") + "/nowhere").status_code == 404
    log_failure("after the block")
    with pytest.raises(AssertionError, match="after the block"):
        serve.finish()


def test_a_log_level_that_hides_errors_is_refused() -> None:
    with pytest.raises(ValueError, match="allow_errors"):
        Serve()(log_level="critical")


def test_the_fixture_serves(serve: Serve) -> None:
    server = serve()
    assert server.exchanges == []
