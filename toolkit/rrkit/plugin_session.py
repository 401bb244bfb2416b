"""`rrkit_session`: a test's own isolated session of one fake server shared by the whole run (this process's, or an
external `rrkit serve` named by `--rrkit-serve-url`), driven through its admin API as any client would."""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from .protocol.headers import SESSION_HEADER
from .protocol.plan import Chaos
from .server.sessions import NAME_LENGTH

if TYPE_CHECKING:
    import openai

    from .plugin_options import FixtureOptions, RRKitConfig
    from .script.models import Script

SERVE_URL_ENV = "RRKIT_SERVE_URL"
ADMIN_TOKEN_ENV = "RRKIT_ADMIN_TOKEN"
ADMIN = "/__rrkit"
_TIMEOUT = httpx.Timeout(60.0)


def session_name(nodeid: str) -> str:
    """A session name for a test: its node id in visible ASCII (readable in a journal), made unique to this run."""
    token = secrets.token_hex(4)
    readable = re.sub(r"[^\x21-\x7e]", "_", nodeid)[: NAME_LENGTH - len(token) - 1]
    return f"{readable}#{token}"


def server_root(url: str) -> str:
    """`http://host:port` from a server's URL as a user gives it (its root, `/v1`, or its admin URL)."""
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise pytest.UsageError(
            f"--rrkit-serve-url {url!r}: give the http:// URL of a running `rrkit serve`, such as http://127.0.0.1:8080"
        )
    return str(parsed.copy_with(path="/", query=None, fragment=None)).rstrip("/")


class RRKitSession:
    """One test's session: its URLs and headers for the clients under test, and its script, chaos, key, journal
    and near misses through the server's admin API (each call names the session)."""

    def __init__(self, root: str, name: str, admin_token: str | None = None) -> None:
        self.root, self.name = root, name
        self.headers = {SESSION_HEADER: name}
        """What each request of the test sends (`default_headers=`, `additional_headers=`)."""
        admin_headers = {**self.headers, **({"authorization": f"Bearer {admin_token}"} if admin_token else {})}
        self._admin = httpx.Client(base_url=root + ADMIN, headers=admin_headers, timeout=_TIMEOUT, trust_env=False)

    @property
    def http_url(self) -> str:
        """The API base for HTTP clients, `http://host:port/v1`."""
        return self.root + "/v1"

    @property
    def ws_url(self) -> str:
        return "ws" + self.http_url.removeprefix("http")

    @property
    def responses_ws_url(self) -> str:
        return self.ws_url + "/responses"

    @property
    def admin_url(self) -> str:
        return self.root + ADMIN

    def openai(self, **options: Any) -> openai.OpenAI:
        """The official SDK's client on this session (`api_key` defaults to a stand-in; other options as given)."""
        import openai

        headers = {**self.headers, **options.pop("default_headers", {})}
        options.setdefault("api_key", "sk-rrkit-session")
        return openai.OpenAI(base_url=self.http_url, default_headers=headers, **options)

    def _call(self, method: str, path: str, **options: Any) -> Any:
        response = self._admin.request(method, path, **options)
        if response.status_code >= 400:
            raise AssertionError(
                f"rrkit session {self.name}: {method} {ADMIN}{path} answered {response.status_code}: {response.text}"
            )
        return response.json()

    def reset(self) -> dict[str, Any]:
        """Forget the session's exchanges, near misses and stored responses; its script starts over."""
        result: dict[str, Any] = self._call("POST", "/reset")
        return result

    def load(self, script: Script | Path | str) -> None:
        """Play `script` (a Script, a script file, or `fixture:NAME`) in this session from its next request on."""
        from .script.models import Script
        from .script.shipped import script_path

        if isinstance(script, Script):
            content = json.dumps(script.model_dump(mode="json", exclude_defaults=True)).encode()
            kind = "application/json"
        else:
            path = script_path(script)
            content = path.read_bytes()
            kind = "application/json" if path.suffix == ".json" else "application/yaml"
        self._call("POST", "/script", content=content, headers={"content-type": kind})

    def set_chaos(self, chaos: Chaos | str | None) -> None:
        """The session's chaos from its next request on (`"rate_limit=0.2,retry_after=1,seed=3"`); None: none."""
        if chaos is None:
            self._call("DELETE", "/chaos")
            return
        given = Chaos.parse(chaos) if isinstance(chaos, str) else chaos
        self._call("PUT", "/chaos", json=given.to_json())

    def require_key(self, key: str | None) -> None:
        """Answer this session's requests without `key` with the service's 401 (None: any key goes)."""
        if key is None:
            self._call("DELETE", "/key")
        else:
            self._call("PUT", "/key", json={"key": key})

    def exchanges(self, **filters: str | int) -> list[dict[str, Any]]:
        """The session's exchanges (summaries, oldest first), filtered as `GET /__rrkit/exchanges` filters."""
        data: list[dict[str, Any]] = self._call("GET", "/exchanges", params=filters)["data"]
        return data

    def unmatched(self) -> list[dict[str, Any]]:
        """The session's requests nothing answered, with their near-miss reports."""
        data: list[dict[str, Any]] = self._call("GET", "/unmatched")["data"]
        return data

    def end(self) -> None:
        """End the session on the server now (its exchanges and stored responses go)."""
        self._call("DELETE", "/session")

    def close(self) -> None:
        self._admin.close()


def serve_url(config: pytest.Config) -> str | None:
    """The external server every test's session is on (`--rrkit-serve-url`, or $RRKIT_SERVE_URL), if any."""
    given = config.getoption("--rrkit-serve-url", default=None) or os.environ.get(SERVE_URL_ENV) or None
    return server_root(given) if given else None


def open_session(
    request: pytest.FixtureRequest, root: str, config: RRKitConfig | Mapping[str, Any]
) -> tuple[RRKitSession, FixtureOptions]:
    """The test's session, reset, with the marker's script and chaos loaded; and the test's options."""
    from .plugin_options import options_of

    options = options_of(request, config)
    if options.cassette is not None:
        raise pytest.UsageError(f"{options.test}: cassettes need `rrkit_server`, not `rrkit_session`")
    session = RRKitSession(root, session_name(request.node.nodeid), os.environ.get(ADMIN_TOKEN_ENV) or None)
    try:
        session.reset()
        if options.script is not None:
            session.load(options.script)
        if options.chaos is not None:
            session.set_chaos(options.chaos)
    except httpx.HTTPError as error:
        session.close()
        raise pytest.UsageError(
            f"{options.test}: rrkit_session: the server at {root} cannot be reached: {error}"
        ) from None
    return session, options


def close_session(session: RRKitSession, *, failed: bool, check_matched: bool) -> None:
    """At teardown: fail on requests nothing answered; end the session, unless the test failed (then it stays for
    a look through the admin API, `?session=NAME`, until it idles out)."""
    try:
        missed = session.unmatched() if check_matched else []
        if not failed:
            session.end()
    finally:
        session.close()
    if missed and not failed:
        lines = "\n".join(f"  - {miss['message']}" for miss in missed)
        pytest.fail(f"rrkit session {session.name}: {len(missed)} request(s) matched no reply:\n{lines}", pytrace=False)
