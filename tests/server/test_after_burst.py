"""After a burst of requests, once none has been in progress for a quiet moment, the heap goes back to the
system once; never while a request is in progress, nor after a handful of requests."""

from __future__ import annotations

import asyncio

from rrkit.server.state import AfterBurst


async def burst(after: AfterBurst, requests: int, *, left_open: int = 0) -> None:
    for _ in range(requests + left_open):
        after.begin()
    for _ in range(requests):
        after.end()
    await asyncio.sleep(after.quiet * 5)


def test_the_heap_goes_back_once_a_burst_has_ended_and_the_server_is_quiet() -> None:
    given: list[int] = []
    after = AfterBurst(quiet=0.01, burst=10, give_back=lambda: given.append(1))
    asyncio.run(burst(after, 10))
    assert given == [1] and after.ended == 0


def test_nothing_goes_back_while_a_request_is_in_progress_or_after_fewer_than_a_burst() -> None:
    given: list[int] = []
    busy = AfterBurst(quiet=0.01, burst=10, give_back=lambda: given.append(1))
    asyncio.run(burst(busy, 20, left_open=1))  # a WebSocket connection still open
    small = AfterBurst(quiet=0.01, burst=10, give_back=lambda: given.append(1))
    asyncio.run(burst(small, 9))
    assert given == []


def ended(after: AfterBurst, requests: int) -> None:
    for _ in range(requests):
        after.begin()
        after.end()


def test_a_server_that_turns_busy_again_before_the_quiet_moment_gives_nothing_back_then() -> None:
    given: list[int] = []
    after = AfterBurst(quiet=0.05, burst=2, give_back=lambda: given.append(1))

    async def run() -> None:
        ended(after, 2)
        after.begin()  # busy again before the quiet moment
        await asyncio.sleep(0.25)
        assert given == []
        after.end()  # quiet from now: the heap goes back after the moment
        await asyncio.sleep(0.25)

    asyncio.run(run())
    assert given == [1]


def test_a_server_between_requests_when_the_quiet_moment_ends_gives_nothing_back_if_requests_came_meanwhile() -> None:
    """Under load a server is often between requests (its client still reading): the moment must have been quiet
    throughout, not only at its end."""
    given: list[int] = []
    after = AfterBurst(quiet=0.5, burst=2, give_back=lambda: given.append(1))

    async def run() -> None:
        ended(after, 2)  # the burst: the quiet moment begins
        ended(after, 1)  # a request came and went within it: none in progress when it ends
        await asyncio.sleep(0.6)  # the moment has ended (and another begun, 0.5 s from then)
        assert given == []
        await asyncio.sleep(1.0)  # quiet throughout the next one

    asyncio.run(run())
    assert given == [1]
