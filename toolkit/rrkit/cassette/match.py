"""Matching an incoming request against recorded ones: a view of each request under a configuration (paths
ignored, strings normalized, presets merged), its digest, and a report of the closest recording."""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..protocol.exceptions import SettingError
from ..protocol.jsondiff import canonical as canonical
from ..protocol.jsondiff_text import DIFF_VALUE_LIMIT as DIFF_VALUE_LIMIT
from ..protocol.jsondiff_text import diff_lines
from ..protocol.jsondiff_text import shown as shown
from ..protocol.jsonpath import JsonPath as JsonPath
from ..protocol.lite import from_lite, instructions_in_input, without_lite_settings
from ..protocol.names import names_of, unknown_name
from ..protocol.request import INPUT_FIELD, input_items
from ..protocol.secrets import mask_request
from .format import RecordedExchange
from .presets import presets_named

VOLATILE_FIELDS: tuple[str, ...] = ("client_metadata", "prompt_cache_key", "metadata", "user", "safety_identifier")
"""Fields left out of matching by default: they change from run to run without changing what the model sees."""
VOLATILE_ITEM_KEYS: tuple[str, ...] = ("id",)
"""Keys of input items left out of matching by default (server-issued ids)."""
PLACEHOLDER = "<normalized>"
"""What a `normalize` regex match (or each of its groups) is replaced with before requests are compared."""

# -- normalizing strings ----------------------------------------------------------------------------------------


def substitute(pattern: re.Pattern[str], text: str) -> str:
    """`text` with each match of `pattern` replaced by the placeholder; with capture groups, only the groups
    are replaced, so the rest of the match still counts."""
    if not pattern.groups:
        return pattern.sub(PLACEHOLDER, text)

    def groups_only(match: re.Match[str]) -> str:
        whole, start = match.group(0), match.start()
        parts, position = [], 0
        for group in range(1, pattern.groups + 1):
            begin, end = match.span(group)
            if begin < 0 or begin - start < position:  # did not take part, or inside a group already replaced
                continue
            parts += [whole[position : begin - start], PLACEHOLDER]
            position = end - start
        parts.append(whole[position:])
        return "".join(parts)

    return pattern.sub(groups_only, text)


def _normalized(value: Any, patterns: tuple[re.Pattern[str], ...]) -> Any:
    if isinstance(value, str):
        for pattern in patterns:
            value = substitute(pattern, value)
        return value
    if isinstance(value, dict):
        return {key: _normalized(item, patterns) for key, item in value.items()}
    if isinstance(value, list):
        return [_normalized(item, patterns) for item in value]
    return value


def _compile(path: str, pattern: str) -> re.Pattern[str]:
    if not isinstance(pattern, str):
        raise SettingError(f"normalize {path!r}: a regex is a string, got {type(pattern).__name__}")
    try:
        return re.compile(pattern)
    except re.error as error:
        where = f" at position {error.pos}" if error.pos is not None else ""
        raise SettingError(f"normalize {path!r}: invalid regex {pattern!r}: {error.msg}{where}") from None


# -- comparing values -------------------------------------------------------------------------------------------


def digest(value: Any) -> bytes:
    """A 128-bit digest of a value's canonical JSON: the key replay looks recorded requests up by."""
    return hashlib.blake2b(canonical(value), digest_size=16).digest()


# -- the configuration ------------------------------------------------------------------------------------------

SETTINGS: tuple[str, ...] = (
    "on",
    "fields",
    "ignore",
    "item_keys",
    "normalize",
    "ignore_headers",
    "preset",
    "presets",
    "allow_repeats",
)
"""The keys `MatchConfig.from_settings` accepts."""


@dataclass(frozen=True)
class MatchConfig:
    """How requests are matched: on the logical request (default) or the wire request, and what counts.

    `fields` limits matching to those top-level fields; `ignore` leaves paths out (`client_metadata`,
    `input[*].output`, `tools[*].description`); `item_keys` are keys of input items left out (ids by default);
    `normalize` is (path, regex) pairs: every string at or under the path has each match (or each capture
    group of it) replaced by a placeholder, so the rest of the string still counts. `ignore_headers` are
    header names (`x-stainless-*` patterns) left out wherever headers are compared (snapshots). `presets`
    add their entries to all of these (see `presets.PRESETS`). With `allow_repeats` a recorded exchange may
    answer more than once.
    """

    on: Literal["logical", "wire"] = "logical"
    fields: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = VOLATILE_FIELDS
    item_keys: tuple[str, ...] = VOLATILE_ITEM_KEYS
    normalize: tuple[tuple[str, str], ...] = ()
    ignore_headers: tuple[str, ...] = ()
    presets: tuple[str, ...] = ()
    allow_repeats: bool = False
    _compiled: _Compiled = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.on not in ("logical", "wire"):
            raise SettingError(f"invalid match 'on' {self.on!r}: it is 'logical' or 'wire'")
        for name, value in _settled(self).items():  # a frozen dataclass: its own inputs, made tuples once
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_compiled", _Compiled.of(self))

    @classmethod
    def preset(cls, *names: str, **settings: Any) -> MatchConfig:
        """The default configuration with these presets merged in, e.g. `MatchConfig.preset("codex")`."""
        return cls(presets=names, **settings)

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> MatchConfig:
        """From plain data (a marker, a config file): the keys of `SETTINGS`. `ignore` adds to the volatile
        defaults; `normalize` maps a path to a regex or a list of them; `preset` / `presets` name presets."""
        if not isinstance(settings, Mapping):
            raise SettingError(f"match settings are a mapping of {', '.join(SETTINGS)}; got {type(settings).__name__}")
        for key in settings:
            if key not in SETTINGS:
                raise SettingError(unknown_name("match setting", str(key), SETTINGS))
        options: dict[str, Any] = {}
        if "on" in settings:
            options["on"] = settings["on"]
        if settings.get("fields") is not None:
            options["fields"] = _names("fields", settings["fields"])
        if "ignore" in settings:
            options["ignore"] = (*VOLATILE_FIELDS, *_names("ignore", settings["ignore"]))
        for key in ("item_keys", "ignore_headers"):
            if key in settings:
                options[key] = _names(key, settings[key])
        options["presets"] = (
            *_names("preset", settings.get("preset", ())),
            *_names("presets", settings.get("presets", ())),
        )
        if "normalize" in settings:
            options["normalize"] = _normalize_setting(settings["normalize"])
        if "allow_repeats" in settings:
            if not isinstance(settings["allow_repeats"], bool):
                raise SettingError(f"match setting 'allow_repeats' is true or false, got {settings['allow_repeats']!r}")
            options["allow_repeats"] = settings["allow_repeats"]
        return cls(**options)

    @property
    def ignored_headers(self) -> tuple[str, ...]:
        """Header name patterns (lower case, `fnmatch` style) left out wherever headers are compared."""
        return self._compiled.headers

    def header_ignored(self, name: str) -> bool:
        return header_named(name, self._compiled.headers)

    def view(self, request: Mapping[str, Any] | None) -> dict[str, Any]:
        """What counts of a request: chosen fields, ignored paths left out, strings normalized, credentials
        masked (rrkit.protocol.secrets)."""
        if not request:
            return {}
        compiled, fields = self._compiled, self.fields
        top = compiled.top
        chosen: dict[str, Any] = {
            name: value for name, value in request.items() if name not in top and (fields is None or name in fields)
        }
        for path in compiled.paths:
            chosen = path.drop(chosen)
        for path, patterns in compiled.rules:
            chosen = path.rewrite(chosen, functools.partial(_normalized, patterns=patterns))
        masked: dict[str, Any] = mask_request(chosen, SECRET_MARK)  # a recording's credentials are redacted
        return masked


@dataclass(frozen=True)
class _Compiled:
    """A configuration as matching applies it, presets merged in: built once, when the configuration is made (so
    a bad path or regex fails there)."""

    top: frozenset[str]  # top-level fields left out whole
    paths: tuple[JsonPath, ...]  # the other ignore paths
    rules: tuple[tuple[JsonPath, tuple[re.Pattern[str], ...]], ...]  # normalize: a path and its regexes
    headers: tuple[str, ...]  # lower-case `fnmatch` patterns

    @classmethod
    def of(cls, config: MatchConfig) -> _Compiled:
        chosen = presets_named(config.presets)
        ignore = [*config.ignore, *(f"{INPUT_FIELD}[*].{key}" for key in config.item_keys)]
        paths = _ignore_paths([*ignore, *(entry.target for preset in chosen for entry in preset.ignore)])
        top = frozenset(path.text for path in paths if len(path.steps) == 1 and path.steps[0])
        pairs = [*config.normalize, *((entry.path, entry.pattern) for preset in chosen for entry in preset.normalize)]
        headers = [*config.ignore_headers, *(entry.target for preset in chosen for entry in preset.headers)]
        return cls(top, tuple(path for path in paths if path.text not in top), _rules(pairs), _lower(headers))


def _settled(config: MatchConfig) -> dict[str, Any]:
    """The list settings as tuples (a single string as a one-name tuple), checked."""
    names = ("ignore", "item_keys", "ignore_headers", "presets", *(("fields",) if config.fields is not None else ()))
    settled: dict[str, Any] = {name: _names(name, getattr(config, name)) for name in names}
    settled["normalize"] = tuple((path, regex) for path, regex in config.normalize)
    return settled


def _lower(names: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name.lower() for name in names))


def _ignore_paths(texts: Sequence[str]) -> list[JsonPath]:
    return [JsonPath.parse(text, "ignore path") for text in dict.fromkeys(texts)]


def _rules(pairs: Sequence[tuple[str, str]]) -> tuple[tuple[JsonPath, tuple[re.Pattern[str], ...]], ...]:
    """(path, regex) pairs grouped by path, every regex compiled before any path is parsed."""
    grouped: dict[str, list[re.Pattern[str]]] = {}
    for path, regex in pairs:
        grouped.setdefault(path, []).append(_compile(path, regex))
    return tuple((JsonPath.parse(path, "normalize path"), tuple(patterns)) for path, patterns in grouped.items())


SECRET_MARK = "\x00secret"
"""What a credential is in a request's match view, recorded (already redacted) and incoming alike."""


def header_named(name: str, patterns: Sequence[str]) -> bool:
    """Whether a header name matches one of these lower-case `fnmatch` patterns (`x-stainless-*`)."""
    return any(fnmatch.fnmatchcase(name.lower(), pattern) for pattern in patterns)


def _names(key: str, value: Any) -> tuple[str, ...]:
    return names_of(f"match setting {key!r}", value)


def _normalize_setting(value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping):
        raise SettingError(f"match setting 'normalize' maps a path to a regex (or a list of them), got {value!r}")
    return tuple(
        (str(path), regex)
        for path, regexes in value.items()
        for regex in names_of(f"match setting 'normalize' at {path!r}", regexes)
    )


def match_config_from_cli(
    ignore: Sequence[str] = (), normalize: Sequence[str] = (), presets: Sequence[str] = (), allow_repeats: bool = False
) -> MatchConfig:
    """From command-line strings: ignore paths (added to the volatile defaults), `PATH=REGEX` normalizations
    (split at the first `=`), preset names. Raises SettingError saying what is wrong."""
    pairs = []
    for entry in normalize:
        path, equals, regex = entry.partition("=")
        if not equals or not path or not regex:
            raise SettingError(f"normalize {entry!r}: expected PATH=REGEX, e.g. 'input[*].output=Wall time: ([0-9.]+)'")
        pairs.append((path, regex))
    return MatchConfig(
        ignore=(*VOLATILE_FIELDS, *ignore), normalize=tuple(pairs), presets=tuple(presets), allow_repeats=allow_repeats
    )


# -- comparing requests -----------------------------------------------------------------------------------------


@dataclass
class MatchResult:
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    diffs: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed


_MISSING = object()


def compare(
    recorded: Mapping[str, Any] | None, incoming: Mapping[str, Any] | None, config: MatchConfig, *, explain: bool = True
) -> MatchResult:
    """One matcher per top-level field of either request's view; with `explain`, a diff of each failed one."""
    old, new = config.view(recorded), config.view(incoming)
    result = MatchResult()
    for name in sorted(set(old) | set(new)):
        before, after = old.get(name, _MISSING), new.get(name, _MISSING)
        if before is not _MISSING and after is not _MISSING and canonical(before) == canonical(after):
            result.passed.append(name)
        else:
            result.failed.append(name)
            if explain:
                result.diffs[name] = json_diff(old.get(name), new.get(name), name)
    return result


def json_diff(recorded: Any, incoming: Any, name: str = "") -> list[str]:
    """Human-readable differences (recorded -> incoming), one line each, with paths like `input[2]['content']`
    rooted at `name`, and both values shown whole (bounded) on that line (`jsondiff_text.diff_lines`)."""
    return diff_lines(recorded, incoming, name or "value")


def logical_content(request: Mapping[str, Any] | None) -> dict[str, Any]:
    """A logical request as standard-encoded content: a Lite request decoded (`from_lite`), the input as a list
    of items with the instructions leading it (`lite.instructions_in_input`), and what the encodings set
    differently (`lite.without_lite_settings`) left out."""
    standard = instructions_in_input(from_lite(request or {}))
    if INPUT_FIELD in standard:
        standard[INPUT_FIELD] = input_items(standard)
    return without_lite_settings(standard)


def logical_content_differences(first: RecordedExchange, second: RecordedExchange) -> list[str]:
    """How two exchanges' logical requests differ in what they carry, whichever encoding (standard or Lite)
    each used: one line per difference, empty when both carry the same logical content."""
    return json_diff(logical_content(first.logical_request), logical_content(second.logical_request), "logical")
