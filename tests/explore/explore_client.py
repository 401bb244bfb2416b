"""A minimal correct Responses client over HTTP SSE (httpx alone) for `rrkit explore` to judge, and five deliberately
broken ones (`BROKEN` in its environment): `utf8-split` (each chunk of bytes decoded on its own: a character split
across reads is lost), `trust-first-completed` (response.completed is the answer, whatever came before it),
`crash-unknown-event` (an event type it does not know raises), `early-end-is-answer` (a stream that ends without a
terminal event is answered with the text so far), `ignore-seq-gaps` (sequence_number is not checked).

The correct client reads to the first terminal event and holds the stream to what makes it an answer: numbered
0, 1, 2, ...; response.created first; one response id; items added before their events; every done text (a
message's, a reasoning item's, a tool call's) equal to all its part's deltas (none: the empty text); every item done,
and listed, at response.completed (which, stating no output, has its done items as the output); a terminal event
that agrees with its status. It writes its answer to $RRKIT_ANSWER. Run as a command, or call `main(environment)`."""

from __future__ import annotations

import codecs
import json
import os
import re
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import httpx

TERMINALS = ("response.completed", "response.failed", "response.incomplete")
DONE_FIELDS = {
    "response.output_text.done": "text",
    "response.refusal.done": "refusal",
    "response.reasoning_summary_text.done": "text",
    "response.reasoning_text.done": "text",
    "response.function_call_arguments.done": "arguments",
    "response.custom_tool_call_input.done": "input",
    "response.code_interpreter_call_code.done": "code",
    "response.mcp_call_arguments.done": "arguments",
    "response.shell_call_command.done": "command",
}
"""The done events that repeat their deltas (`X.delta` joined), and the field that holds them."""
PART_FIELDS = ("content_index", "summary_index", "command_index")
TEXT = "response.output_text"
_LINE_END = re.compile(r"\r\n|\r|\n")


class StreamError(Exception):
    """The stream is no answer."""


def lines(chunks: Iterator[bytes], broken: str) -> Iterator[str]:
    """The body's lines, whatever the line endings and wherever the chunks split it."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    pending = ""
    for chunk in chunks:
        text = chunk.decode("utf-8", errors="replace") if broken == "utf8-split" else decoder.decode(chunk)
        pending += text
        while True:
            found = _LINE_END.search(pending)
            if found is None or (found.group() == "\r" and found.end() == len(pending)):
                break  # a CR at the end may be the start of CRLF
            yield pending[: found.start()]
            pending = pending[found.end() :]
    pending += decoder.decode(b"", final=True) if broken != "utf8-split" else ""
    *ended, rest = _LINE_END.split(pending)  # at the end, a CR held back ends its line
    yield from ended
    if rest:
        yield rest


def events(chunks: Iterator[bytes], broken: str) -> Iterator[dict[str, Any]]:
    data: list[str] = []
    for line in lines(chunks, broken):
        if line == "":
            if data:
                try:
                    yield json.loads("\n".join(data))
                except ValueError as error:
                    raise StreamError(f"an event that is not JSON: {error}") from None
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        raise StreamError("the stream ended inside an event")


class Answer:
    """The stream read so far, held to the rules that make it an answer."""

    def __init__(self, broken: str) -> None:
        self.broken = broken
        self.next_number = 0
        self.response_id: str | None = None
        self.items: dict[int, dict[str, Any]] = {}

    def take(self, event: dict[str, Any]) -> str | None:
        """The answer when `event` ends the stream with one; StreamError when the stream is no answer."""
        kind = event.get("type")
        if self.broken != "ignore-seq-gaps" and event.get("sequence_number") != self.next_number:
            raise StreamError(f"sequence_number {event.get('sequence_number')!r}, expected {self.next_number}")
        self.next_number += 1
        response = event.get("response")
        if self.response_id is None:
            if kind != "response.created":
                raise StreamError(f"{kind} before response.created")
            self.response_id = response["id"]
        elif isinstance(response, dict) and response.get("id") != self.response_id:
            raise StreamError("another response's event")
        handler = HANDLERS[kind] if self.broken == "crash-unknown-event" else HANDLERS.get(kind, Answer.other)
        return handler(self, event)

    def ignored(self, event: dict[str, Any]) -> None:
        return None

    def other(self, event: dict[str, Any]) -> None:
        """Any other event of an item (a delta, a done, a hosted tool's progress): its item is open; deltas joined
        per part, each done compared with all of its part's deltas (none: the empty text)."""
        if not isinstance(event.get("output_index"), int):
            return  # an event of the response as a whole, or one this client does not know: ignored
        texts = self.item(event)["text"]
        kind = str(event["type"])
        part = next((event[field] for field in PART_FIELDS if field in event), 0)
        if kind.endswith(".delta"):
            key = (kind.removesuffix(".delta"), part)
            texts[key] = texts.get(key, "") + str(event.get("delta", ""))
        elif kind in DONE_FIELDS and texts.get((kind.removesuffix(".done"), part), "") != event.get(DONE_FIELDS[kind]):
            raise StreamError(f"{kind} differs from its deltas")

    def added(self, event: dict[str, Any]) -> None:
        self.items[event["output_index"]] = {"item": event["item"], "text": {}, "done": False}

    def item(self, event: dict[str, Any]) -> dict[str, Any]:
        found = self.items.get(event.get("output_index"))
        if found is None or found["done"]:
            raise StreamError(f"{event['type']} for an item not open")
        return found

    def part(self, event: dict[str, Any]) -> None:
        self.item(event)

    def item_done(self, event: dict[str, Any]) -> None:
        found = self.item(event)
        found["done"], found["item"] = True, event["item"]

    def completed(self, event: dict[str, Any]) -> str:
        response = event["response"]
        if response.get("output") is None:  # none stated: the done items are the output
            done_items = [entry["item"] for _, entry in sorted(self.items.items()) if entry["done"]]
            response = {**response, "output": done_items}
        if response.get("status") != "completed":
            raise StreamError(f"response.completed with status {response.get('status')!r}")
        if self.broken != "trust-first-completed":
            done = [entry["item"].get("id") for _, entry in sorted(self.items.items()) if entry["done"]]
            if any(not entry["done"] for entry in self.items.values()):
                raise StreamError("response.completed with output unfinished")
            if [item.get("id") for item in response.get("output", [])] != done:
                raise StreamError("response.completed lists other output than was streamed")
            for index, item in enumerate(response.get("output", [])):
                streamed = self.items[sorted(self.items)[index]]["text"]
                told = {
                    (TEXT, i): part.get("text") for i, part in enumerate(item.get("content") or []) if "text" in part
                }
                if any(key in streamed and streamed[key] != text for key, text in told.items()):
                    raise StreamError("response.completed tells another text than was streamed")
        return "".join(
            part.get("text", "")
            for item in response.get("output", [])
            if item.get("type") == "message"
            for part in item.get("content", [])
            if part.get("type") == "output_text"
        )

    def failed(self, event: dict[str, Any]) -> None:
        raise StreamError(f"response.failed: {event['response'].get('error')}")

    def partial(self) -> str:
        return "".join(
            text for entry in self.items.values() for (kind, _), text in entry["text"].items() if kind == TEXT
        )


HANDLERS = {
    "response.created": Answer.ignored,
    "response.in_progress": Answer.ignored,
    "response.output_item.added": Answer.added,
    "response.content_part.added": Answer.part,
    "response.content_part.done": Answer.part,
    "response.output_item.done": Answer.item_done,
    "response.completed": Answer.completed,
    "response.failed": Answer.failed,
    "response.incomplete": Answer.failed,
}


def turn(env: Mapping[str, str]) -> str:
    """One turn's answer; StreamError (or httpx's error) when there is none."""
    broken = env.get("BROKEN", "")
    body = {"model": "gpt-test", "input": "say hi", "stream": True}
    timeout = httpx.Timeout(30, read=1.0)  # a stream silent for 1 s is given up on (a pause lasts 0.2 s at most)
    with (
        httpx.Client(base_url=env["OPENAI_BASE_URL"], timeout=timeout, trust_env=False) as client,
        client.stream("POST", "/responses", json=body) as response,
    ):
        if response.status_code != 200:
            raise StreamError(f"HTTP {response.status_code}")
        answer = Answer(broken)
        try:
            for event in events(response.iter_bytes(), broken):
                text = answer.take(event)
                if text is not None:
                    return text
        except httpx.TransportError:
            if broken != "early-end-is-answer":
                raise
        if broken == "early-end-is-answer":
            return answer.partial()
        raise StreamError("the stream ended without a terminal event")


def main(env: Mapping[str, str] = os.environ) -> int:
    try:
        text = turn(env)
    except (StreamError, httpx.HTTPError) as error:
        print(f"no answer: {error}", file=sys.stderr)
        return 1
    if env.get("RRKIT_ANSWER"):
        with open(env["RRKIT_ANSWER"], "w", encoding="utf-8") as file:
            file.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
