"""Cassettes load line by line: each event's text is checked and kept as it is (not rebuilt from a parse), what
`dump_cassette` writes loads back equal, and a file in any other layout, or wrong anywhere, loads (or is refused,
with its place named) exactly as a parse of the whole file would have it. Replayed events go out as their text,
parsed only if asked for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rrkit.cassette import Cassette, RecordedEvent, RecordedExchange
from rrkit.cassette.playback import plan_recording
from rrkit.cassette.store import dump_cassette, load_cassette, save_cassette
from rrkit.protocol.exceptions import CassetteError
from rrkit.protocol.wire_events import verbatim

BIG = 2**70


def small(*raws: str) -> Cassette:
    events = [RecordedEvent(0.5 * index, raw) for index, raw in enumerate(raws)]
    return Cassette(name="lines", exchanges=[RecordedExchange(id=0, transport="http", events=events)])


CREATED = '{"type":"response.created","response":{"id":"resp_1","status":"in_progress"}}'
DELTA = '{"type":"response.output_text.delta","delta":"h\u00e9llo \\"x\\"","n":%d}'
COMPLETED = '{"type":"response.completed","response":{"id":"resp_1","status":"completed"}}'


def written(tmp_path: Path, cassette: Cassette) -> Path:
    return save_cassette(cassette, tmp_path / "c.json")


def test_events_load_back_as_the_text_that_was_written(tmp_path: Path) -> None:
    cassette = small(CREATED, *(DELTA % n for n in range(3)), COMPLETED)
    loaded = load_cassette(written(tmp_path, cassette))
    assert loaded == cassette
    assert [e.raw for e in loaded.exchanges[0].events] == [e.raw for e in cassette.exchanges[0].events]
    assert [e.at for e in loaded.exchanges[0].events] == [0.0, 0.5, 1.0, 1.5, 2.0]


def test_a_saved_file_is_written_again_byte_for_byte(tmp_path: Path) -> None:
    path = written(tmp_path, small(CREATED, DELTA % 1, COMPLETED))
    assert "".join(dump_cassette(load_cassette(path))) == path.read_text(encoding="utf-8")


def test_integers_beyond_64_bits_in_events_stay_exact(tmp_path: Path) -> None:
    raw = f'{{"type":"response.created","seed":{BIG},"response":{{"id":"resp_1"}}}}'
    loaded = load_cassette(written(tmp_path, small(raw)))
    assert loaded.exchanges[0].events[0].raw == raw
    assert loaded.exchanges[0].events[0].event["seed"] == BIG


def test_an_event_edited_by_hand_with_spaces_is_kept_compact(tmp_path: Path) -> None:
    path = written(tmp_path, small(CREATED, COMPLETED))
    text = path.read_text().replace('{"type":"response.created",', '{"type": "response.created", ')
    path.write_text(text)
    assert load_cassette(path).exchanges[0].events[0].raw == CREATED


def test_a_cassette_in_another_layout_loads_the_same(tmp_path: Path) -> None:
    cassette = small(CREATED, DELTA % 7, COMPLETED)
    data = json.loads("".join(dump_cassette(cassette)))
    for layout in ({}, {"indent": 1}, {"separators": (",", ":")}):
        path = tmp_path / "other.json"
        path.write_text(json.dumps(data, **layout))
        assert load_cassette(path) == cassette


@pytest.mark.parametrize(
    ("line", "edited", "message"),
    [
        ("created", '{"type": 5}', r"\[0\]\.event has no string `type`"),
        ("created", '{"type":"response.created"', r"line \d+, column \d+: invalid JSON"),
        ("created", "[1, 2]", r"\[0\] must be an object with an `event` object"),
    ],
    ids=["no-string-type", "broken-json", "not-an-object"],
)
def test_a_broken_event_line_is_refused_as_the_whole_file_parse_would(
    tmp_path: Path, line: str, edited: str, message: str
) -> None:
    path = written(tmp_path, small(CREATED, COMPLETED))
    path.write_text(path.read_text().replace(CREATED, edited))
    with pytest.raises(CassetteError, match=message) as error:
        load_cassette(path)
    assert str(path) in str(error.value)


def test_a_missing_comma_between_event_lines_is_invalid_json(tmp_path: Path) -> None:
    path = written(tmp_path, small(CREATED, COMPLETED))
    path.write_text(path.read_text().replace(CREATED + "},", CREATED + "}"))
    with pytest.raises(CassetteError, match=r"c\.json: line \d+, column \d+: invalid JSON"):
        load_cassette(path)


def test_a_negative_offset_is_refused_with_its_place(tmp_path: Path) -> None:
    path = written(tmp_path, small(CREATED, COMPLETED))
    path.write_text(path.read_text().replace('{"at": 0.5,', '{"at": -0.5,'))
    with pytest.raises(CassetteError, match=r"\[1\]\.at must be a number of seconds >= 0"):
        load_cassette(path)


def test_an_event_line_that_is_not_utf8_is_named_with_its_byte_offset(tmp_path: Path) -> None:
    path = written(tmp_path, small(CREATED, COMPLETED))
    content = path.read_bytes()
    offset = content.index(b"in_progress")
    path.write_bytes(content[:offset] + b"\xe9" + content[offset + 1 :])
    with pytest.raises(CassetteError, match=rf"c\.json: byte offset {offset}: not UTF-8 .*re-save the cassette"):
        load_cassette(path)


def test_an_offset_beyond_a_float_is_invalid_json_as_before(tmp_path: Path) -> None:
    path = written(tmp_path, small(CREATED, COMPLETED))
    path.write_text(path.read_text().replace('{"at": 0.5,', '{"at": 1e400,'))
    with pytest.raises(CassetteError, match=r"line \d+, column \d+: invalid JSON"):
        load_cassette(path)


def test_replayed_events_are_sent_as_their_text_and_parsed_only_when_read() -> None:
    exchange = small(CREATED, DELTA % 1, COMPLETED).exchanges[0]
    for transport in ("http", "ws"):
        plan = plan_recording(exchange, transport=transport)
        assert plan.response_id == "resp_1"
    sse = verbatim(DELTA % 1, "http", lazy=True)
    assert sse.wire == b"event: response.output_text.delta\ndata: " + (DELTA % 1).encode() + b"\n\n"
    assert not hasattr(sse, "_event")  # nothing parsed yet
    assert sse.event == json.loads(DELTA % 1)
    assert sse == verbatim(DELTA % 1, "http")  # equal to the same event parsed at once
    ws = verbatim(DELTA % 1, "ws", lazy=True)
    assert ws.wire == DELTA % 1


def test_a_lazy_verbatim_event_keeps_integers_beyond_64_bits_exact() -> None:
    raw = f'{{"type":"response.created","seed":{BIG}}}'
    assert verbatim(raw, "ws", lazy=True).event["seed"] == BIG
    assert verbatim(raw, "http").event["seed"] == BIG


def test_a_kept_sse_comment_still_goes_out_as_a_comment() -> None:
    planned = verbatim('{"type":"rrkit.sse_comment","comment":"keep-alive"}', "http", lazy=True)
    assert planned.wire == b":keep-alive\n\n"


def test_a_written_cassette_is_loaded_without_parsing_its_event_lines_as_a_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rrkit.cassette import format as cassette_format
    from rrkit.cassette import store

    parsed: list[str] = []
    original = cassette_format.loads_exact

    def spy(text: str | bytes) -> object:
        parsed.append(text if isinstance(text, str) else text.decode())
        return original(text)

    monkeypatch.setattr(store, "loads_exact", spy)
    load_cassette(written(tmp_path, small(CREATED, DELTA % 1, COMPLETED)))
    assert parsed and not any('"at":' in text for text in parsed)  # the rest of the file only, once
