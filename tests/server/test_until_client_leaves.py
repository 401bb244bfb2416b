"""`server.stream.until_client_leaves`: a request's work runs in the request's own task; a client that leaves gets
it cancelled after the grace, and the task goes on afterwards as if nothing was cancelled; a cancellation of the
task itself, or an error of the work, is not swallowed."""

from __future__ import annotations

import asyncio

import pytest

from rrkit.server.stream import Gone, until_client_leaves


def run(coroutine: object) -> object:
    return asyncio.run(coroutine)  # type: ignore[arg-type]


def test_work_that_ends_gives_its_result_and_runs_in_the_calling_task() -> None:
    async def main() -> tuple[object, bool]:
        caller = asyncio.current_task()

        async def work() -> bool:
            return asyncio.current_task() is caller

        return await until_client_leaves(work(), Gone()), True

    assert run(main()) == (True, True)


def test_client_that_leaves_cancels_waiting_work_after_the_grace_and_the_task_goes_on() -> None:
    async def main() -> tuple[object, bool, int]:
        gone = Gone()
        released = asyncio.Event()

        async def work() -> str:
            try:
                await asyncio.sleep(3600)  # an upstream that never answers
            finally:
                released.set()
            return "answered"

        asyncio.get_running_loop().call_later(0.01, gone.set)
        result = await until_client_leaves(work(), gone, grace=0.01)
        await asyncio.sleep(0)  # the task is not left cancelled: it awaits on
        task = asyncio.current_task()
        assert task is not None
        return result, released.is_set(), task.cancelling()

    assert run(main()) == (None, True, 0)


def test_work_that_ends_within_the_grace_after_the_client_left_keeps_its_result() -> None:
    async def main() -> object:
        gone = Gone()
        gone.set()

        async def work() -> str:
            await asyncio.sleep(0.01)
            return "finished"

        return await until_client_leaves(work(), gone, grace=5)

    assert run(main()) == "finished"


def test_a_cancellation_of_the_task_itself_is_not_swallowed() -> None:
    async def main() -> None:
        gone = Gone()

        async def work() -> None:
            await asyncio.sleep(3600)

        task = asyncio.ensure_future(until_client_leaves(work(), gone, grace=0.01))
        await asyncio.sleep(0.005)
        task.cancel()
        gone.set()  # the client leaves too: the task's own cancellation still wins
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())


def test_an_error_of_the_work_is_raised_and_its_timer_released() -> None:
    async def main() -> None:
        gone = Gone()

        async def work() -> None:
            raise ValueError("broken source")

        with pytest.raises(ValueError, match="broken source"):
            await until_client_leaves(work(), gone, grace=0.01)
        gone.set()  # nothing is left to cancel the task later
        await asyncio.sleep(0.03)

    run(main())


def test_gone_runs_each_callback_once_when_set_and_at_once_when_already_set() -> None:
    gone, calls = Gone(), []
    gone.then(lambda: calls.append("first"))
    gone.then(lambda: calls.append("forgotten"))
    gone.forget(gone._then[-1])
    gone.set()
    gone.set()
    gone.then(lambda: calls.append("late"))
    assert calls == ["first", "late"]
