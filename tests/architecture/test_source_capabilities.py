"""Reply sources declare their capabilities on one base, `rrkit.script.ReplySource`, each with its default: the server
calls them directly and never probes a source with `getattr`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import rrkit
from rrkit.cassette import CassetteSource
from rrkit.cassette.modes import FallbackSource
from rrkit.relay import UpstreamSource
from rrkit.script import ReplySource, Script
from rrkit.script.select import ScriptState
from rrkit.server import FakeServer

PACKAGE = Path(rrkit.__file__).parent
PROBE = re.compile(r"getattr\(\s*(self\.)?(state\.)?(source|then|first|upstream)\b")


def test_no_module_probes_a_source_for_a_capability() -> None:
    probes = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if PROBE.search(line)
    ]
    assert probes == []


@pytest.mark.parametrize("source", [ScriptState, CassetteSource, UpstreamSource, FallbackSource])
def test_every_source_of_rrkit_is_a_reply_source(source: type) -> None:
    assert issubclass(source, ReplySource)


def test_only_an_upstream_relays_and_a_cassette_before_one_relays_what_it_relays() -> None:
    script, upstream = ScriptState(Script()), UpstreamSource("http://127.0.0.1:9/v1")
    assert (script.relays_unknown_ids, script.relays_frames) == (False, False)
    assert (upstream.relays_unknown_ids, upstream.relays_frames) == (True, True)
    behind = FallbackSource(script, upstream)
    assert (behind.relays_unknown_ids, behind.relays_frames) == (True, True)
    with pytest.raises(NotImplementedError, match="relays no frames"):
        script.relay_frame(1, "{}")


def test_a_source_that_is_no_reply_source_is_refused_naming_the_base() -> None:
    class Duck:
        async def select(self, request: object) -> None: ...

    with pytest.raises(TypeError, match=r"rrkit\.script\.ReplySource"):
        FakeServer(source=Duck())  # type: ignore[arg-type]
