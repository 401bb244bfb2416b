"""The admin API under `/__rrkit`, on the fake server's own port (WireMock's `/__admin`): what the server saw
(exchanges, near misses), reset, load a new script, health. Its requests are never captured as exchanges and
never answered by the reply source."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from functools import cache
from importlib import metadata
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..protocol import errors
from ..protocol.exceptions import BadRequest, ScriptError, SettingError
from ..protocol.headers import SESSION_HEADER, is_header_value, media_type
from ..protocol.jsontext import UnsafeJSON, parse_json
from ..protocol.numbers import integer, shown_value
from ..protocol.plan import Chaos
from ..script.select import ScriptState
from .admin_guard import admin_refusal
from .capture import Exchange
from .exchange_filter import ExchangeFilter, FilterError
from .exchange_json import exchange_full, exchange_summary, unmatched_json
from .http import read_body
from .respond import RequestRefused, ServerState, state_of

if TYPE_CHECKING:
    from ..script.models import Script

ADMIN_PREFIX = "/__rrkit"
SCRIPT_PLACE = "POST /__rrkit/script"  # how a posted script's errors name it, where a file's would name the file
YAML_TYPES = frozenset({"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"})
JSON_HINT = "a YAML script goes with content-type application/yaml"
"""What a posted script's JSON syntax error adds: it was read as JSON for its content type."""


class AdminJSON(Response):
    """A JSON answer: UTF-8 where it can be, `\\u` escapes for what UTF-8 cannot carry (a lone surrogate in a
    body the server refused), integers of any size exact."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        try:
            return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(content, separators=(",", ":")).encode("ascii")


def _error(status: int, message: str, *, param: str | None = None, code: str | None = None) -> AdminJSON:
    type_ = errors.default_error_type(status)
    return AdminJSON(errors.error_body(message, type=type_, param=param, code=code), status_code=status)


class _BadQuery(Exception):
    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


def _count(request: Request, name: str) -> int | None:
    value = request.query_params.get(name)
    if value is None or value == "":
        return None
    try:
        return integer(value, name)
    except BadRequest as error:
        raise _BadQuery(name, error.message) from None


def _flag(request: Request, name: str) -> bool:
    value = request.query_params.get(name, "").lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise _BadQuery(name, f"{name} must be 1 or 0 (true or false), got {shown_value(value)}")


# -- what the endpoints do ------------------------------------------------------------------------


@cache
def rrkit_version() -> str:
    try:
        return metadata.version("rrkit")
    except metadata.PackageNotFoundError:
        return "unknown"


def source_summary(state: ServerState) -> dict[str, Any]:
    source = state.source
    if isinstance(source, ScriptState):
        script = source.script
        return {
            "kind": "script",
            "name": script.name or None,
            "steps": len(script.responses),
            "handshakes": len(script.handshakes),
            "default": script.default is not None,
            "unused": source.unused(),
        }
    return {"kind": type(source).__name__}


def memory_summary(state: ServerState) -> dict[str, Any]:
    """The memory budget and the bytes each store keeps of it (docs/guide/serve.md: limits), with what each evicted."""
    capture, responses, unmatched = state.capture, state.http_store, state.unmatched
    return {
        "budget": state.limits.memory,
        "kept": {
            "exchanges": capture.kept_bytes if capture.max_bytes is not None else None,
            "responses": responses.kept_bytes,
            "unmatched": unmatched.kept_bytes,
        },
        "evicted": {"exchanges": capture.evicted, "responses": responses.evicted},
    }


def _sessions_brief(state: ServerState) -> dict[str, Any] | None:
    """The sessions' counts, for the default session's health (None in a session's own)."""
    sessions = state.sessions
    if sessions is None or state.session is not None:
        return None
    summary = sessions.summary()
    del summary["data"]
    return summary


def reset_state(state: ServerState) -> dict[str, int]:
    """Forget what the server saw (exchanges, connections, near misses, stored responses) and start the source
    over (every scripted step available again); returns how much was forgotten."""
    forgot = {
        "exchanges": len(state.capture.exchanges),
        "connections": len(state.capture.connections),
        "unmatched": len(state.unmatched.recent()),
    }
    state.source.reset()
    state.capture.clear()
    state.http_store.clear()
    state.unmatched.clear()
    state.counts.clear()
    return forgot


def script_of_body(content: bytes, content_type: str) -> Script:
    """The script a request body holds (YAML if its content type says so, else JSON), read as `load_script` reads
    a file: errors name the place (line and column, then the field) and the problem."""
    from ..files.text import decode_utf8
    from ..script.loader import script_of_text  # the script models: loaded by the first script

    text = decode_utf8(content, SCRIPT_PLACE, "script", ScriptError, remedy="send the script as UTF-8")
    if not text.strip():
        raise ScriptError(f"{SCRIPT_PLACE}: the body is empty: send a script (JSON, or YAML as application/yaml)")
    as_yaml = media_type(content_type) in YAML_TYPES
    script = script_of_text(text, SCRIPT_PLACE, as_yaml=as_yaml, json_hint=JSON_HINT)
    script.name = script.name or "posted"
    return script


# -- the app ---------------------------------------------------------------------------------------

_Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class Admin:
    """The endpoints, over one server's state."""

    def __init__(self, state: ServerState) -> None:
        self.state = state

    def _exchanges(self) -> list[Exchange]:
        return self.state.capture.exchanges

    async def health(self, request: Request) -> Response:
        exchanges = self._exchanges()
        base = f"{request.url.scheme}://{request.url.netloc}"
        return AdminJSON(
            {
                "status": "ok",
                "version": rrkit_version(),
                "source": source_summary(self.state),
                "exchanges": len(exchanges),
                "running": sum(1 for exchange in exchanges if exchange.outcome is None),
                "connections": len(self.state.capture.connections),
                "unmatched": self.state.unmatched.total,
                "keep": self.state.capture.keep,
                "session": self.state.session,
                "chaos": self.state.chaos.to_json() if self.state.chaos is not None else None,
                "key_required": self.state.require_key is not None,
                "sessions": _sessions_brief(self.state),
                "memory": memory_summary(self.state),
                "urls": {
                    "http": f"{base}/v1",
                    "ws": f"{base.replace('http', 'ws', 1)}/v1",
                    "admin": f"{base}{ADMIN_PREFIX}",
                },
            }
        )

    async def exchanges(self, request: Request) -> Response:
        limit, full = _count(request, "limit"), _flag(request, "full")
        try:
            wanted = ExchangeFilter.parse(request.query_params)
        except FilterError as error:
            raise _BadQuery(error.param, str(error)) from None
        exchanges = [exchange for exchange in self._exchanges() if wanted.matches(exchange)]
        total = len(exchanges)
        more = limit is not None and total > limit
        if limit is not None:  # from `since` on: the first `limit` (paging on); else the most recent `limit`
            exchanges = exchanges[:limit] if wanted.starts_somewhere else exchanges[total - limit :]
        show = exchange_full if full else exchange_summary
        data = [show(exchange) for exchange in exchanges]
        return AdminJSON(
            {
                "object": "list",
                "data": data,
                "total": total,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
                "has_more": more,
            }
        )

    async def exchange(self, request: Request) -> Response:
        wanted = request.path_params["n"]
        exchanges = self._exchanges()
        found = next((exchange for exchange in exchanges if str(exchange.id) == wanted), None)
        if found is None:
            held = f"exchanges {exchanges[0].id} to {exchanges[-1].id}" if exchanges else "no exchanges"
            keep = self.state.capture.keep
            kept = f" (it keeps the {keep} most recent)" if keep is not None else ""
            return _error(
                404,
                f"No exchange {wanted!r}: this server holds {held}{kept}; GET {ADMIN_PREFIX}/exchanges lists them.",
                param="n",
                code="exchange_not_found",
            )
        return AdminJSON(exchange_full(found))

    async def unmatched(self, request: Request) -> Response:
        recent = self.state.unmatched.recent()
        limit = _count(request, "limit")
        if limit is not None:
            recent = recent[len(recent) - limit :] if limit else []
        return AdminJSON(
            {
                "object": "list",
                "data": [unmatched_json(unmatched) for unmatched in recent],
                "total": self.state.unmatched.total,
                "kept": self.state.unmatched.size,
            }
        )

    async def metrics(self, request: Request) -> Response:
        from .metrics import CONTENT_TYPE, metrics_text  # the Prometheus client, loaded by the first scrape

        return Response(metrics_text(self.state), media_type=CONTENT_TYPE)

    async def reset(self, request: Request) -> Response:
        forgot = reset_state(self.state)
        return AdminJSON({"reset": True, "forgot": forgot, "source": source_summary(self.state)})

    async def script(self, request: Request) -> Response:
        source = self.state.source
        if not isinstance(source, ScriptState):
            return _error(
                409,
                f"This server answers from a {type(source).__name__}, not a script: a script can replace only a "
                "script. Start the server with a script (`rrkit serve --script FILE`, or without --cassette).",
                code="not_a_script_server",
            )
        try:
            content = await read_body(request, self.state.limits.body)
        except RequestRefused as too_large:
            return AdminJSON(too_large.body, status_code=too_large.status)
        try:
            script = script_of_body(content, request.headers.get("content-type", ""))
        except ScriptError as error:
            return _error(400, str(error), code="invalid_script")
        source.reset(script)  # every step of the new script available, from the next request on
        return AdminJSON({"loaded": True, "source": source_summary(self.state)})

    async def _json_body(self, request: Request, what: str) -> Any:
        """The JSON a `PUT /__rrkit/{what}` body holds, or the 400 (`invalid_{what}`) saying why there is none."""
        try:
            return parse_json(await read_body(request, self.state.limits.body) or b"null", what="body")
        except RequestRefused as too_large:
            return AdminJSON(too_large.body, status_code=too_large.status)
        except UnsafeJSON as error:  # the create's reader: the same bounds on nesting and numbers, the same 400
            message = f"PUT {ADMIN_PREFIX}/{what}: {error.message} Send a JSON object."
            return _error(400, message, param=error.param, code=f"invalid_{what}")

    async def chaos(self, request: Request) -> Response:
        """`GET` the session's chaos, `PUT` a new one (the fields of `--chaos` as JSON), `DELETE` it: from the
        session's next request on."""
        state = self.state
        if request.method == "PUT":
            body = await self._json_body(request, "chaos")
            if isinstance(body, Response):
                return body
            try:
                state.chaos = Chaos.from_json(body)
            except SettingError as error:
                return _error(400, f"PUT {ADMIN_PREFIX}/chaos: {error}", code="invalid_chaos")
        elif request.method == "DELETE":
            state.chaos = None
        return AdminJSON({"session": state.session, "chaos": state.chaos.to_json() if state.chaos else None})

    async def key(self, request: Request) -> Response:
        """`GET` whether the session requires an API key, `PUT` one (`{"key": "..."}`), `DELETE` it (any key goes)."""
        state = self.state
        if request.method == "PUT":
            body = await self._json_body(request, "key")
            if isinstance(body, Response):
                return body
            key = body.get("key") if isinstance(body, dict) else None
            if not isinstance(key, str) or not key.strip() or not is_header_value(key):
                return _error(
                    400,
                    f'PUT {ADMIN_PREFIX}/key: give the key as {{"key": "sk-..."}} (a non-empty string a header can '
                    "carry); DELETE the key to accept any",
                    param="key",
                    code="invalid_key",
                )
            state.require_key = key.strip()
        elif request.method == "DELETE":
            state.require_key = None
        return AdminJSON({"session": state.session, "key_required": state.require_key is not None})

    async def sessions(self, request: Request) -> Response:
        sessions = self.state.sessions
        return AdminJSON({"object": "list", **(sessions.summary() if sessions is not None else {"data": []})})

    async def end_session(self, request: Request) -> Response:
        """`DELETE /__rrkit/session`: end the session the request names (its stores and background runs go)."""
        state = self.state
        if state.session is None or state.sessions is None:
            return _error(
                400,
                f"DELETE {ADMIN_PREFIX}/session ends the session the request names: send {SESSION_HEADER} (or "
                "?session=NAME); the default session cannot be ended (POST /__rrkit/reset empties it).",
                code="no_session_named",
            )
        state.sessions.drop(state.session)
        return AdminJSON({"session": state.session, "ended": True})

    @staticmethod
    async def refuse(request: Request, error: Exception) -> Response:
        """404 and 405 as OpenAI-shaped errors that name the endpoints."""
        assert isinstance(error, HTTPException)
        where = f"{request.method} {request.url.path}"
        if error.status_code == 405:
            allowed = (error.headers or {}).get("Allow", "")
            response = _error(405, f"{where} is not allowed: this endpoint takes {allowed}.")
            response.headers.update(error.headers or {})
            return response
        return _error(error.status_code, f"{where}: no such admin endpoint; the endpoints are: {ENDPOINTS}.")

    @staticmethod
    def routes() -> list[Route]:
        def route(path: str, name: str, method: str) -> Route:
            async def answer(request: Request) -> Response:
                state = state_of(request.scope)
                if (refused := _refusal(request, state)) is not None:
                    return refused
                handler: _Handler = getattr(Admin(state), name)
                try:
                    return await handler(request)
                except _BadQuery as error:
                    return _error(400, str(error), param=error.param, code="invalid_query")

            return Route(path, answer, methods=[method])

        return [
            route("/", "health", "GET"),
            route("/health", "health", "GET"),
            route("/exchanges", "exchanges", "GET"),
            route("/exchanges/{n}", "exchange", "GET"),
            route("/unmatched", "unmatched", "GET"),
            route("/metrics", "metrics", "GET"),
            route("/reset", "reset", "POST"),
            route("/script", "script", "POST"),
            *(route("/chaos", "chaos", method) for method in ("GET", "PUT", "DELETE")),
            *(route("/key", "key", method) for method in ("GET", "PUT", "DELETE")),
            route("/sessions", "sessions", "GET"),
            route("/session", "end_session", "DELETE"),
        ]


ENDPOINTS = ", ".join(
    f"{method} {ADMIN_PREFIX}{path}"
    for method, path in (
        ("GET", "/health"),
        ("GET", "/exchanges"),
        ("GET", "/exchanges/{n}"),
        ("GET", "/unmatched"),
        ("GET", "/metrics"),
        ("POST", "/reset"),
        ("POST", "/script"),
        ("GET|PUT|DELETE", "/chaos"),
        ("GET|PUT|DELETE", "/key"),
        ("GET", "/sessions"),
        ("DELETE", "/session"),
    )
)


def admin_app() -> Starlette:
    """The admin endpoints as an app to mount at `ADMIN_PREFIX`, answering over the state of the server each
    request reached."""
    return Starlette(routes=Admin.routes(), exception_handlers={HTTPException: Admin.refuse})


async def admin_health(request: Request) -> Response:
    """`GET /__rrkit`, answered as `/__rrkit/health` (no redirect)."""
    state = state_of(request.scope)
    return _refusal(request, state) or await Admin(state).health(request)


def _refusal(request: Request, state: ServerState) -> Response | None:
    """The answer to an admin request its server's policy refuses (docs/guide/serve.md: Admin API, who may call it)."""
    peer = request.client.host if request.client is not None else None
    refused = admin_refusal(state.admin, request.method, request.headers, peer)
    if refused is None:
        return None
    response = _error(refused.status, refused.message, code=refused.code)
    response.headers.update(refused.headers)
    return response
