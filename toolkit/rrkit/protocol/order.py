"""The event-order checker: which rule of a Responses stream, if any, a sequence of events breaks, each rule with
the reason a client needs it (`REASONS`). What it knows of each event family is data (`FAMILIES`, `PARTS`,
`STATUS_FLOWS`, `COUNTED`, `ITEM_EVENTS`, `NEEDS_PART`, `NOT_ITEM_BOUND`): a new family is a row, not a branch.
Frames that are no response event (`events.SIDE_CHANNELS`) are left out of every rule, and what a stream says
twice must agree (`consistency`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from . import consistency as cs
from . import events as ev
from .consistency import PART


class Rule(StrEnum):
    SEQUENCE = "sequence_number starts at 0 and increases by 1"
    CREATED_FIRST = "response.created comes first"
    ONE_RESPONSE_ID = "one stable response.id"
    ONE_TERMINAL = "exactly one terminal event, and it is the last"
    TERMINAL_REQUIRED = "the stream ends with response.completed, response.failed or response.incomplete"
    ITEM_ADDED_FIRST = "an output item is added before events that refer to it"
    ITEM_OPEN = "no event for an output item after its output_item.done"
    OUTPUT_INDEX = "output items are added at output_index 0, 1, 2, ..."
    PART_ADDED_FIRST = "a content part is added before its text deltas"
    DONE_MATCHES_DELTAS = "a done event carries the concatenation of its deltas"
    ITEM_TYPE = "a delta event's type fits its item's type"
    ITEM_ID = "an event's item_id is the id of the item added at its output_index"
    DONE_ITEM_REPEATS = "an output_item.done item holds what its done events gave"
    COMPLETED_OUTPUT = "response.completed lists the done items, in output_index order"
    USAGE = "response.completed states integer usage, total_tokens = input_tokens + output_tokens"
    IN_PROGRESS = "response.in_progress follows response.created, before any output"
    TERMINAL_STATE = "a terminal event's response agrees with it: its status, error and incomplete_details"
    CONTENT_DONE = "streamed content ends with its done event before its part or item is done"
    PART_CLOSED = "a part that is opened is closed once, before its item is done"
    STATUS_ORDER = (
        "a hosted tool call's status events go forward: in_progress, its work, then one end, before it is done"
    )
    INDEX_COUNTS = "an index an item's events count by goes 0, 1, 2, ..."


REASONS: dict[Rule, str] = {
    Rule.SEQUENCE: "a client that resumes a stream (`starting_after`) or drops a repeated event counts on it",
    Rule.CREATED_FIRST: "the SDK's stream builds its snapshot from response.created and raises on any other first "
    "event ('Expected to have received `response.created` before ...')",
    Rule.ONE_RESPONSE_ID: "the SDK raises 'Lifecycle response identity changed.'; a client chaining "
    "previous_response_id would continue a response that does not exist",
    Rule.ONE_TERMINAL: "a client stops reading at the first terminal event: what follows is lost or, if read, "
    "contradicts the outcome it acted on",
    Rule.TERMINAL_REQUIRED: "without one a client cannot tell a finished answer from a cut one (Codex retries "
    "the turn; the SDK's get_final_response raises)",
    Rule.ITEM_ADDED_FIRST: "the SDK raises 'Received a content event for output index N before receiving its "
    "output item'",
    Rule.ITEM_OPEN: "a client has put the done item in its history: a later event changes nothing it keeps, or "
    "changes it after it was acted on",
    Rule.OUTPUT_INDEX: "clients file items by output_index: the SDK raises 'Duplicate response output index'",
    Rule.PART_ADDED_FIRST: "the SDK appends a part on content_part.added and indexes it on each delta: a delta "
    "before it fails (IndexError)",
    Rule.DONE_MATCHES_DELTAS: "a client that shows the deltas and keeps the done text would keep other text "
    "than it showed",
    Rule.ITEM_TYPE: "a client appends a delta to the item at its index by the delta's kind (text to a message, "
    "arguments to a call): on another type it is lost or raises",
    Rule.ITEM_ID: "a client that files deltas by item_id files them under another item",
    Rule.DONE_ITEM_REPEATS: "Codex builds its history from output_item.done items: a done item that lacks what "
    "was streamed keeps other content than the client showed",
    Rule.COMPLETED_OUTPUT: "the SDK raises 'Cannot complete response with unfinished output items.' and takes "
    "response.output as the answer",
    Rule.USAGE: "Codex reads input_tokens, output_tokens and total_tokens to account the turn",
    Rule.IN_PROGRESS: "the service always sends it between response.created and the output; a client that "
    "shows progress or times a turn from it waits for it",
    Rule.TERMINAL_STATE: "a client decides on the terminal event's response (retry, report, continue): a "
    "response.failed without an error, or a status that says otherwise, leaves it nothing true to act on",
    Rule.CONTENT_DONE: "the done event carries the whole content a client keeps (the SDK's text, a call's "
    "arguments): a part or item closed before it leaves the content unfinished",
    Rule.PART_CLOSED: "a client that waits for the part's done event to render or keep it never gets it",
    Rule.STATUS_ORDER: "a client shows a hosted tool's progress from these events: a call that completes before "
    "it starts, never completes, or both completes and fails has no state to show",
    Rule.INDEX_COUNTS: "a client places each partial image by its index: a repeated or skipped index overwrites "
    "or leaves a hole",
}
"""Why a client needs each rule: what the official SDK or Codex does when it is broken, or what a client cannot
know without it."""


ANSWER_RULES = frozenset(
    {
        Rule.SEQUENCE,
        Rule.CREATED_FIRST,
        Rule.ONE_RESPONSE_ID,
        Rule.TERMINAL_REQUIRED,
        Rule.ITEM_ADDED_FIRST,
        Rule.DONE_MATCHES_DELTAS,
        Rule.COMPLETED_OUTPUT,
        Rule.TERMINAL_STATE,
    }
)
"""The rules whose breaking leaves a client no answer it can trust, up to the first terminal event (where a client
stops reading): an event lost, repeated or out of place, another response's events, no end, text kept that was
not shown, output unfinished, a terminal event saying another status. A stream that breaks one is never a turn's
answer (`rrkit explore` holds clients to it); the other rules are about shape a client may read past."""


ITEM_RULES = frozenset(
    {
        Rule.ITEM_ADDED_FIRST,
        Rule.ITEM_OPEN,
        Rule.OUTPUT_INDEX,
        Rule.PART_ADDED_FIRST,
        Rule.DONE_MATCHES_DELTAS,
        Rule.ITEM_TYPE,
        Rule.ITEM_ID,
        Rule.DONE_ITEM_REPEATS,
        Rule.COMPLETED_OUTPUT,
        Rule.CONTENT_DONE,
        Rule.PART_CLOSED,
        Rule.STATUS_ORDER,
        Rule.INDEX_COUNTS,
    }
)
"""The rules about what the events carried: after an event that could not be read (`events.UNPARSABLE`), which
may have been any of them, these are not judged; the stream-wide ones still are (it kept its place in the
numbering)."""


# -- what the checker knows of each event family ----------------------------------------------------------------


class Family(NamedTuple):
    """The streamed content of one kind of output item: its `delta` events, then a `done` event whose `field`
    repeats the joined deltas; `opened_by`, the event that must open the part (at the same part index) first;
    `in_item`, where the item's output_item.done holds the done event's field again (`PART`: the part index)."""

    item_type: str
    delta: str
    done: str
    field: str
    opened_by: str | None = None
    in_item: tuple[str, ...] | None = None


FAMILIES: tuple[Family, ...] = (
    Family("message", ev.TEXT_DELTA, ev.TEXT_DONE, "text", ev.PART_ADDED, ("content", PART, "text")),
    Family("message", ev.REFUSAL_DELTA, ev.REFUSAL_DONE, "refusal", ev.PART_ADDED, ("content", PART, "refusal")),
    Family(
        "reasoning",
        ev.SUMMARY_TEXT_DELTA,
        ev.SUMMARY_TEXT_DONE,
        "text",
        ev.SUMMARY_PART_ADDED,
        ("summary", PART, "text"),
    ),
    Family("reasoning", ev.REASONING_TEXT_DELTA, ev.REASONING_TEXT_DONE, "text"),
    Family("function_call", ev.ARGUMENTS_DELTA, ev.ARGUMENTS_DONE, "arguments", in_item=("arguments",)),
    Family("custom_tool_call", ev.CUSTOM_INPUT_DELTA, ev.CUSTOM_INPUT_DONE, "input", in_item=("input",)),
    Family("code_interpreter_call", ev.CODE_DELTA, ev.CODE_DONE, "code", in_item=("code",)),
    Family("mcp_call", ev.MCP_ARGUMENTS_DELTA, ev.MCP_ARGUMENTS_DONE, "arguments", in_item=("arguments",)),
    Family("shell_call", ev.SHELL_COMMAND_DELTA, ev.SHELL_COMMAND_DONE, "command", ev.SHELL_COMMAND_ADDED),
)
"""Raw reasoning text and shell commands are not held against the done item: a done reasoning item may leave its
raw text out, and where a shell call's done item keeps each command the SDK's types do not say."""


class PartFlow(NamedTuple):
    """A part of an item (a message's content, a reasoning item's summary: its item type is the events',
    `ITEM_EVENTS`) that its own events open and close (`opened_by`, `closed_by`, at the same part index, named by
    `index_field`); `contents`: by the part's type (`part.type` of the opening event), the done event its
    content ends with, which comes before the part is closed."""

    opened_by: str
    closed_by: str
    index_field: str
    contents: dict[str, str]


PARTS: tuple[PartFlow, ...] = (
    PartFlow(ev.PART_ADDED, ev.PART_DONE, "content_index", {"output_text": ev.TEXT_DONE, "refusal": ev.REFUSAL_DONE}),
    PartFlow(ev.SUMMARY_PART_ADDED, ev.SUMMARY_PART_DONE, "summary_index", {"summary_text": ev.SUMMARY_TEXT_DONE}),
)


class StatusFlow(NamedTuple):
    """The status events of a hosted tool call, in the order they go: `opening` once, then any of `working`, then
    exactly one of `ends`, all before the item's output_item.done."""

    item_type: str
    opening: str
    working: tuple[str, ...]
    ends: tuple[str, ...]


STATUS_FLOWS: tuple[StatusFlow, ...] = (
    StatusFlow("web_search_call", ev.WEB_SEARCH_IN_PROGRESS, (ev.WEB_SEARCH_SEARCHING,), (ev.WEB_SEARCH_COMPLETED,)),
    StatusFlow(
        "file_search_call", ev.FILE_SEARCH_IN_PROGRESS, (ev.FILE_SEARCH_SEARCHING,), (ev.FILE_SEARCH_COMPLETED,)
    ),
    StatusFlow(
        "code_interpreter_call",
        ev.CODE_INTERPRETER_IN_PROGRESS,
        (ev.CODE_INTERPRETER_INTERPRETING,),
        (ev.CODE_INTERPRETER_COMPLETED,),
    ),
    StatusFlow(
        "image_generation_call",
        ev.IMAGE_GEN_IN_PROGRESS,
        (ev.IMAGE_GEN_GENERATING, ev.IMAGE_GEN_PARTIAL_IMAGE),
        (ev.IMAGE_GEN_COMPLETED,),
    ),
    StatusFlow("mcp_call", ev.MCP_CALL_IN_PROGRESS, (), (ev.MCP_CALL_COMPLETED, ev.MCP_CALL_FAILED)),
    StatusFlow(
        "mcp_list_tools", ev.MCP_LIST_TOOLS_IN_PROGRESS, (), (ev.MCP_LIST_TOOLS_COMPLETED, ev.MCP_LIST_TOOLS_FAILED)
    ),
)
"""A call whose status events never began (an item added and done bare) is let be; one that began is held to
its flow to the end."""

COUNTED: dict[str, str] = {ev.IMAGE_GEN_PARTIAL_IMAGE: "partial_image_index"}
"""Events that number themselves within their item (by event type: the field), 0, 1, 2, ..."""


ITEM_EVENTS: dict[str, str] = {
    ev.PART_ADDED: "message",
    ev.PART_DONE: "message",
    ev.ANNOTATION_ADDED: "message",
    ev.SUMMARY_PART_ADDED: "reasoning",
    ev.SUMMARY_PART_DONE: "reasoning",
    ev.WEB_SEARCH_IN_PROGRESS: "web_search_call",
    ev.WEB_SEARCH_SEARCHING: "web_search_call",
    ev.WEB_SEARCH_COMPLETED: "web_search_call",
    ev.FILE_SEARCH_IN_PROGRESS: "file_search_call",
    ev.FILE_SEARCH_SEARCHING: "file_search_call",
    ev.FILE_SEARCH_COMPLETED: "file_search_call",
    ev.IMAGE_GEN_IN_PROGRESS: "image_generation_call",
    ev.IMAGE_GEN_GENERATING: "image_generation_call",
    ev.IMAGE_GEN_PARTIAL_IMAGE: "image_generation_call",
    ev.IMAGE_GEN_COMPLETED: "image_generation_call",
    ev.CODE_INTERPRETER_IN_PROGRESS: "code_interpreter_call",
    ev.CODE_INTERPRETER_INTERPRETING: "code_interpreter_call",
    ev.CODE_INTERPRETER_COMPLETED: "code_interpreter_call",
    ev.MCP_CALL_IN_PROGRESS: "mcp_call",
    ev.MCP_CALL_COMPLETED: "mcp_call",
    ev.MCP_CALL_FAILED: "mcp_call",
    ev.MCP_LIST_TOOLS_IN_PROGRESS: "mcp_list_tools",
    ev.MCP_LIST_TOOLS_COMPLETED: "mcp_list_tools",
    ev.MCP_LIST_TOOLS_FAILED: "mcp_list_tools",
    ev.SHELL_COMMAND_ADDED: "shell_call",
    ev.SHELL_OUTPUT_DELTA: "shell_call_output",
    ev.SHELL_OUTPUT_DONE: "shell_call_output",
    ev.COMPACTING: "compaction",
}
"""The other events that belong to an output item of one type (by event type: the item type). The shell output
content events stream a `{stdout, stderr}` object, not text: they are held to their item, not to a join."""

NEEDS_PART: dict[str, str] = {ev.ANNOTATION_ADDED: ev.PART_ADDED}
"""Events other than deltas that come after the event opening their part (by event type: the opening event)."""

NOT_ITEM_BOUND = frozenset(
    {ev.AUDIO_DELTA, ev.AUDIO_DONE, ev.AUDIO_TRANSCRIPT_DELTA, ev.AUDIO_TRANSCRIPT_DONE, ev.ERROR}
)
"""Response events that belong to no output item: never read as referring to one."""

LIFECYCLE = ev.LIFECYCLE_TYPES | {ev.QUEUED}
"""The events that carry the whole response object (its id held to one)."""

_FAMILY_OF_DELTA = {family.delta: family for family in FAMILIES}
_FAMILY_OF_DONE = {family.done: family for family in FAMILIES}
_ITEM_TYPE_OF = {
    **ITEM_EVENTS,
    **{family.delta: family.item_type for family in FAMILIES},
    **{family.done: family.item_type for family in FAMILIES},
}
_OPENERS = frozenset(family.opened_by for family in FAMILIES if family.opened_by is not None)
_OPENED_BY = {**{f.delta: f.opened_by for f in FAMILIES if f.opened_by is not None}, **NEEDS_PART}
_PART_CLOSING = {flow.closed_by: flow for flow in PARTS}
_PART_OPENING = {flow.opened_by: flow for flow in PARTS}
_FLOW_OF = {kind: flow for flow in STATUS_FLOWS for kind in (flow.opening, *flow.working, *flow.ends)}
TERMINAL_STATUS = {ev.COMPLETED: "completed", ev.FAILED: "failed", ev.INCOMPLETE: "incomplete"}
"""The status each terminal event's response holds."""

_STATUS_FLOW_OF_ITEM = {flow.item_type: flow for flow in STATUS_FLOWS}

ITEM_BOUND = frozenset({ev.ITEM_ADDED, ev.ITEM_DONE, *_ITEM_TYPE_OF})
"""Every event type the checker holds to an output item: the item's own added and done events, and its content."""


# -- the checker ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Violation:
    """One rule broken, at the event `index` (side-channel frames left out of the count), with what is wrong."""

    index: int
    rule: Rule
    detail: str

    def __str__(self) -> str:
        return f"event {self.index}: breaks '{self.rule.value}': {self.detail}"


class _Given(NamedTuple):
    """What a done event gave, to be found again in its item's output_item.done."""

    family: Family
    part: Any
    value: Any


@dataclass(slots=True)
class _Item:
    type: object  # as the item states it (any JSON value)
    id: object = None
    done: bool = False
    given: list[_Given] = field(default_factory=list)
    status: str | None = None  # the last status event of its flow (`STATUS_FLOWS`), None before the first
    ended: str | None = None  # the end of its status flow, once one came
    counts: dict[str, int] = field(default_factory=dict)  # by event type (`COUNTED`): how many came


@dataclass(slots=True)
class _Part:
    type: object  # the opening event's `part.type`
    done: set[str] = field(default_factory=set)  # the done events of its content seen
    closed: bool = False


class _Check:
    """One stream's check: what it has opened so far and the rules it broke."""

    def __init__(self, *, complete: bool) -> None:
        self.complete = complete
        self.violations: list[Violation] = []
        self.items: dict[int, _Item] = {}  # by output_index
        self.done_items: dict[int, Any] = {}  # the output_item.done items, by output_index
        self.parts: dict[tuple[str, int, Any], _Part] = {}  # by (opening event type, output_index, part index)
        self.deltas: dict[tuple[str, int, Any], list[str]] = {}  # (delta type, output_index, part index)
        self.response_id: str | None = None
        self.opened = False  # response.created (or the event that came in its place) seen
        self.terminal_at: int | None = None
        self.terminal_kind: object = None
        self.unread = False  # an event that could not be read came: what it carried is unknown
        self.in_progress = False  # response.in_progress seen
        self.output_began = False  # an output item's event seen

    def flag(self, index: int, rule: Rule, detail: str | None) -> None:
        if detail is not None and not (self.unread and rule in ITEM_RULES):
            self.violations.append(Violation(index, rule, detail))

    def event(self, index: int, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == ev.UNPARSABLE:  # it holds its place; its sequence_number and content are unknown
            self.unread = True
            return
        self.stream_rules(index, kind, event)
        self.progress(index, kind)
        _HANDLERS.get(str(kind), _Check.item_event)(self, index, kind, event)

    def progress(self, index: int, kind: object) -> None:
        """response.in_progress comes before the output (a warmup's created + completed has neither)."""
        if kind == ev.IN_PROGRESS:
            if self.output_began:
                self.flag(index, Rule.IN_PROGRESS, "response.in_progress after the output began")
            self.in_progress = True
        elif kind in ITEM_BOUND and not self.output_began:
            self.output_began = True
            if not self.in_progress:
                self.flag(index, Rule.IN_PROGRESS, f"{kind} before response.in_progress")

    def stream_rules(self, index: int, kind: object, event: dict[str, Any]) -> None:
        """The rules every event is held to, whatever its family."""
        sequence = event.get("sequence_number")
        if sequence != index:
            self.flag(index, Rule.SEQUENCE, f"expected sequence_number {index}, got {sequence!r}")
        self.opening(index, kind)
        if self.terminal_at is not None and not self.failure_after_error(index, kind):
            self.flag(index, Rule.ONE_TERMINAL, f"{kind!r} after the terminal event at {self.terminal_at}")
        elif kind in ev.ENDING_TYPES:
            self.terminal_at, self.terminal_kind = index, kind

    def failure_after_error(self, index: int, kind: object) -> bool:
        """An `error` event directly followed by the response.failed it announces: one ending told twice, as some
        gateways end a failed stream (a client stops at either)."""
        after = self.terminal_at is not None and index == self.terminal_at + 1
        return after and self.terminal_kind == ev.ERROR and kind == ev.FAILED

    def opening(self, index: int, kind: object) -> None:
        """response.created opens the stream; only response.queued may come before it."""
        if self.opened or kind == ev.QUEUED:
            return
        self.opened = True
        if kind != ev.CREATED:
            first = "first event" if index == 0 else "first event after response.queued"
            self.flag(index, Rule.CREATED_FIRST, f"{first} is {kind!r}")

    def lifecycle(self, index: int, kind: object, event: dict[str, Any]) -> None:
        response = event.get("response")
        response = response if isinstance(response, dict) else {}
        rid = response.get("id")
        if self.response_id is None:
            self.response_id = rid
        elif rid != self.response_id:
            self.flag(index, Rule.ONE_RESPONSE_ID, f"response.id {rid!r} after {self.response_id!r}")
        if (status := TERMINAL_STATUS.get(str(kind))) is not None:
            self.flag(index, Rule.TERMINAL_STATE, cs.terminal_problem(str(kind), status, response))
        if kind == ev.COMPLETED:
            self.completed(index, response)

    def completed(self, index: int, response: dict[str, Any]) -> None:
        """What response.completed says again: the done items (a complete stream's; a null output the client
        recovers from the done items, as the SDK does) and the usage."""
        output = response.get("output")
        if self.complete and output is not None:
            done = [self.done_items[at] for at in sorted(self.done_items)]
            self.flag(index, Rule.COMPLETED_OUTPUT, cs.output_problem(output, done))
        self.flag(index, Rule.USAGE, cs.usage_problem(response))

    def item_added(self, index: int, kind: object, event: dict[str, Any]) -> None:
        output_index = event.get("output_index")
        if output_index != len(self.items):
            expected = len(self.items)
            self.flag(index, Rule.OUTPUT_INDEX, f"item added at output_index {output_index}, expected {expected}")
        item = event.get("item")
        item = item if isinstance(item, dict) else {}
        self.items[output_index if isinstance(output_index, int) else len(self.items)] = _Item(
            item.get("type"), item.get("id")
        )

    def item_event(self, index: int, kind: object, event: dict[str, Any]) -> None:
        """An event that refers to an output item by its `output_index` (an event that names none is let be)."""
        output_index = event.get("output_index")
        if not isinstance(output_index, int):
            return
        if kind == ev.ITEM_DONE:
            self.done_items[output_index] = event.get("item")  # what a client puts in its history, added or not
        item = self.items.get(output_index)
        if item is None:
            self.flag(index, Rule.ITEM_ADDED_FIRST, f"{kind} refers to output_index {output_index}, never added")
            if (family := _FAMILY_OF_DELTA.get(str(kind))) is not None:
                self.keep_delta(family, event, output_index)  # still a piece of what its done event joins
            elif (family := _FAMILY_OF_DONE.get(str(kind))) is not None:  # what it joins is not judged: the item
                self.deltas.pop((family.delta, output_index, cs.part_index(event)), None)  # may predate a resume
            return
        if item.done:
            self.flag(index, Rule.ITEM_OPEN, f"{kind} for output_index {output_index} after its output_item.done")
        self.flag(index, Rule.ITEM_ID, cs.item_id_problem(kind, event, item.id))
        if kind == ev.ITEM_DONE:
            self.item_done(index, event, item)
        else:
            self.content(index, str(kind), event, output_index, item)

    def item_done(self, index: int, event: dict[str, Any], item: _Item) -> None:
        item.done = True
        output_index = event.get("output_index")
        for (opener, at, part), state in self.parts.items():
            flow = _PART_OPENING.get(opener)
            if flow is not None and at == output_index and not state.closed:
                where = f"{flow.index_field} {part}"
                self.flag(
                    index, Rule.PART_CLOSED, f"output_item.done with the part at {where} not closed ({flow.closed_by})"
                )
        for key in [key for key in self.deltas if key[1] == output_index]:
            delta = key[0]
            self.flag(
                index, Rule.CONTENT_DONE, f"output_item.done after {delta} without {_FAMILY_OF_DELTA[delta].done}"
            )
            del self.deltas[key]
        status_flow = _STATUS_FLOW_OF_ITEM.get(str(item.type))
        if status_flow is not None and item.status is not None and item.ended is None:
            self.flag(index, Rule.STATUS_ORDER, f"output_item.done before {' or '.join(status_flow.ends)}")
        done = event.get("item")
        for given in item.given:
            family = given.family
            path = family.in_item or ()
            problem = cs.repeat_problem(family.done, family.field, path, given.part, given.value, done)
            self.flag(index, Rule.DONE_ITEM_REPEATS, problem)

    def content(self, index: int, kind: str, event: dict[str, Any], output_index: int, item: _Item) -> None:
        expected_type = _ITEM_TYPE_OF.get(kind)
        if expected_type is not None and item.type != expected_type:
            self.flag(index, Rule.ITEM_TYPE, f"{kind} on a {item.type!r} item")
        part = cs.part_index(event)
        if kind in _OPENERS:
            opened_part = event.get("part")
            self.parts[(kind, output_index, part)] = _Part(
                opened_part.get("type") if isinstance(opened_part, dict) else None
            )
        opener = _OPENED_BY.get(kind)
        if opener is not None and (opener, output_index, part) not in self.parts:
            opened = opener.removeprefix("response.")
            self.flag(index, Rule.PART_ADDED_FIRST, f"{kind} at {cs.part_named(event)} before {opened}")
        if (family := _FAMILY_OF_DELTA.get(kind)) is not None:
            self.keep_delta(family, event, output_index)
        elif (family := _FAMILY_OF_DONE.get(kind)) is not None:
            self.done_event(index, family, event, output_index, part, item)
            if family.opened_by is not None and (state := self.parts.get((family.opened_by, output_index, part))):
                state.done.add(kind)
        elif (closing := _PART_CLOSING.get(kind)) is not None:
            self.part_closed(index, kind, event, closing, output_index, part)
        if (flow := _FLOW_OF.get(kind)) is not None:
            self.flag(index, Rule.STATUS_ORDER, self.status(kind, flow, item))
        if (counted := COUNTED.get(kind)) is not None:
            expected = item.counts.get(kind, 0)
            item.counts[kind] = expected + 1
            if event.get(counted) != expected:
                self.flag(
                    index, Rule.INDEX_COUNTS, f"{kind} with {counted} {event.get(counted)!r}, expected {expected}"
                )

    def part_closed(
        self, index: int, kind: str, event: dict[str, Any], flow: PartFlow, output_index: int, part: Any
    ) -> None:
        """A part's closing event: after its opening one, once, and after the done event of its content."""
        state = self.parts.get((flow.opened_by, output_index, part))
        where = cs.part_named(event)
        if state is None:
            opened = flow.opened_by.removeprefix("response.")
            self.flag(index, Rule.PART_ADDED_FIRST, f"{kind} at {where} before {opened}")
            return
        if state.closed:
            self.flag(index, Rule.PART_CLOSED, f"{kind} at {where} again")
            return
        state.closed = True
        required = flow.contents.get(str(state.type))
        pending = [
            key
            for key in self.deltas
            if key[1:] == (output_index, part) and _FAMILY_OF_DELTA[key[0]].opened_by == flow.opened_by
        ]
        if required is not None and required not in state.done:
            self.flag(index, Rule.CONTENT_DONE, f"{kind} at {where} before {required}")
        elif pending:
            self.flag(index, Rule.CONTENT_DONE, f"{kind} at {where} before {_FAMILY_OF_DELTA[pending[0][0]].done}")
        for key in pending:
            del self.deltas[key]

    @staticmethod
    def status(kind: str, flow: StatusFlow, item: _Item) -> str | None:
        """A hosted tool call's status event out of its flow, if it is (the flow moves on either way)."""
        before, ended = item.status, item.ended
        item.status = kind
        if kind in flow.ends:
            item.ended = item.ended or kind
        if ended is not None:
            return f"{kind} after {ended}"
        if kind == flow.opening and before is not None:
            return f"{kind} again, after {before}"
        if kind != flow.opening and before is None:
            return f"{kind} before {flow.opening}"
        return None

    def keep_delta(self, family: Family, event: dict[str, Any], output_index: int) -> None:
        """A piece of what the family's done event (at the same output and part index) must join to."""
        pieces = self.deltas.setdefault((family.delta, output_index, cs.part_index(event)), [])
        pieces.append(str(event.get("delta", "")))

    def done_event(
        self, index: int, family: Family, event: dict[str, Any], output_index: int, part: Any, item: _Item
    ) -> None:
        value = event.get(family.field)
        seen = self.deltas.pop((family.delta, output_index, part), None)
        if seen is not None and "".join(seen) != value:
            self.flag(index, Rule.DONE_MATCHES_DELTAS, f"{family.done}.{family.field} differs from the joined deltas")
        if family.in_item is not None:
            item.given.append(_Given(family, part, value))


def _not_item_bound(check: _Check, index: int, kind: object, event: dict[str, Any]) -> None:
    """An event of the response as a whole (audio, the flat error): no item rule applies."""


_Handler = Callable[[_Check, int, object, dict[str, Any]], None]
_HANDLERS: dict[str, _Handler] = {
    **{kind: _Check.lifecycle for kind in LIFECYCLE},
    **{kind: _not_item_bound for kind in NOT_ITEM_BOUND},
    ev.ITEM_ADDED: _Check.item_added,
}
"""How an event is checked beyond the stream-wide rules, by its type (any other: as an output item's event)."""


HEAD_RULES = frozenset(
    {
        Rule.SEQUENCE,
        Rule.CREATED_FIRST,
        Rule.IN_PROGRESS,
        Rule.ITEM_ADDED_FIRST,
        Rule.OUTPUT_INDEX,
        Rule.PART_ADDED_FIRST,
        Rule.STATUS_ORDER,
        Rule.INDEX_COUNTS,
    }
)
"""What only a stream seen from its first event can be held to: numbering from 0, response.created then
response.in_progress first, items and parts opened before their events and items added at 0, 1, 2, statuses and
indexes counted from their start (a resumed stream's items may have been added before the point it resumes at).
`Rule.COMPLETED_OUTPUT` needs them too, and is left to complete streams."""


def check_order(
    events: Iterable[dict[str, Any]], *, complete: bool = True, starting_after: int | None = None
) -> list[Violation]:
    """Every rule the stream breaks, in stream order, side-channel frames left out (`events.SIDE_CHANNELS`).
    `complete=False` checks a prefix (no terminal needed, response.output not held to the done items).
    `starting_after=N`: a resumed stream (`GET /responses/{id}?stream=true&starting_after=N`), held to the rules its
    tail can be (not `HEAD_RULES`) and numbered on from N + 1, with no gap and no repeat."""
    check = _Check(complete=complete)
    index = -1
    response_events = [event for event in events if event.get("type") not in ev.SIDE_CHANNELS]
    for index, event in enumerate(response_events):
        check.event(index, event)
    if complete and check.terminal_at is None:
        check.flag(max(index, 0), Rule.TERMINAL_REQUIRED, "no terminal event")
    if starting_after is None:
        return check.violations
    kept = [violation for violation in check.violations if violation.rule not in HEAD_RULES]
    start = starting_after + 1
    for place, event in enumerate(response_events):
        if event.get("type") == ev.UNPARSABLE:  # it holds its place; its number is unknown
            continue
        number = event.get("sequence_number")
        if number != start + place:
            detail = f"expected sequence_number {start + place} (resumed after {starting_after}), got {number!r}"
            kept.append(Violation(place, Rule.SEQUENCE, detail))
    return sorted(kept, key=lambda violation: violation.index)


def answer_breaks(events: Iterable[dict[str, Any]], *, starting_after: int | None = None) -> Violation | None:
    """The first rule of `ANSWER_RULES` a stream read up to its first terminal event breaks (None: none does): what
    makes a stream no answer a client can trust. `starting_after=N`: a resumed stream's tail (see `check_order`)."""
    violations = check_order(events, starting_after=starting_after)
    return next((violation for violation in violations if violation.rule in ANSWER_RULES), None)
