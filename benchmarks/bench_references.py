"""The field check's cost (`rrkit.references.check_event`: what `conform --server` and `validate` run on every event)
beside the reader users already run on the same events: the official SDK's strict parse (`validate_type`, what
`_strict_response_validation=True` does). Streams of 1k and 100k text deltas with their lifecycle events, as the
fake server makes them; the runs interleaved, CPU time per event (the process's own clock) the median of the rounds.
Also the create's request check (`echoed_refusal`): the first request of a kind of tools, then the same again.

Run: python -m benchmarks.bench_references [--quick] [--rounds N] [--json]
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from benchmarks.common import Profile, Row, interleaved, median, run_main

BENCH = "references"


def _stream(deltas: int) -> list[dict[str, Any]]:
    from rrkit.protocol import IdGenerator, ResponseEvents

    builder = ResponseEvents({"model": "gpt-test", "input": "hi"}, ids=IdGenerator.counting(), created_at=1)
    return [*builder.start(), *builder.message("x" * deltas, deltas), *builder.completed()]


def _cpu_per_event(check: Callable[[dict[str, Any]], object], events: list[dict[str, Any]]) -> Callable[[], float]:
    def run() -> float:
        start = time.process_time()
        for event in events:
            check(event)
        return (time.process_time() - start) / len(events)

    return run


def _sdk_strict() -> Callable[[dict[str, Any]], object]:
    from openai._models import validate_type
    from openai.types.responses import ResponseStreamEvent

    return lambda event: validate_type(type_=ResponseStreamEvent, value=event)  # type: ignore[arg-type]


def rows(profile: Profile) -> list[Row]:
    from rrkit.references import check_event
    from rrkit.references.request_fields import echoed_refusal

    found: list[Row] = []
    for size in (1_000,) if profile.quick else (1_000, 100_000):
        events = _stream(size)
        assert not [violation for event in events for violation in check_event(event)], "a served event breaks"
        runs = {"rrkit": _cpu_per_event(check_event, events), "sdk": _cpu_per_event(_sdk_strict(), events)}
        got = interleaved(runs, profile.rounds)
        found.append(
            Row(
                f"field check, stream of {size:,} deltas",
                median(got["rrkit"]) * 1e6,
                median(got["sdk"]) * 1e6,
                "us CPU/event",
                baseline_name="openai SDK strict parse",
                bench=BENCH,
            )
        )
    tools = [{"type": "function", "name": f"tool_{n}", "parameters": {"type": "object"}} for n in range(8)]
    request = {"model": "gpt-test", "tools": tools, "reasoning": {"effort": "low"}, "text": {"verbosity": "low"}}
    start = time.perf_counter()
    echoed_refusal(request)
    first = time.perf_counter() - start
    again = interleaved({"again": lambda: _timed_many(echoed_refusal, request, 1000)}, profile.rounds)["again"]
    found.append(
        Row(
            "request check, 8 tools: first of a kind / again",
            first * 1e6,
            median(again) * 1e6,
            "us/request",
            baseline_name="the same request again (cached verdict)",
            bench=BENCH,
        )
    )
    return found


def _timed_many(check: Callable[[dict[str, Any]], object], value: dict[str, Any], times: int) -> float:
    start = time.perf_counter()
    for _ in range(times):
        check(value)
    return (time.perf_counter() - start) / times


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    main()
