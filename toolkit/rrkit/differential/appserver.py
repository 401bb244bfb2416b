"""Several turns of one Codex session: `codex app-server` (JSON-RPC over stdio), one thread, one `turn/start` each."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..drive.process import exited_unreaped, stop_group
from ..protocol.exceptions import AppServerError
from .codex import _DROPPED_ENV_PREFIXES, API_KEY_ENV, config_toml
from .settings import DEFAULT_BUDGETS, Budgets

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class TurnsRun:
    """How each turn ended (`completed`, `failed`, or `timed out` for a turn that had not ended in time), the
    turns' error messages, and Codex's stderr."""

    outcomes: tuple[str, ...]
    errors: tuple[str, ...]
    stderr: str

    @property
    def timed_out(self) -> bool:
        return "timed out" in self.outcomes


class _Session:
    """One `codex app-server` process: requests, and the notifications read while waiting for an answer."""

    def __init__(self, process: subprocess.Popen[str], deadline: float) -> None:
        self.process = process
        self.deadline = deadline
        self.next_id = 0
        self.lines: queue.Queue[Message | None] = queue.Queue()  # None: the output ended
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.backlog: list[Message] = []  # read while waiting for something else (a turn can end before its answer)

    def _read(self) -> None:
        """Stdout's JSON messages into `lines` (a thread: select() cannot see what the text buffer holds)."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with contextlib.suppress(ValueError):
                message = json.loads(line)
                if isinstance(message, dict):
                    self.lines.put(message)
        self.lines.put(None)

    def send(self, method: str, params: Message | None = None, *, request: bool = True) -> int:
        message: Message = {"method": method, **({"params": params} if params is not None else {})}
        if request:
            self.next_id += 1
            message["id"] = self.next_id
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        return self.next_id

    def read_until(self, done: Callable[[Message], bool]) -> Message | None:
        """Messages until one that is `done` (returned; the backlog first), or None when the deadline passes or
        the output ends; the others go to the backlog."""
        for index, kept in enumerate(self.backlog):
            if done(kept):
                return self.backlog.pop(index)
        while (left := self.deadline - time.monotonic()) > 0:
            try:
                message = self.lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if message is None:
                return None
            if done(message):
                return message
            self.backlog.append(message)
        return None

    def turn(self, thread_id: str, prompt: str) -> Message | None:
        """Start a turn and wait for its `turn/completed`: the turn as it ended, or None (no end in time)."""
        started = self.call("turn/start", {"threadId": thread_id, "input": [{"type": "text", "text": prompt}]})
        turn_id = started.get("turn", {}).get("id")

        def ended(message: Message) -> bool:
            return (
                message.get("method") == "turn/completed"
                and message.get("params", {}).get("turn", {}).get("id") == turn_id
            )

        done = self.read_until(ended)
        return None if done is None else dict(done.get("params", {}).get("turn", {}))

    def call(self, method: str, params: Message) -> Message:
        sent = self.send(method, params)
        answer = self.read_until(lambda message: message.get("id") == sent and "method" not in message)
        if answer is None or "error" in answer:
            raise AppServerError(f"{method}: {answer['error'] if answer else 'no answer in time'}")
        result = answer.get("result")
        return result if isinstance(result, dict) else {}


def run_codex_turns(
    binary: str,
    base_url: str,
    prompts: Sequence[str],
    *,
    websockets: bool,
    budgets: Budgets = DEFAULT_BUDGETS,
    timeout: float = 30.0,
) -> TurnsRun:
    """One thread of `codex app-server` in a fresh empty directory and CODEX_HOME: one turn per prompt, each
    started when the one before has ended, all in one process (so in one model-client session)."""
    with tempfile.TemporaryDirectory(prefix="rrkit-codex-") as temp:
        home, workdir = Path(temp) / "home", Path(temp) / "work"
        home.mkdir()
        workdir.mkdir()
        (home / "config.toml").write_text(config_toml(base_url, websockets=websockets, budgets=budgets))
        env = {name: value for name, value in os.environ.items() if not name.startswith(_DROPPED_ENV_PREFIXES)}
        env.update({"CODEX_HOME": str(home), "HOME": str(home), API_KEY_ENV: "sk-rrkit-test"})
        log_path = Path(temp) / "stderr"
        with log_path.open("w") as log:  # a file, not a pipe: a full pipe would block the app server
            process = subprocess.Popen(
                [binary, "app-server", "--disable", "plugins"],  # plugins: `git ls-remote https://github.com/...`
                cwd=workdir,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                start_new_session=True,
            )
        outcomes: list[str] = []
        errors: list[str] = []
        session = _Session(process, time.monotonic() + timeout)
        try:
            session.call("initialize", {"clientInfo": {"name": "rrkit-differential", "version": "0"}})
            session.send("initialized", request=False)
            thread = session.call(
                "thread/start",
                {"cwd": str(workdir), "sandbox": "read-only", "approvalPolicy": "never", "ephemeral": True},
            )
            thread_id = thread["thread"]["id"]
            for prompt in prompts:
                turn = session.turn(thread_id, prompt)
                if turn is None:
                    outcomes.append("timed out")
                    break
                outcomes.append("completed" if turn.get("status") == "completed" else "failed")
                if turn.get("error"):
                    errors.append(str(turn["error"].get("message", turn["error"])))
        finally:
            with contextlib.suppress(OSError):
                if process.stdin is not None:
                    process.stdin.close()  # the app server exits at the end of its input
            exited_unreaped(process, 5)
            stop_group(process)  # the npm entry point is a node script that runs the native binary as its child
            process.wait()
            session.reader.join(timeout=5)
            if process.stdout is not None:
                process.stdout.close()
            stderr = log_path.read_text(errors="replace")
        return TurnsRun(tuple(outcomes), tuple(errors), stderr)
