"""The client under test, one interface for every judge (`rrkit conform`, `rrkit replay`, the differential suite):
rrkit's reference client, any command, or a Python callable, each run once per assignment against a server."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from .process import run_process

if TYPE_CHECKING:
    from ..client import ModelClient


ANSWER_ENV = "RRKIT_ANSWER"
"""A file a client may write its turn's answer to (the response's text, UTF-8): the judges that know the answer
(`rrkit explore`, a script's `expect.text` in `rrkit conform --scenario`) judge the text too."""


@contextmanager
def answer_file() -> Iterator[Path]:
    """A path for a client's answer ($RRKIT_ANSWER), in a folder of its own removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="rrkit-answer-") as folder:
        yield Path(folder) / "answer.txt"


def written_answer(path: Path) -> str | None:
    """The answer a client wrote (None: it wrote none)."""
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else None


@dataclass(frozen=True)
class ServerURLs:
    http_url: str
    ws_url: str

    def environment(self) -> dict[str, str]:
        """What a client is told of the server (docs/guide/cassette-checks.md)."""
        return {
            "RRKIT_HTTP_URL": self.http_url,
            "RRKIT_WS_URL": self.ws_url,
            "OPENAI_BASE_URL": self.http_url,
            "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "sk-rrkit-replay"),
        }


@dataclass(frozen=True)
class ClientEnd:
    """How the client said its run ended: `completed`, `failed` or `timed out`, with a line of detail, and what it
    said went wrong, line by line (the errors a differential run compares)."""

    outcome: str
    detail: str = ""
    errors: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.outcome == "completed"


@dataclass(frozen=True)
class Assignment:
    """One run of the client under test: the server it runs against, what a command is told beyond the server's
    URLs (RRKIT_SCENARIO, RRKIT_TRANSPORT, ...), and what rrkit's reference client does (the judge's own turn)."""

    urls: ServerURLs
    environment: Mapping[str, str] = field(default_factory=dict)
    reference: Callable[[ReferenceClient], Awaitable[ClientEnd]] | None = None
    name: str = "client"  # what the run is called (a scenario, a cassette)

    def command_environment(self) -> dict[str, str]:
        return {**self.urls.environment(), **self.environment}


class ClientUnderTest(Protocol):
    """The client a judge runs: once per assignment, within `timeout` seconds."""

    def describe(self) -> str: ...

    async def run(self, assignment: Assignment, timeout: float) -> ClientEnd: ...


@dataclass(frozen=True)
class ReferenceClient:
    """rrkit's reference client, doing what the assignment's judge asks (a prewarmed conformance turn, a
    cassette's session); `warmup` False leaves out the warmup a session would send, `model_client` swaps in a
    variant of the model layer (tests do), `strict_streams` makes it stricter than Codex (it refuses every stream
    that breaks an answer rule: `ClientOptions.strict_streams`)."""

    warmup: bool = True
    model_client: type[ModelClient] | None = None  # None: rrkit.client.ModelClient
    strict_streams: bool = False

    def describe(self) -> str:
        return "the reference client" + (" (strict streams)" if self.strict_streams else "")

    async def run(self, assignment: Assignment, timeout: float) -> ClientEnd:
        if assignment.reference is None:
            raise TypeError(f"{assignment.name}: this judge gives the reference client nothing to do")
        try:
            return await asyncio.wait_for(assignment.reference(self), timeout)
        except TimeoutError:
            return ClientEnd("timed out", f"the turn did not end within {timeout:g} s")


@dataclass(frozen=True)
class CommandClient:
    """Any program, run with the server's URLs in its environment (OPENAI_BASE_URL, RRKIT_HTTP_URL, RRKIT_WS_URL)
    and what the judge tells it (RRKIT_SCENARIO, RRKIT_TRANSPORT, ...); exit status 0 says its run completed.
    Everything it starts is stopped with it."""

    argv: Sequence[str]
    cwd: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    """More environment for the command (beside this process's own and the judge's)."""

    def describe(self) -> str:
        return " ".join(self.argv)

    async def run(self, assignment: Assignment, timeout: float) -> ClientEnd:
        env = {**os.environ, **self.env, **assignment.command_environment()}
        end = await asyncio.to_thread(run_process, self.argv, env=env, cwd=self.cwd, timeout=timeout)
        if end.missing:
            return ClientEnd("failed", f"no such command: {self.argv[0]!r} ({end.stderr})")
        if end.timed_out:
            return ClientEnd("timed out", f"the command did not finish within {timeout:g} s")
        tail = end.tail()
        detail = f"exit status {end.returncode}" + (f": {tail}" if tail else "")
        return ClientEnd("completed" if end.returncode == 0 else "failed", detail)


@dataclass(frozen=True)
class FunctionClient:
    """A Python callable as the client: called with the environment a command would get (a dict: OPENAI_BASE_URL,
    RRKIT_WS_URL, RRKIT_TRANSPORT, ...); returning (anything but False) says its run completed, raising or
    returning False that it failed. It runs in a thread of its own, which is left behind when it outlasts the
    timeout (Python cannot stop a thread)."""

    function: Callable[[dict[str, str]], object]

    def describe(self) -> str:
        return getattr(self.function, "__qualname__", repr(self.function))

    async def run(self, assignment: Assignment, timeout: float) -> ClientEnd:
        pool = ThreadPoolExecutor(1, thread_name_prefix=f"rrkit-client-{assignment.name}")
        future = pool.submit(self.function, assignment.command_environment())
        pool.shutdown(wait=False)
        try:
            returned = await asyncio.to_thread(future.result, timeout)  # no callback left on a loop that ends
        except FutureTimeout:
            return ClientEnd("timed out", f"the function did not return within {timeout:g} s")
        except Exception as error:  # the client's own failure: its report of the run
            return ClientEnd("failed", f"{type(error).__name__}: {error}")
        return ClientEnd("failed", "the function returned False") if returned is False else ClientEnd("completed")


def as_client(client: ClientUnderTest | Sequence[str] | Callable[[dict[str, str]], object] | None) -> ClientUnderTest:
    """The client a judge runs: None is the reference client, a list of strings a command, a plain callable a
    FunctionClient, and an object with `describe()` and `run(...)` itself."""
    if client is None:
        return ReferenceClient()
    if isinstance(client, (list, tuple)):
        if not client or not all(isinstance(part, str) for part in client):
            raise TypeError(f"a client command is a non-empty list of strings, not {client!r}")
        return CommandClient(list(client))
    if hasattr(client, "describe") and hasattr(client, "run"):
        return cast(ClientUnderTest, client)
    if callable(client):
        return FunctionClient(client)
    raise TypeError(f"not a client: {client!r} (give a command list, a callable, or a ClientUnderTest)")
