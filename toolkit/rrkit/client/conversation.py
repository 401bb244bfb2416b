"""A conversation's history and the `run_turn` driver: sample, run tool calls, sample again until answered; a
remote compaction of the history."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..protocol.calls import CallResult, answer_to
from ..protocol.exceptions import NotAnAnswer, TooManySamples
from ..protocol.outcome import OutcomeKind
from ..protocol.request import (
    COMPACTION_ITEM,
    Item,
    compacted_history,
    compaction_trigger,
    message_text,
)
from .client import ModelClient
from .errors import CompactionFailed, UnanswerableCall
from .prompt import Prompt, user_message
from .turn import DeltaCallback, SampleResult, Turn

ToolHandler = Callable[[Item], Awaitable[CallResult] | CallResult]
"""Runs one call the client must run (protocol.calls.CLIENT_CALLS) and returns its result: the answer item's own
fields, or a plain value its kind carries (output text; True/False for an MCP approval; the tools a client tool
search found)."""


def tool_output(call: Item, result: CallResult) -> Item:
    """The item that answers a call, for the next sampling of the same turn (UnanswerableCall, a ModelClientError,
    naming the call's kind when `result` cannot answer it)."""
    try:
        return answer_to(call, result)
    except NotAnAnswer as error:
        raise UnanswerableCall(str(error), outcome=OutcomeKind.COMPLETED) from None


@dataclass
class TurnResult:
    samples: list[SampleResult] = field(default_factory=list)

    @property
    def items(self) -> list[Item]:
        return [item for sample in self.samples for item in sample.items]

    @property
    def text(self) -> str:
        """The assistant's final message text."""
        messages = [item for item in self.items if item.get("type") == "message" and item.get("role") == "assistant"]
        return message_text(messages[-1]) if messages else ""


class Conversation:
    """The session's history and prompt settings; each `run_turn` appends to the history.

    With `conversation_id`, the history is kept in that conversation on the server (`POST /conversations`): each
    request names it and sends only the items the conversation does not hold yet (never `previous_response_id`,
    which the API refuses beside a conversation)."""

    def __init__(self, client: ModelClient, prompt: Prompt, *, conversation_id: str | None = None) -> None:
        self.client = client
        overrides = {**prompt.overrides, "conversation": conversation_id} if conversation_id else prompt.overrides
        self.base = replace(prompt.with_history(()), overrides=overrides)
        self.history: list[Item] = list(prompt.history)
        self.conversation_id = conversation_id
        self._held = 0  # how much of `history` the server's conversation holds
        self.turn: Turn | None = None
        """The turn `run_turn` runs (the last one, once it ended): `turn.steer(...)` steers its response."""

    def prompt(self) -> Prompt:
        """The prompt rebuilt from the latest history."""
        return self.base.with_history(self.history)

    async def warmup(self, *, timeout: float | None = None) -> str | None:
        """Best effort warmup with the base context (the history so far, possibly empty)."""
        return await self.client.warmup(self.prompt(), timeout=timeout)

    async def compact(self, *, on_delta: DeltaCallback | None = None) -> Item:
        """A remote compaction as the Codex CLI makes one (0.169.0 and 0.171.0, with a provider whose
        `capabilities.remote_compaction = "v2"`; docs/protocol.md, "Every route"): the history with a
        `compaction_trigger` item after it, sent as a create; the answer must be exactly one `compaction` item
        (else CompactionFailed, the history unchanged); the history becomes its developer and user messages,
        then that item. Returns the item."""
        prompt = self.base.with_history([*self.history, compaction_trigger()])
        async with self.client.turn() as turn:
            sample = await turn.sample(prompt, history=[], on_delta=on_delta)
        kinds = [str(item.get("type")) for item in sample.items]
        if kinds != [COMPACTION_ITEM]:
            raise CompactionFailed(
                f"a compaction answers with exactly one compaction item, got {kinds or 'no item'}",
                outcome=OutcomeKind.COMPLETED,
            )
        self.history = compacted_history(self.history, sample.items[0])
        return sample.items[0]

    async def run_turn(
        self,
        user_input: str | Item | Sequence[Item] | None,
        tool_handler: ToolHandler | None = None,
        *,
        on_delta: DeltaCallback | None = None,
        max_samples: int = 32,
    ) -> TurnResult:
        """One turn: add the user input, sample; answer each tool call and sample again, until the model ends.

        Without a `tool_handler`, a sampling that asks for tool calls ends the turn: the calls are in the
        result (and the history) for the caller to execute before the next `run_turn(None, ...)`.
        """
        self.history.extend(_user_items(user_input))
        result = TurnResult()
        async with self.client.turn() as turn:
            self.turn = turn
            while True:
                if len(result.samples) >= max_samples:
                    raise TooManySamples(f"the turn did not end within {max_samples} samplings")
                sample = await self._sample(turn, on_delta)
                result.samples.append(sample)
                calls = sample.tool_calls
                if calls and tool_handler is not None:
                    for call in calls:
                        self.history.append(tool_output(call, await _run_tool(tool_handler, call)))
                    continue
                if calls or sample.end_turn is not False:
                    return result

    async def _sample(self, turn: Turn, on_delta: DeltaCallback | None) -> SampleResult:
        """One sampling of the history; in a server conversation, of what it does not hold yet, which it holds
        once the response completes (with the response's output)."""
        if self.conversation_id is None:
            return await turn.sample(self.prompt(), history=self.history, on_delta=on_delta)
        unsent = self.history[self._held :]
        sample = await turn.sample(self.base.with_history(unsent), history=unsent, on_delta=on_delta)
        self.history[self._held :] = unsent
        self._held = len(self.history)
        return sample


async def _run_tool(handler: ToolHandler, call: Item) -> CallResult:
    output: Any = handler(call)
    if inspect.isawaitable(output):
        output = await output
    return output  # type: ignore[no-any-return]


def _user_items(user_input: str | Item | Sequence[Item] | None) -> list[Item]:
    if user_input is None:
        return []
    if isinstance(user_input, str):
        return [user_message(user_input)]
    if isinstance(user_input, dict):
        return [user_input]
    return list(user_input)
