"""The rules of a Responses stream's event order, each with the reason a client needs it (`REASONS`), and the sets of
them the order checker (`order`) and its users judge by (`ANSWER_RULES`, `ITEM_RULES`, `HEAD_RULES`)."""

from __future__ import annotations

from enum import StrEnum


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
    OPENING_STATE = "response.created, response.queued and response.in_progress carry a response that has not ended"
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
    Rule.OPENING_STATE: "the SDK's snapshot starts from response.created's response, and a client that follows a "
    "background response by its status stops waiting: one already completed, failed, incomplete or cancelled says "
    "the response ended before its output came",
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
