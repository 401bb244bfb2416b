"""A streaming client on the official `openai` Python SDK with its default retries (max_retries 2): one turn,
each function call answered with its call_id (OPENAI_BASE_URL and OPENAI_API_KEY come from the environment)."""

import sys

import openai

client = openai.OpenAI()
history: list = [{"role": "user", "content": "What is the weather in Paris?"}]
try:
    while True:
        with client.responses.stream(model="gpt-test", input=history) as stream:
            final = stream.get_final_response()
        calls = [item for item in final.output if item.type == "function_call"]
        if not calls:
            break
        history += [item.model_dump(exclude_none=True) for item in final.output]
        history += [{"type": "function_call_output", "call_id": call.call_id, "output": "24 C"} for call in calls]
except Exception as error:  # the SDK's errors, and the stream's own (no response.completed)
    print(f"{type(error).__name__}: {error}", file=sys.stderr)
    sys.exit(1)
