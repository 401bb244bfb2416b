"""Cassette files: any JSON, mutations of the repository's cassettes (keys dropped, types and versions changed),
non-UTF-8 bytes, through `load_cassette`: the only exception is `CassetteError`, naming the file; a cassette that
loads also saves, loads back the same and builds a replay source. And a recording round-trips: requests recorded on
a fake server, `cassette_from_capture` -> `save_cassette` -> `load_cassette` -> replayed by `CassetteSource` on a
fake server give the client the same events (types and text)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from websockets.sync.client import connect

from rrkit.cassette import (
    Cassette,
    CassetteError,
    CassetteSource,
    cassette_from_capture,
    load_cassette,
    save_cassette,
)
from rrkit.script import Script, function_call, reply, text

from . import HUGE_INTS, JSON_VALUES, PLAIN_JSON, fuzz, json_text, mutated, to_bytes
from .conftest import GuardedServer
from .requests import TERMINAL, VALID_TEXT, sse_events

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

REPOSITORY_CASSETTES = sorted((Path(__file__).parents[2] / "cassettes").glob("*.json"))
CASSETTES = {path.name: json.loads(path.read_text(encoding="utf-8")) for path in REPOSITORY_CASSETTES}
VERSIONS = st.sampled_from([0, 2, 99, 2**70, -1, "1", 1.0, 1.5, True, False, None, [1], {"v": 1}])
TIMEOUT = 10.0


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("fuzz-cassettes")


def tally(what: str) -> None:
    """A hypothesis event (counted by --hypothesis-show-statistics), when in a hypothesis test."""
    if currently_in_test_context():
        event(what)


def loaded(path: Path) -> Cassette | None:
    """`load_cassette(path)`: a Cassette that also saves and loads back the same and builds a replay source, or
    None after a CassetteError that names the file."""
    try:
        cassette = load_cassette(path)
    except CassetteError as error:
        assert str(path) in str(error), f"the error does not name {path}: {error}"
        tally("CassetteError")
        return None
    tally("loaded")
    again = load_cassette(save_cassette(cassette, path.with_name("again-" + path.name)))
    assert again.model_dump(mode="json", exclude={"recorded_at"}) == cassette.model_dump(
        mode="json", exclude={"recorded_at"}
    )
    CassetteSource(cassette)
    return cassette


LONG = 10**20


def _text_cassette(instructions: str) -> str:
    """The repository's text cassette with a long integer and these `instructions` written raw in its request."""
    document = json.loads((Path(__file__).parents[2] / "cassettes" / "text.http.json").read_text(encoding="utf-8"))
    document["exchanges"][0]["wire_request"].update(max_output_tokens=LONG, instructions="@@")
    return json.dumps(document).replace('"@@"', instructions)


LONG_INTEGER_EXAMPLES = {
    "deep": lambda: "[" * 5000 + str(LONG) + "]" * 5000,
    "surrogate": lambda: _text_cassette('"\\ud800"'),
}


@pytest.mark.parametrize("family", sorted(LONG_INTEGER_EXAMPLES))
def test_load_cassette_with_a_long_integer_refuses_what_orjson_refuses(folder: Path, family: str) -> None:
    """With a 19+ digit integer in the file (the exact path), deep nesting or a lone surrogate is a CassetteError
    naming the file, as it is without one (orjson's path)."""
    path = folder / f"long-{family}.json"
    path.write_text(LONG_INTEGER_EXAMPLES[family](), encoding="utf-8")
    assert loaded(path) is None


@fuzz(200)
@given(value=JSON_VALUES, ascii_only=st.booleans(), encoding=st.sampled_from(["utf-8", "utf-8", "utf-16", "latin-1"]))
def test_load_cassette_of_any_json_raises_only_cassette_error_naming_the_file(
    folder: Path, value: Any, ascii_only: bool, encoding: str
) -> None:
    text = json_text(value, ascii_only=ascii_only)
    path = folder / "any.json"
    path.write_bytes(to_bytes(text, encoding))
    loaded(path)


@fuzz(300)
@given(
    name=st.sampled_from(sorted(CASSETTES)),
    data=st.data(),
    version=st.none() | VERSIONS,
    ascii_only=st.booleans(),
)
def test_load_cassette_of_a_mutated_cassette_raises_only_cassette_error_naming_the_file(
    folder: Path, name: str, data: st.DataObject, version: Any, ascii_only: bool
) -> None:
    """A repository cassette with keys dropped, values replaced (any JSON: lone surrogates, huge integers, NaN,
    deep nesting), wrapped, stringified, negated or emptied, and maybe its format version changed."""
    values = JSON_VALUES | VERSIONS | HUGE_INTS
    document = data.draw(mutated(CASSETTES[name], PLAIN_JSON | VERSIONS | HUGE_INTS), label="mutated")
    if version is not None and isinstance(document, dict):
        document["rrkit_cassette"] = version
    exchanges = document.get("exchanges") if isinstance(document, dict) else None
    if data.draw(st.booleans(), label="one raw value") and isinstance(exchanges, list) and exchanges:
        exchange = data.draw(st.sampled_from(exchanges), label="exchange")
        if isinstance(exchange, dict):
            exchange[data.draw(st.sampled_from(sorted(exchange) or ["id"]), label="key")] = data.draw(values)
    text = json_text(document, ascii_only=ascii_only)
    path = folder / name
    path.write_bytes(to_bytes(text, "utf-8"))
    loaded(path)


@fuzz(100)
@given(name=st.sampled_from(sorted(CASSETTES)), offset=st.integers(0, 10**7), bad=st.binary(min_size=1, max_size=3))
def test_load_cassette_of_non_utf8_bytes_names_the_file_and_byte_offset(
    folder: Path, name: str, offset: int, bad: bytes
) -> None:
    content = (Path(__file__).parents[2] / "cassettes" / name).read_bytes()
    at = offset % (len(content) + 1)
    damaged = content[:at] + bad + content[at:]
    path = folder / ("bytes-" + name)
    path.write_bytes(damaged)
    try:
        damaged.decode("utf-8")
    except UnicodeDecodeError as error:
        with pytest.raises(CassetteError) as raised:
            load_cassette(path)
        assert str(path) in str(raised.value) and f"byte offset {error.start}" in str(raised.value), raised.value
    else:
        loaded(path)


# -- a recording round-trips -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recorder() -> Iterator[GuardedServer]:
    server = GuardedServer()
    yield server
    server.finish()


@pytest.fixture(scope="module")
def replayer() -> Iterator[GuardedServer]:
    server = GuardedServer()
    yield server
    server.finish()


TOOLS = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.just("function"),
            "name": st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
            "parameters": st.fixed_dictionaries(
                {"type": st.just("object")},
                optional={"maximum": HUGE_INTS, "minimum": HUGE_INTS, "description": VALID_TEXT},
            ),
        }
    ),
    max_size=2,
)
REQUEST = st.fixed_dictionaries(
    {"model": st.just("gpt-test"), "input": VALID_TEXT, "stream": st.booleans()},
    optional={"instructions": VALID_TEXT, "tools": TOOLS, "max_output_tokens": st.integers(1, 2**62)},
)
REPLIES = st.builds(
    lambda words, chunks, call: Script(
        default=reply(*([text(words, chunks=min(chunks, max(1, len(words))))] if words else []), *call)
    ),
    VALID_TEXT,
    st.integers(1, 8),
    st.lists(st.builds(lambda args: function_call("lookup", {"q": args}), VALID_TEXT | HUGE_INTS), max_size=1),
)


def seen(server: GuardedServer, transport: str, requests: list[dict[str, Any]]) -> list[Any]:
    """What a client sees for each request: the event types and the text of a stream, the JSON of a body."""
    answers: list[Any] = []
    if transport == "ws":
        with connect(server.server.responses_ws_url, open_timeout=TIMEOUT, close_timeout=2) as socket:
            for request in requests:
                socket.send(json.dumps({"type": "response.create", **request}))
                events: list[dict[str, Any]] = []
                while not events or events[-1]["type"] not in TERMINAL:
                    events.append(json.loads(socket.recv(timeout=TIMEOUT)))
                answers.append(summary(events))
        return answers
    with httpx.Client(timeout=TIMEOUT, trust_env=False) as client:
        for request in requests:
            response = client.post(server.server.http_url + "/responses", json=request)
            assert response.status_code == 200, response.text
            if request["stream"]:
                answers.append(summary(sse_events(response.content)))
            else:
                body = response.json()
                output = body["output"]
                answers.append([(item.get("type"), item.get("content"), item.get("arguments")) for item in output])
    return answers


def summary(events: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(event["type"], event.get("delta", event.get("text"))) for event in events]


@fuzz(60)
@given(
    requests=st.lists(REQUEST, min_size=1, max_size=3),
    script=REPLIES,
    transport=st.sampled_from(["http", "ws"]),
)
def test_a_recording_saved_loaded_and_replayed_gives_the_same_events(
    recorder: GuardedServer,
    replayer: GuardedServer,
    folder: Path,
    requests: list[dict[str, Any]],
    script: Script,
    transport: str,
) -> None:
    recorder.attach()
    recorder.server.reset(script)
    recorded = seen(recorder, transport, requests)
    recorder.check()
    server = recorder.server
    cassette = cassette_from_capture(server.exchanges, server.connections, name="fuzz")
    path = save_cassette(cassette, folder / "recorded.json")
    replayer.attach()
    replayer.server.reset(CassetteSource(load_cassette(path)))
    replayed = seen(replayer, transport, requests)
    replayer.check()
    assert replayed == recorded
    assert all(exchange.replayed for exchange in replayer.server.exchanges)
