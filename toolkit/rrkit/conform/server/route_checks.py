"""Checks of the resource's other routes (retrieve, cancel, delete, input items): an object of its type, a
status of the background lifecycle, a page in the order asked."""

from __future__ import annotations

from typing import Any

from ...report import Severity
from .found import Found
from .probe import Expect
from .sdk import route_body_problems


def check_ok(found: Found, expect: Expect) -> None:
    answer = found.answer
    if not answer.ok:
        found.add(Severity.MUST, f"{answer.request or 'the request'} is answered 2xx", f"got status {answer.status}")
        return
    body = answer.body
    if not isinstance(body, dict):
        found.add(Severity.MUST, "the answer is one JSON object", f"got {(answer.body_text or '')[:80]!r}")
        return
    if expect.object is not None and body.get("object") != expect.object:
        seen = f"got {body.get('object')!r}"
        found.add(Severity.MUST, f"the answer is a {expect.object!r} object", seen, field="object")
    for problem in route_body_problems(answer.request, body) or ():
        found.add(Severity.SHOULD, "the body parses as the official SDK's type for its route", problem)


def check_status(found: Found, expect: Expect) -> None:
    body = found.answer.body
    status = body.get("status") if isinstance(body, dict) else None
    if status not in expect.statuses:
        allowed = " or ".join(repr(one) for one in expect.statuses)
        found.add(Severity.MUST, f"the response's status is {allowed}", f"got {status!r}", field="status")
    sent = found.answer.origin.sent if found.answer.origin is not None else {}
    if (
        isinstance(body, dict)
        and body.get("background") is not True
        and isinstance(sent, dict)
        and sent.get("background")
    ):
        seen = f"got {body.get('background')!r}"
        found.add(Severity.SHOULD, "a background response states background: true", seen, field="background")


def _item_text(item: Any) -> str | None:
    content = item.get("content") if isinstance(item, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content and isinstance(content[0], dict):
        text = content[0].get("text")
        return text if isinstance(text, str) else None
    return None


def check_page(found: Found, expect: Expect) -> None:
    answer = found.answer
    body = answer.body if isinstance(answer.body, dict) else {}
    data = body.get("data")
    if not answer.ok or not isinstance(data, list):
        found.add(Severity.MUST, "a list is answered 2xx with a page: `data` a list", f"got status {answer.status}")
        return
    if not isinstance(body.get("has_more"), bool):
        found.add(Severity.MUST, "a page says whether it has more (`has_more`)", f"got {body.get('has_more')!r}")
    limit = int(answer.query.get("limit", "20"))
    if len(data) > limit:
        found.add(Severity.MUST, f"a page holds at most `limit` ({limit}) items", f"got {len(data)}", field="data")
    ids = [item.get("id") for item in data if isinstance(item, dict)]
    if data and (body.get("first_id"), body.get("last_id")) != (ids[0], ids[-1]):
        seen = f"got {body.get('first_id')!r}, {body.get('last_id')!r}"
        found.add(Severity.SHOULD, "first_id and last_id name the page's first and last items", seen)
    after = answer.query.get("after")
    if after is not None and after in ids:
        found.add(Severity.MUST, "a page starts after its `after` item", "it holds that item again", field="data")
    origin = answer.origin
    sent = origin.sent.get("input") if origin is not None and isinstance(origin.sent, dict) else None
    if not isinstance(sent, list):
        return
    given = [_item_text(item) for item in sent]
    expected = given if answer.query.get("order") == "asc" else list(reversed(given))
    texts = [_item_text(item) for item in data]
    start = next((i for i in range(len(expected)) if expected[i : i + len(texts)] == texts), None)
    if texts and (start is None or (after is None and start != 0)):
        seen = f"got {texts}, of {expected}"
        found.add(Severity.MUST, "input items come back in the order asked, each once", seen, field="data")
    elif (
        (texts or after is None)
        and start is not None
        and body.get("has_more") is not (start + len(texts) < len(expected))
    ):
        seen = f"has_more {body.get('has_more')!r} with {len(expected) - start - len(texts)} items after the page"
        found.add(Severity.MUST, "a page says whether more items follow it", seen, field="has_more")
