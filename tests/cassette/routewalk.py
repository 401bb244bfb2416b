"""What the route tests share: a script whose responses run in the background, the strict SDK client, and a
recording of one background response polled, resumed and deleted through the proxy."""

from __future__ import annotations

import openai

from rrkit.cassette import Cassette
from rrkit.cassette.proxy import RecordingProxy
from rrkit.script import Script, reply, text

from ..errortrap import Serve

BACKGROUND = reply(text("Hello from the background.", chunks=3)).in_background(queued_polls=1, in_progress_polls=1)
"""Each create answers this; created with `background: true`, it is queued for a poll, then in progress for one."""
TERMINAL_STATUSES = ("completed", "failed", "incomplete", "cancelled")


def strict_sdk(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0, _strict_response_validation=True)


def record_background_walk(serve: Serve) -> Cassette:
    """Through a recording proxy: a background create, polled until it completed, its stream resumed after event 2,
    then deleted, then the model list; the proxy's cassette."""
    with serve.running(Script(default=BACKGROUND)) as upstream, RecordingProxy(upstream.http_url) as proxy:
        serve.guard(proxy)
        client = strict_sdk(proxy.http_url)
        created = client.responses.create(model="gpt-test", input="Poll me.", background=True)
        for _ in range(100):
            if client.responses.retrieve(created.id).status in TERMINAL_STATUSES:
                break
        list(client.responses.retrieve(created.id, stream=True, starting_after=2))
        client.responses.delete(created.id)
        client.models.list()
        return proxy.cassette("background-walk")
