"""Request bodies sent with a `Content-Encoding` (gzip, deflate, zstd): decoded to read them, forwarded as sent;
and a whole body written down readably (its JSON value, else its text, else base64)."""

from __future__ import annotations

import base64
import zlib
from collections.abc import Callable
from typing import Any

import zstandard

from .exceptions import BodyEncodingError, BodyTooLarge
from .headers import media_type
from .limits import read_at_most

ENCODINGS = ("gzip", "deflate", "zstd", "identity")
MAX_DECODED = 256 * 1024 * 1024
"""A decoded body larger than this is refused: a small compressed body must not fill the memory."""


def decode_body(raw: bytes, content_encoding: str | None, limit: int = MAX_DECODED) -> bytes:
    """The body's bytes with every listed encoding undone (last applied first), as RFC 9110 lists them; a body
    that decodes to more than `limit` bytes is a BodyTooLarge."""
    codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    body = raw
    for coding in reversed(codings):
        body = _decode_one(body, coding, limit)
    return body


def _decode_one(body: bytes, coding: str, limit: int) -> bytes:
    try:
        if coding == "identity":
            return body
        if coding in ("gzip", "x-gzip", "deflate"):
            # wbits: 47 reads gzip or zlib framing; raw deflate (what some clients send as "deflate") is -15.
            wbits = 47 if coding != "deflate" or body[:1] in (b"\x78", b"\x1f") else -15
            decoder = zlib.decompressobj(wbits)
            decoded = decoder.decompress(body, limit)
            if decoder.unconsumed_tail:
                raise BodyTooLarge(f"the {coding} body decodes to more than {limit} bytes")
            return decoded
        if coding == "zstd":
            with zstandard.ZstdDecompressor().stream_reader(body) as reader:
                decoded = read_at_most(reader, limit + 1)
            if len(decoded) > limit:
                raise BodyTooLarge(f"the zstd body decodes to more than {limit} bytes")
            return decoded
    except (zlib.error, zstandard.ZstdError) as error:
        raise BodyEncodingError(f"the body is not valid {coding} ({error}); send it as Content-Encoding says") from None
    raise BodyEncodingError(f"unsupported Content-Encoding {coding!r}; send the body as one of: {', '.join(ENCODINGS)}")


def body_form(content: bytes, content_type: str, parse: Callable[[bytes], Any]) -> dict[str, Any]:
    """A whole answer as rrkit writes one down (a cassette, the admin API): `{content_type, json}` when its type is
    JSON and `parse` gives its value (None: it cannot be kept as JSON), else `{content_type, text}` when it is
    UTF-8, else `{content_type, base64}`."""
    if media_type(content_type).endswith("json"):
        value = parse(content)
        if value is not None:
            return {"content_type": content_type, "json": value}
    try:
        return {"content_type": content_type, "text": content.decode("utf-8")}
    except UnicodeDecodeError:
        return {"content_type": content_type, "base64": base64.b64encode(content).decode("ascii")}
