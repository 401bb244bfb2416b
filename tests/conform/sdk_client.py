"""A streaming client on the official `openai` Python SDK with its default retries (max_retries 2): one turn,
each function call answered with its call_id (OPENAI_BASE_URL and OPENAI_API_KEY come from the environment).
Over HTTP (`responses.stream`), or over the SDK's WebSocket (`responses.connect()`) when RRKIT_TRANSPORT is
`ws`, where a tool output goes back with `previous_response_id`, as the SDK's WebSocket mode is meant for. Asked
for a background response (RRKIT_REQUEST), it streams one and resumes it after the last event it got when the
stream breaks, or (`stream: false`) polls it until it ends."""

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


def turn(send):
    history: list = [{"role": "user", "content": "What is the weather in Paris?"}]
    new, previous = history, None
    while True:
        final = send(history, new, previous)
        calls = [item for item in final.output if item.type == "function_call"]
        if not calls:
            return
        new = [{"type": "function_call_output", "call_id": call.call_id, "output": "24 C"} for call in calls]
        history += [item.model_dump(exclude_none=True) for item in final.output] + new
        previous = final.id


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
    if asked.get("background") and asked.get("stream") is False:
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
