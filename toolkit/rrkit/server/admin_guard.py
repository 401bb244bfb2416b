"""Who may call the admin API: the checks a request passes before any admin endpoint answers, as a pure function
of its method, headers and peer that returns the refusal and its reason (or None)."""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..protocol.headers import media_type

TOKEN_ENV = "RRKIT_ADMIN_TOKEN"
LOCAL_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost"})
BROWSER_SIMPLE_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"})
"""The content types a web page may POST anywhere without asking first (no CORS preflight)."""
SAFE_FETCH_SITES = frozenset({"same-origin", "none"})


@dataclass(frozen=True, slots=True)
class AdminPolicy:
    """What the admin API requires: `token` (None: callers from a loopback address only) and the host names it
    answers for besides IP literals and localhost (a DNS name pointed at the server by a web page is refused)."""

    token: str | None = None
    hosts: frozenset[str] = frozenset()

    @classmethod
    def of(cls, token: str | None = None, hosts: Iterable[str] = ()) -> AdminPolicy:
        return cls(token or None, frozenset(host.strip().lower().rstrip(".") for host in hosts if host.strip()))


@dataclass(frozen=True, slots=True)
class AdminRefusal:
    status: int
    code: str
    message: str

    @property
    def headers(self) -> dict[str, str]:
        return {"www-authenticate": 'Bearer realm="rrkit admin"'} if self.status == 401 else {}


def new_token() -> str:
    return secrets.token_urlsafe(24)


def is_loopback(address: str | None) -> bool:
    """A bound or peer address on this machine only (`127.0.0.0/8`, `::1`, `localhost`)."""
    if address is None:
        return False
    if address.lower() in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(host_header: str) -> str:
    """The name in a `Host` header, without its port: `[::1]:8000` -> `::1`, `Example.COM:80` -> `example.com`."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host[1:]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def admin_refusal(
    policy: AdminPolicy, method: str, headers: Mapping[str, str], peer: str | None
) -> AdminRefusal | None:
    """Why this request may not call the admin API, or None. In order: a `Host` that names another machine (DNS
    rebinding), a web page's request (a foreign `Origin`, `Sec-Fetch-Site` other than same-origin), a body a web
    form can send, a missing or wrong token when one is set, and without one a caller that is not on loopback."""
    host = headers.get("host", "")
    name = host_name(host)
    if not (name in LOCAL_NAMES or name in policy.hosts or _ip_literal(name)):
        allowed = ", ".join(["IP addresses", "localhost", *sorted(policy.hosts)])
        return AdminRefusal(
            403,
            "admin_host_refused",
            f"The admin API does not answer for Host {host!r} (a web page's DNS name pointed at this server?): it "
            f"answers for {allowed}. A name of your own: --admin-host NAME.",
        )
    origin = headers.get("origin")
    if origin is not None and origin.lower().rstrip("/") not in (f"http://{host.lower()}", f"https://{host.lower()}"):
        return AdminRefusal(
            403,
            "admin_cross_origin",
            f"The admin API refuses requests from a web page (Origin {origin!r}): call it from a program or a shell.",
        )
    site = headers.get("sec-fetch-site")
    if site is not None and site.lower() not in SAFE_FETCH_SITES:
        return AdminRefusal(
            403,
            "admin_cross_site",
            f"The admin API refuses requests from a web page (Sec-Fetch-Site {site!r}): call it from a program.",
        )
    content_type = media_type(headers.get("content-type", ""))
    if method == "POST" and content_type in BROWSER_SIMPLE_TYPES:
        return AdminRefusal(
            415,
            "admin_content_type",
            f"The admin API takes no {content_type} body (a web form can send one to any site): send JSON "
            "(application/json), a script also as application/yaml, or no body.",
        )
    if policy.token is not None:
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), policy.token.encode()):
            return AdminRefusal(
                401,
                "admin_token_required",
                "The admin API needs this server's token: send `Authorization: Bearer <token>` (the token given "
                f"with --admin-token or {TOKEN_ENV}, or printed when the server started).",
            )
        return None
    if not is_loopback(peer):
        return AdminRefusal(
            403,
            "admin_not_loopback",
            f"The admin API answers callers on this machine only, not {peer or 'an unknown peer'}: start the server "
            f"with --admin-token TOKEN (or {TOKEN_ENV}) and send `Authorization: Bearer TOKEN`.",
        )
    return None
