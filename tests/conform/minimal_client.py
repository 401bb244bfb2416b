"""A minimal correct Responses client over HTTP SSE, written with httpx alone, for `rrkit conform` to judge: it
retries 5xx, 429 and cut streams with backoff, honours `Retry-After`, and answers tool calls with their
`call_id`. `BROKEN` in its environment breaks one rule: `cut-is-answer` (a stream without its terminal event is
taken as the answer), `retry-400` (a 400 is retried), `ignore-retry-after` (backoff instead of the named delay),
`drop-call-id` (tool outputs carry another call_id), `no-idle-timeout` (a silent stream is waited on for ever).
`IDLE_TIMEOUT` (seconds, 2 by default) is how long a silent stream is waited on before it is given up on.
Run as a command, or call `main(environment)` (what `rrkit conform` hands a Python callable)."""

import json
import os
import sys
import time
from collections.abc import Mapping

import httpx

MAX_RETRIES = 4
RETRYABLE_FAILURES = {"server_error", "slow_down", None}


def backoff(retry: int) -> float:
    return 0.2 * 2 ** (retry - 1)


def stream(client: httpx.Client, body: dict) -> tuple[int, dict, list[dict]]:
    """(status, headers, events); a stream cut before its end gives the events that came."""
    events: list[dict] = []
    try:
        with client.stream("POST", "/responses", json=body) as response:
            if response.status_code != 200:
                response.read()
                return response.status_code, dict(response.headers), []
            for line in response.iter_lines():
                if line.startswith("data:") and line[5:].strip() != "[DONE]":
                    events.append(json.loads(line[5:]))
    except httpx.TransportError:
        pass
    return 200, {}, events


def main(env: Mapping[str, str] = os.environ) -> int:
    broken = env.get("BROKEN", "")
    history: list[dict] = [{"type": "message", "role": "user", "content": "say hi"}]
    retry = 0
    read = None if broken == "no-idle-timeout" else float(env.get("IDLE_TIMEOUT", "2"))
    timeout = httpx.Timeout(30, read=read)
    with httpx.Client(base_url=env["OPENAI_BASE_URL"], timeout=timeout, trust_env=False) as client:
        while True:
            body = {"model": "gpt-test", "input": history, "stream": True}
            status, headers, events = stream(client, body)
            terminal = next(
                (
                    e
                    for e in events
                    if e.get("type") in ("response.completed", "response.failed", "response.incomplete")
                ),
                None,
            )
            delay = None
            if status != 200:
                retryable = status == 429 or status >= 500 or (status == 400 and broken == "retry-400")
                if not retryable:
                    print(f"refused {status}", file=sys.stderr)
                    return 1
                if "retry-after" in headers and broken != "ignore-retry-after":
                    delay = float(headers["retry-after"])
            elif terminal is None:
                if broken == "cut-is-answer":
                    return 0
            elif terminal["type"] == "response.completed":
                output = terminal["response"]["output"]
                calls = [item for item in output if item.get("type") == "function_call"]
                if not calls:
                    return 0
                history += output
                for call in calls:
                    call_id = "call_other" if broken == "drop-call-id" else call["call_id"]
                    history.append({"type": "function_call_output", "call_id": call_id, "output": "ok"})
                retry = 0
                continue
            elif terminal["type"] == "response.failed":
                code = (terminal["response"].get("error") or {}).get("code")
                if code not in RETRYABLE_FAILURES:
                    print(f"failed: {code}", file=sys.stderr)
                    return 1
            else:
                print("incomplete", file=sys.stderr)
                return 1
            retry += 1
            if retry > MAX_RETRIES:
                print("out of retries", file=sys.stderr)
                return 1
            time.sleep(delay if delay is not None else backoff(retry))


if __name__ == "__main__":
    sys.exit(main())
