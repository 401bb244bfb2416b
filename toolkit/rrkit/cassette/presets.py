"""Built-in matching presets: what a known client puts in its requests that varies by run, machine or day."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..protocol.exceptions import SettingError
from ..protocol.names import unknown_name


@dataclass(frozen=True)
class Left:
    """Something left out of comparisons: a JSON path, or a header name (`fnmatch` pattern)."""

    target: str
    why: str


@dataclass(frozen=True)
class Rewrite:
    """Every string at or under `path` has each match of `pattern` (or of its groups) replaced by a placeholder."""

    path: str
    pattern: str
    why: str


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    ignore: tuple[Left, ...] = ()
    normalize: tuple[Rewrite, ...] = ()
    headers: tuple[Left, ...] = ()


OPENAI_SDK = Preset(
    "openai-sdk",
    "The official OpenAI SDKs (Stainless-generated): their platform headers.",
    headers=(
        Left(
            "x-stainless-*",
            "os, arch, runtime and its version, package version, lang, retry count, read timeout: the machine, "
            "the SDK release and the attempt, not the request",
        ),
    ),
)

_CONTEXT = "input[*].content[*].text"  # the text parts of messages: environment context, skills, permissions

CODEX = Preset(
    "codex",
    "The Codex CLI (checked against 0.169.0): its session ids, and what its prompt and tool outputs say about the "
    "directory, CODEX_HOME, day and machine of the run.",
    ignore=(
        Left("prompt_cache_key", "the session id, new in every run"),
        Left("client_metadata", "installation, session, window and turn ids, and a start time in ms"),
    ),
    normalize=(
        Rewrite("input[*].output", r"(?m)^Chunk ID: (\S+)$", "a random id per tool output"),
        Rewrite("input[*].output", r"(?m)^Wall time: ([0-9.]+) seconds$", "how long the command took"),
        Rewrite(_CONTEXT, r"<cwd>(.*?)</cwd>", "the directory Codex runs in"),
        Rewrite(_CONTEXT, r"<root>(.*?)</root>", "the directory again, as the workspace root"),
        Rewrite(_CONTEXT, r"<path>([^<]*?)(?:/\.[\w-]+)?</path>", "sandbox paths under the directory"),
        Rewrite(_CONTEXT, r"(?m)The writable roots are (.*)$", "the directory in the workspace-write permissions"),
        Rewrite(_CONTEXT, r"(?m)^- `r\d+` = `([^`\n]*)/skills/", "CODEX_HOME, in the skill roots table"),
        Rewrite(_CONTEXT, r"<current_date>(.*?)</current_date>", "the day of the run"),
        Rewrite(_CONTEXT, r"<timezone>(.*?)</timezone>", "the machine's time zone (/etc/localtime)"),
        Rewrite(_CONTEXT, r"<shell>(.*?)</shell>", "the user's shell"),
    ),
    headers=(
        Left("session-id", "the session id, new in every run"),
        Left("thread-id", "the thread id, the session id again"),
        Left("x-client-request-id", "the session id again"),
        Left("x-codex-window-id", "the session id and a window number"),
        Left("x-codex-turn-metadata", "JSON of the session, turn and installation ids and the turn's start time"),
        Left("user-agent", "the OS release, architecture and $TERM of the machine"),
        Left("content-length", "follows the lengths of the paths in the prompt"),
        Left("chatgpt-account-id", "the account, with ChatGPT sign-in"),
    ),
)

PRESETS: dict[str, Preset] = {preset.name: preset for preset in (CODEX, OPENAI_SDK)}
"""The built-in presets by name."""
NO_PRESET = "none"
"""Given as a preset: none, not even the one a cassette stores."""

PLATFORM_HEADERS: tuple[str, ...] = tuple(left.target for left in OPENAI_SDK.headers)
"""Header patterns whose values say which machine and SDK release sent a request: masked in every snapshot, so
that a snapshot holds on another OS or SDK version."""


def detect_presets(headers: Iterable[Mapping[str, str]]) -> tuple[str, ...]:
    """The presets of the clients that sent requests (and upgrades) with these headers, in `PRESETS` order:
    `codex` where the Codex CLI names itself (`originator` or `user-agent`: codex_exec, codex_cli_rs, ...),
    `openai-sdk` where an official SDK sends its `x-stainless-*` headers."""
    found = set()
    for each in headers:
        lowered = {name.lower(): value for name, value in each.items()}
        if any(lowered.get(name, "").lower().startswith("codex") for name in ("originator", "user-agent")):
            found.add(CODEX.name)
        elif any(name.startswith("x-stainless-") for name in lowered):
            found.add(OPENAI_SDK.name)
    return tuple(name for name in PRESETS if name in found)


def presets_named(names: Sequence[str]) -> list[Preset]:
    """The presets these names give (`none` gives none)."""
    return [preset_named(name) for name in names if name != NO_PRESET]


def preset_named(name: str) -> Preset:
    if name not in PRESETS:
        raise SettingError(unknown_name("match preset", name, [*sorted(PRESETS), NO_PRESET], list_valid=True))
    return PRESETS[name]
