"""A streaming client on the official `openai` Python SDK with its default retries (max_retries 2): one turn,
each function call answered with its call_id (OPENAI_BASE_URL and OPENAI_API_KEY come from the environment).
Over HTTP (`responses.stream`), or over the SDK's WebSocket (`responses.connect()`) when RRKIT_TRANSPORT is
`ws`, where a tool output goes back with `previous_response_id`, as the SDK's WebSocket mode is meant for."""

import os
import sys

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


try:
    if os.environ.get("RRKIT_TRANSPORT") == "ws":
        with client.responses.connect() as connection:
            turn(lambda history, new_items, previous: over_ws(connection, history, new_items, previous))
    else:
        turn(over_http)
except Exception as error:  # the SDK's errors, and the stream's own (no response.completed)
    print(f"{type(error).__name__}: {error}", file=sys.stderr)
    sys.exit(1)
