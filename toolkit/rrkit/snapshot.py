"""A syrupy extension that stores recordings as normalized cassettes and reports semantic differences."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from syrupy.exceptions import SnapshotDoesNotExist, TaintedSnapshotError
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from .cassette.format import Cassette
from .cassette.normalize import normalize_cassette
from .cassette.presets import PLATFORM_HEADERS
from .cassette.store import dump_cassette
from .protocol.jsondiff_text import diff_lines


@dataclass(frozen=True)
class KeptSnapshot:
    """A stored snapshot asserted as it is, so that it counts as used: `--snapshot-update` deletes the
    snapshots no assertion used, which would take those of a test that failed before it asserted them."""

    text: str


class RRKitSnapshotExtension(SingleFileSnapshotExtension):
    """`assert recording == snapshot` with volatile ids, timestamps and token counts normalized, the SDK's
    platform headers masked (`masked_headers`: present, any value), and the headers named by `left_out_headers`
    (`fnmatch` patterns) left out. syrupy's `exclude`, `include` and `matcher` apply to the normalized cassette
    as a JSON tree (property names are its keys, list positions its indexes); a snapshot they change is stored
    as indented JSON."""

    file_extension = "json"
    _write_mode = WriteMode.TEXT
    left_out_headers: tuple[str, ...] = ()
    masked_headers: tuple[str, ...] = PLATFORM_HEADERS

    def serialize(
        self,
        data: Any,
        *,
        exclude: Callable[..., bool] | None = None,
        include: Callable[..., bool] | None = None,
        matcher: Callable[..., Any] | None = None,
        **_: Any,
    ) -> str:
        if isinstance(data, KeptSnapshot):
            return data.text
        if not isinstance(data, Cassette):
            raise TypeError(f"rrkit snapshots hold recordings (a Cassette), not {type(data).__name__}")
        normalized = normalize_cassette(data, drop_headers=self.left_out_headers, mask_headers=self.masked_headers)
        text = "".join(dump_cassette(normalized))
        if exclude is None and include is None and matcher is None:
            return text
        tree = json.loads(text)
        filtered = _filtered(tree, (), exclude, include, matcher)
        if filtered == tree:  # syrupy always passes a matcher; one that changes nothing keeps the cassette layout
            return text
        return json.dumps(filtered, indent=2, ensure_ascii=False, default=repr) + "\n"

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
            yield from _exchange_lines(index, before, after)
        rest_old = {k: v for k, v in old.items() if k != "exchanges"}
        rest_new = {k: v for k, v in new.items() if k != "exchanges"}
        yield from diff_lines(rest_old, rest_new, "recording")


def _exchange_lines(index: int, before: dict[str, Any], after: dict[str, Any]) -> Iterator[str]:
    """How one exchange of the run differs from the snapshot's: its event types, else its events, then the rest."""
    before_events = [entry["event"] for entry in before.pop("events", [])]
    after_events = [entry["event"] for entry in after.pop("events", [])]
    before_types = [event.get("type") for event in before_events]
    after_types = [event.get("type") for event in after_events]
    if before_types != after_types:
        yield f"exchange {index}: event types differ:"
        yield from (f"  {line}" for line in diff_lines(before_types, after_types, "types"))
    else:
        yield from (f"exchange {index}: {line}" for line in diff_lines(before_events, after_events, "events"))
    yield from (f"exchange {index}: {line}" for line in diff_lines(before, after, "exchange"))


def _filtered(
    data: Any,
    path: tuple[tuple[Any, type], ...],
    exclude: Callable[..., bool] | None,
    include: Callable[..., bool] | None,
    matcher: Callable[..., Any] | None,
) -> Any:
    """syrupy's semantics over a JSON tree: `matcher(data=, path=)` may replace any value (the path includes its
    own key), `exclude` / `include` (`prop=`, `path=` of the parent) drop or keep each key or list item."""
    if matcher is not None:
        data = matcher(data=data, path=path)
    if isinstance(data, dict):
        entries: list[tuple[Any, Any]] = list(data.items())
    elif isinstance(data, list):
        entries = list(enumerate(data))
    else:
        return data
    kept = [
        (key, _filtered(value, (*path, (key, type(value))), exclude, include, matcher))
        for key, value in entries
        if (exclude is None or not exclude(prop=key, path=path)) and (include is None or include(prop=key, path=path))
    ]
    return dict(kept) if isinstance(data, dict) else [value for _, value in kept]


def keep_unasserted(assertion: Any) -> int:
    """When snapshots are being updated and the test failed before asserting them all: assert each stored
    snapshot past the last one it asserted as it is (`KeptSnapshot`), so that syrupy keeps it instead of
    deleting it as unused. The number kept."""
    if not assertion.update_snapshots:
        return 0
    kept = 0
    while True:
        index = assertion.num_executions
        try:
            stored = assertion.session.recall_snapshot(assertion.extension, assertion.test_location, index)
        except (SnapshotDoesNotExist, TaintedSnapshotError):
            return kept
        if stored is None:
            return kept
        assert assertion == KeptSnapshot(str(stored))
        kept += 1


@functools.cache
def snapshot_extension(left_out_headers: tuple[str, ...] = ()) -> type[RRKitSnapshotExtension]:
    """The extension class leaving these headers out (syrupy takes a class, so one class per header set)."""
    if not left_out_headers:
        return RRKitSnapshotExtension
    return type("RRKitSnapshotExtension", (RRKitSnapshotExtension,), {"left_out_headers": left_out_headers})
