"""A streaming client on the official `openai` Python SDK with its default retries (max_retries 2): one turn,
each function call answered with its call_id (OPENAI_BASE_URL and OPENAI_API_KEY come from the environment).
Over HTTP (`responses.stream`), or over the SDK's WebSocket (`responses.connect()`) when RRKIT_TRANSPORT is
`ws`, where a tool output goes back with `previous_response_id`, as the SDK's WebSocket mode is meant for. Asked
for a background response (RRKIT_REQUEST), it streams one and resumes it after the last event it got when the
stream breaks, or (`stream: false`) polls it until it ends. Asked to do more (RRKIT_ACTION), it cancels a
background response, compacts its history between two turns, or keeps two turns in a conversation. A turn's
answer (its text) goes to the file RRKIT_ANSWER names, when it names one."""

import json
import os
import sys
import time

import openai

client = openai.OpenAI(timeout=5.0)  # a stream silent for 5 s raises (the default read timeout is 10 minutes)
TERMINAL = {"response.completed", "response.failed", "response.incomplete", "error"}


def over_http(history, new_items, previous):
    with client.responses.stream(model="gpt-test", input=history) as stream:
        return stream.get_final_response()


def over_ws(connection, history, new_items, previous):
    connection.response.create(model="gpt-test", input=new_items, previous_response_id=previous or openai.omit)
    for event in connection:
        if event.type in TERMINAL:
            if event.type != "response.completed":
                raise RuntimeError(f"{event.type}: {event.model_dump_json(exclude_none=True)[:200]}")
            return event.response
    raise RuntimeError("the socket closed before response.completed")


def said(text):
    """The turn's answer, written where the judge asks for it (RRKIT_ANSWER, when it does)."""
    if os.environ.get("RRKIT_ANSWER"):
        with open(os.environ["RRKIT_ANSWER"], "w", encoding="utf-8") as file:
            file.write(text)


def turn(send, history=None):
    """One turn, each function call answered; the history after it (its input, each output, each tool output)."""
    history = list(history or [{"role": "user", "content": "What is the weather in Paris?"}])
    new, previous = history, None
    while True:
        final = send(history, new, previous)
        outputs = [item.model_dump(exclude_none=True) for item in final.output]
        calls = [item for item in final.output if item.type == "function_call"]
        if not calls:
            said(final.output_text)
            return history + outputs
        new = [{"type": "function_call_output", "call_id": call.call_id, "output": "24 C"} for call in calls]
        history += outputs + new
        previous = final.id


def cancelled():
    """A background response, streamed, cancelled once its first output arrives; its stream is closed. Broken on
    purpose with BROKEN_CANCEL: `none` closes the stream without cancelling, `resume` resumes the stream after
    cancelling, `late` cancels once the stream has ended."""
    broken = os.environ.get("BROKEN_CANCEL", "")
    stream = client.responses.create(model="gpt-test", input="Count to twelve.", background=True, stream=True)
    response_id, last = None, None
    for event in stream:
        response_id = response_id or getattr(getattr(event, "response", None), "id", None)
        last = event.sequence_number
        if event.type == "response.output_text.delta" and broken != "late":
            break
    stream.close()
    if broken == "none":
        return
    try:
        client.responses.cancel(response_id)
    except openai.BadRequestError:
        if broken != "late":
            raise
    if broken == "resume":
        for _ in client.responses.retrieve(response_id, stream=True, starting_after=last):
            pass


def compacting():
    """A turn, its history compacted (`responses.compact`), then a second turn from the compacted history.
    Broken on purpose with BROKEN_COMPACT: `drop` goes on from the history as it was, `keep` sends the compacted
    history and the old one, `alter` changes the compaction item's encrypted_content."""
    broken = os.environ.get("BROKEN_COMPACT", "")
    history = turn(over_http)
    compacted = client.responses.compact(model="gpt-test", input=history)
    items = [item.model_dump(exclude_none=True) for item in compacted.output]
    if broken == "alter":
        items = [
            {**item, "encrypted_content": "x" + item["encrypted_content"]} if item["type"] == "compaction" else item
            for item in items
        ]
    kept = {"drop": history, "keep": items + history}.get(broken, items)
    turn(over_http, [*kept, {"role": "user", "content": "And in Rome?"}])


def in_conversation():
    """Two turns kept in a conversation made for them, each sending only its new message. Broken on purpose with
    BROKEN_CONVERSATION: `history` sends the whole history each turn, `forget` leaves the conversation out of the
    second turn, `two` makes a conversation for each turn, `previous` names the first response beside it."""
    broken = os.environ.get("BROKEN_CONVERSATION", "")
    conversation = client.conversations.create()
    history, final = [], None
    for index, text in enumerate(["What is the weather in Paris?", "And in Rome?"]):
        history.append({"role": "user", "content": text})
        given = history if broken == "history" else history[-1:]
        if index and broken == "two":
            conversation = client.conversations.create()
        named = openai.omit if index and broken == "forget" else conversation.id
        previous = final.id if final and broken == "previous" else openai.omit
        with client.responses.stream(
            model="gpt-test", input=given, conversation=named, previous_response_id=previous
        ) as stream:
            final = stream.get_final_response()
        history += [item.model_dump(exclude_none=True) for item in final.output]


def in_background(history):
    """A background response, streamed; a stream that breaks is resumed after the last event received. Broken
    on purpose with BROKEN_RESUME (tests/conform/test_conform_resume.py): `repost` posts the request again,
    `repeat` resumes one event too early, `skip` one event too late."""
    broken = os.environ.get("BROKEN_RESUME", "")
    response_id, last, final = None, None, None
    stream = client.responses.create(model="gpt-test", input=history, background=True, stream=True)
    for _ in range(3):
        try:
            for event in stream:
                response_id = response_id or getattr(getattr(event, "response", None), "id", None)
                last = event.sequence_number
                if event.type in TERMINAL:
                    final = event
            break
        except Exception:  # the SDK's errors, and its transport's for a cut body (httpx2's, not httpx's)
            if response_id is None or last is None:
                raise
            if broken == "repost":
                stream = client.responses.create(model="gpt-test", input=history, background=True, stream=True)
                continue
            after = last + {"repeat": -1, "skip": 1}.get(broken, 0)
            stream = client.responses.retrieve(response_id, stream=True, starting_after=after)
    if final is None or final.type != "response.completed":
        raise RuntimeError(f"the background response ended with {final and final.type}")
    return final.response


def polled(history):
    """A background response, not streamed: polled every 0.25 s until its status ends. Broken on purpose with
    BROKEN_POLL: `hot` polls with no wait, `past_end` polls once more after it ended, `repost` posts the request
    again instead of polling."""
    broken = os.environ.get("BROKEN_POLL", "")
    response = client.responses.create(model="gpt-test", input=history, background=True)
    extra = 1 if broken == "past_end" else 0
    while response.status in ("queued", "in_progress") or extra:
        if response.status not in ("queued", "in_progress"):
            extra -= 1
        time.sleep(0 if broken == "hot" else 0.25)
        if broken == "repost":
            response = client.responses.create(model="gpt-test", input=history, background=True)
            broken = ""
        else:
            response = client.responses.retrieve(response.id)
    if response.status != "completed":
        raise RuntimeError(f"the background response ended {response.status}")
    return response


try:
    asked = json.loads(os.environ.get("RRKIT_REQUEST") or "{}")
    action = os.environ.get("RRKIT_ACTION")
    if action == "cancel":
        cancelled()
    elif action == "compact":
        compacting()
    elif action == "conversation":
        in_conversation()
    elif asked.get("background") and asked.get("stream") is False:
        polled([{"role": "user", "content": "What is the weather in Paris?"}])
    elif asked.get("background"):
        in_background([{"role": "user", "content": "What is the weather in Paris?"}])
    elif os.environ.get("RRKIT_TRANSPORT") == "ws":
        with client.responses.connect() as connection:
            turn(lambda history, new_items, previous: over_ws(connection, history, new_items, previous))
    else:
        turn(over_http)
except Exception as error:  # the SDK's errors, and the stream's own (no response.completed)
    print(f"{type(error).__name__}: {error}", file=sys.stderr)
    sys.exit(1)
