"""A syrupy extension that stores recordings as normalized cassettes and reports semantic differences."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from .cassette.format import Cassette
from .cassette.match import json_diff
from .cassette.normalize import normalize_cassette
from .cassette.presets import PLATFORM_HEADERS
from .cassette.store import dump_cassette


class RRKitSnapshotExtension(SingleFileSnapshotExtension):
    """`assert recording == snapshot` with volatile ids, timestamps and token counts normalized, the SDK's
    platform headers masked (`masked_headers`: present, any value), and the headers named by `left_out_headers`
    (`fnmatch` patterns) left out."""

    file_extension = "json"
    _write_mode = WriteMode.TEXT
    left_out_headers: tuple[str, ...] = ()
    masked_headers: tuple[str, ...] = PLATFORM_HEADERS

    def serialize(self, data: Any, **_: Any) -> str:
        if not isinstance(data, Cassette):
            raise TypeError(f"rrkit snapshots hold recordings (a Cassette), not {type(data).__name__}")
        normalized = normalize_cassette(data, drop_headers=self.left_out_headers, mask_headers=self.masked_headers)
        return "".join(dump_cassette(normalized))

    def diff_lines(self, serialized_data: Any, snapshot_data: Any) -> Iterator[str]:
        try:
            new, old = json.loads(str(serialized_data)), json.loads(str(snapshot_data))
        except ValueError:
            yield from super().diff_lines(serialized_data, snapshot_data)
            return
        old_exchanges, new_exchanges = old.get("exchanges", []), new.get("exchanges", [])
        if len(old_exchanges) != len(new_exchanges):
            yield f"number of exchanges: snapshot has {len(old_exchanges)}, this run has {len(new_exchanges)}"
        for index, (before, after) in enumerate(zip(old_exchanges, new_exchanges, strict=False)):
            before_events = [entry["event"] for entry in before.pop("events", [])]
            after_events = [entry["event"] for entry in after.pop("events", [])]
            before_types = [event.get("type") for event in before_events]
            after_types = [event.get("type") for event in after_events]
            if before_types != after_types:
                yield f"exchange {index}: event types differ:"
                yield from (f"  {line}" for line in json_diff(before_types, after_types, "types"))
            else:
                yield from (f"exchange {index}: {line}" for line in json_diff(before_events, after_events, "events"))
            yield from (f"exchange {index}: {line}" for line in json_diff(before, after, "exchange"))
        rest_old = {k: v for k, v in old.items() if k != "exchanges"}
        rest_new = {k: v for k, v in new.items() if k != "exchanges"}
        yield from json_diff(rest_old, rest_new, "recording")


@functools.cache
def snapshot_extension(left_out_headers: tuple[str, ...] = ()) -> type[RRKitSnapshotExtension]:
    """The extension class leaving these headers out (syrupy takes a class, so one class per header set)."""
    if not left_out_headers:
        return RRKitSnapshotExtension
    return type("RRKitSnapshotExtension", (RRKitSnapshotExtension,), {"left_out_headers": left_out_headers})
