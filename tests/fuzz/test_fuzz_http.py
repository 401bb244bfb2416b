"""HTTP bodies to a real fake server on loopback: any JSON (lone surrogates, huge integers, NaN/Infinity, deep
nesting), any bytes, with and without `content-type` / `content-encoding`. The status is 200 or 400 (404/405 for a
wrong path or method), never 500; the body is a JSON error or a stream that ends in a terminal event; nothing is
logged; every request has a timeout; and the server answers a normal request afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from . import fuzz
from .conftest import GuardedServer
from .requests import NORMAL, check_answer, http_headers_and_body, json_payloads

TIMEOUT = httpx.Timeout(10.0)
"""Every request's bound: a hang fails the example (pytest-timeout's 180 s would fail the whole module)."""

# The strategies' own repr (not an example's) is large; hypothesis warns when it builds it for a report.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=TIMEOUT, trust_env=False) as client:
        yield client


def post(client: httpx.Client, guarded: GuardedServer, body: bytes, headers: dict[str, str], path: str) -> None:
    guarded.attach()
    url = guarded.server.http_url.removesuffix("/v1") + path
    response = client.post(url, content=body, headers=headers)
    event(f"status {response.status_code}")  # --hypothesis-show-statistics: how far the bodies got
    check_answer(response.status_code, response.headers.get("content-type", ""), response.content)
    guarded.check()


def answers_normal_request(client: httpx.Client, guarded: GuardedServer) -> None:
    response = client.post(guarded.server.http_url + "/responses", json=NORMAL)
    events = check_answer(response.status_code, response.headers.get("content-type", ""), response.content)
    assert response.status_code == 200 and events[-1]["type"] == "response.completed"
    guarded.check()


@fuzz(300)
@given(payload=json_payloads(), data=st.data(), path=st.sampled_from(["/v1/responses", "/responses"]))
def test_any_json_body_gets_200_or_400_never_500_and_the_server_answers_on(
    guarded: GuardedServer, client: httpx.Client, payload: bytes, data: st.DataObject, path: str
) -> None:
    headers, body = data.draw(http_headers_and_body(payload), label="headers, body")
    post(client, guarded, body, headers, path)
    answers_normal_request(client, guarded)


@fuzz(150)
@given(payload=st.binary(max_size=300), data=st.data())
def test_any_bytes_body_gets_400_never_500_and_the_server_answers_on(
    guarded: GuardedServer, client: httpx.Client, payload: bytes, data: st.DataObject
) -> None:
    headers, body = data.draw(http_headers_and_body(payload), label="headers, body")
    post(client, guarded, body, headers, "/v1/responses")
    answers_normal_request(client, guarded)


@fuzz(50)
@given(
    method=st.sampled_from(["GET", "PUT", "DELETE", "PATCH", "POST"]),
    path=st.sampled_from(["/", "/v1", "/v1/responses/x", "/v2/responses", "/v1/chat/completions"])
    | st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="#?%"), max_size=20).map(
        lambda tail: "/v1/" + tail
    ),
    body=st.binary(max_size=50),
)
def test_wrong_path_or_method_gets_404_or_405_never_500(
    guarded: GuardedServer, client: httpx.Client, method: str, path: str, body: bytes
) -> None:
    guarded.attach()
    url = guarded.server.http_url.removesuffix("/v1") + path
    response = client.request(method, url, content=body or None)
    responses_path = path in ("/v1/responses", "/responses")
    expected = ({200, 400} if method == "POST" else {405}) if responses_path else {404, 405}
    assert response.status_code in expected, (method, path, response.status_code, response.text[:300])
    guarded.check()
    answers_normal_request(client, guarded)
