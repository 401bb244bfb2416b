"""Every exception rrkit raises for its user to handle, in one tree under `RRKitError` (one `except` catches them
all). Each names the file, field, request or setting at fault and says what to do::

    RRKitError
    ├── FileKindError            a file of rrkit's that cannot be used (`seemed`: what it looks like instead)
    │   ├── ScriptError          ... a script (scenario, profile) file
    │   └── CassetteError        ... a cassette file that cannot be used, read or written
    │       └── LockHeld         ... another process writing cassettes in the folder for too long
    ├── ConformError             a conformance scenario or profile that cannot be used
    ├── SettingError             an option, keyword argument or configuration key that cannot be used
    │   └── LimitError           ... a `--limit` / RRKIT_LIMITS setting that cannot be read
    ├── BodyEncodingError        a request body that cannot be decoded as its Content-Encoding says
    │   └── BodyTooLarge         ... or that decodes past the decoded-body limit
    ├── SSEMessageTooLong        an SSE line or message past the decoder's limit
    ├── BadRequest               a request body or frame the API answers with 400 (its field's path in `param`)
    │   ├── UnsafeJSON           ... JSON it cannot take: not UTF-8, NaN, nested too deep (rrkit.protocol.jsontext)
    │   └── BadPage              ... a list request's page query (rrkit.protocol.resources)
    ├── StreamCut                raised by a plan's events (rrkit.protocol.plan): cut the client's stream alike
    ├── NotAnAnswer              a tool handler's result that cannot answer its call (rrkit.protocol.calls)
    ├── TooManySamples           a turn that kept sampling past its limit
    ├── CodexNotFound            no Codex CLI of the version asked for
    ├── ServerUnreachable        nothing answers at the server a command was pointed at
    ├── AppServerError           `codex app-server` answered with an error, or stopped answering
    └── ModelClientError         the reference client's errors (rrkit.client.errors: retryable or not, by kind)

Defined here but those whose line names another module (`StreamCut`, with the plans it cuts). The file and setting
errors are ValueErrors too, `CodexNotFound` a LookupError, `ServerUnreachable` a ConnectionError and
`AppServerError` a RuntimeError, as the standard library's callers expect."""

from __future__ import annotations


class RRKitError(Exception):
    """The root of every error rrkit raises for its user to handle: a script, a cassette, a client run."""


class FileKindError(RRKitError, ValueError):
    """A file of rrkit's that cannot be used; `seemed` is the kind of rrkit file its content looks like
    (`script`, `cassette`), when the loader got as far as parsing it: a file given where another kind is
    expected is named as such from that one parse, never read again."""

    def __init__(self, message: str, *, seemed: str | None = None) -> None:
        super().__init__(message)
        self.seemed = seemed


class ScriptError(FileKindError):
    """A script file that cannot be used; the message says which file, where in it, and what is wrong."""


class CassetteError(FileKindError):
    """A cassette that cannot be used; the message names the file, the place in it and the problem."""


class LockHeld(CassetteError):
    """Another process held a folder's cassette lock past the timeout; the message names the folder and the lock."""


class ConformError(RRKitError, ValueError):
    """A scenario file (or name) that cannot be used; the message names the file, the place and the problem."""


class SettingError(RRKitError, ValueError):
    """A setting that cannot be used (a match setting, a record mode, a view, a relay's URL, a plugin key): the
    message names it and says what to give."""


class LimitError(SettingError):
    """A limit setting that cannot be used; the message names it and says what to give."""


class BodyEncodingError(RRKitError, ValueError):
    """A body that cannot be decoded as its `Content-Encoding` says; the message says what to do."""


class BodyTooLarge(BodyEncodingError):
    """A body that decodes to more bytes than the limit."""


class SSEMessageTooLong(RRKitError, ValueError):
    """A stream whose unfinished line or message outgrew the decoder's `max_message` (it may never end)."""


MISSING_REQUIRED_PARAMETER = "missing_required_parameter"
INVALID_TYPE = "invalid_type"
INVALID_VALUE = "invalid_value"


class BadRequest(RRKitError, ValueError):
    """A body or frame the API would answer with 400: the message names the field, `param` is its path."""

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message, self.param, self.code = message, param, code

    @classmethod
    def missing(cls, param: str) -> BadRequest:
        """`Missing required parameter: 'input[2].call_id'.`, as the service words it."""
        return cls(f"Missing required parameter: '{param}'.", param=param, code=MISSING_REQUIRED_PARAMETER)

    @classmethod
    def wrong_type(cls, shown: str, expected: str, got: str, param: str | None) -> BadRequest:
        """`Invalid type for 'stream': expected a boolean, but got a string instead.` (`got`: the JSON type's
        name, as `request.json_type` says it)."""
        message = f"Invalid type for {shown}: expected {expected}, but got {got} instead."
        return cls(message, param=param, code=INVALID_TYPE)


class NotAnAnswer(RRKitError, ValueError):
    """A tool handler's result that cannot answer its call (the message names the kind of call, its id, and what
    would)."""


class TooManySamples(RRKitError, RuntimeError):
    """The model kept asking for tool calls (or `end_turn: false`) beyond the turn's sampling limit."""


class CodexNotFound(RRKitError, LookupError):
    """No Codex CLI of the pinned version where it was looked for."""


class ServerUnreachable(RRKitError, ConnectionError):
    """Nothing accepts connections at the URL a command was given (`rrkit conform --server`)."""


class AppServerError(RRKitError, RuntimeError):
    """The app server answered a request with an error, or stopped answering."""
