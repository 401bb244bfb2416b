"""A streaming client on LangChain's `ChatOpenAI` over the Responses API, judged by `rrkit conform`.

Written against langchain-openai 1.8.1 (langchain-core 1.8.3, openai 3.63.0). One turn: "What is the weather in
Paris?" with one tool, `get_weather(city)`, bound with `bind_tools`; the answer is streamed with `.stream()`,
its chunks added up into one `AIMessageChunk`, and each tool call it holds is run and sent back as a
`ToolMessage` (LangChain's documented tool loop), until a reply without tool calls. The base URL and key come
from OPENAI_BASE_URL and OPENAI_API_KEY, read by the `openai` SDK under `ChatOpenAI`.

Defaults relied on (nothing is set beyond `use_responses_api` and `streaming`): `max_retries` unset, so the
`openai` SDK's 2 retries; `timeout` unset (`request_timeout=None`, passed to the SDK as no timeout);
`use_previous_response_id=False`, so each request carries the whole history. Sync `.stream()`, the usual call
in a script (LangChain's `stream_chunk_timeout`, 120 s, applies only to async streaming).

Exit 0 when LangChain returned a reply without raising (the turn completed), 1 with the error on stderr when
it raised. HTTP only.
"""

import sys

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return "24 C"


def main() -> None:
    llm = ChatOpenAI(model="gpt-test", use_responses_api=True, streaming=True)
    llm_with_tools = llm.bind_tools([get_weather])
    messages = [HumanMessage("What is the weather in Paris?")]
    while True:
        reply = None
        for chunk in llm_with_tools.stream(messages):
            print(chunk.text, end="", flush=True)
            reply = chunk if reply is None else reply + chunk
        print()
        if reply is None:
            raise RuntimeError("the stream gave no message")
        messages.append(reply)
        if not reply.tool_calls:
            return
        for call in reply.tool_calls:
            messages.append(ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"]))


try:
    main()
except Exception as error:  # LangChain's errors and the openai SDK's under it
    print(f"{type(error).__name__}: {error}", file=sys.stderr)
    sys.exit(1)
