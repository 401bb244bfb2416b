"""The options of a test that uses an rrkit fixture: `RRKitConfig` (the project's), the `rrkit` marker's arguments
(checked), and what they come to for the test (`FixtureOptions`: its cassette, record mode, script, matching)."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import pytest

from .cassette.match import MatchConfig
from .cassette.recordmode import RecordMode, parse_record_mode
from .protocol.exceptions import ScriptError, SettingError
from .protocol.jsonpath import JsonPath
from .protocol.names import names_of, unknown_name
from .protocol.plan import Chaos
from .script.loader import load_script
from .script.models import Script
from .script.shipped import FIXTURE_PREFIX

_KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "upstream": ((str, type(None)), "a URL or None"),
    "cassette_dir": ((str, os.PathLike), "a folder path"),
    "time_scale": ((int, float), "a number"),
    "assert_all_used": ((bool,), "True or False"),
    "assert_all_matched": ((bool,), "True or False"),
    "assert_all_played": ((bool,), "True or False"),
    "match": ((MatchConfig, Mapping, type(None)), "a MatchConfig, a mapping of match settings, or None"),
    "allow_repeats": ((bool, type(None)), "True, False or None"),
    "chaos": ((Chaos, str, type(None)), "a Chaos, 'drop=P,stall=P,rate_limit=P,retry_after=S,seed=N', or None"),
}


@dataclass(frozen=True)
class RRKitConfig(Mapping[str, Any]):
    """Project-wide settings of the rrkit fixtures: what the `rrkit_config` fixture returns. Override the fixture
    in a conftest.py returning `{**rrkit_config, "record_mode": "once"}` (a mapping over the defaults, checked
    by `RRKitConfig.of`) or `dataclasses.replace(rrkit_config, record_mode="once")`."""

    record_mode: RecordMode = RecordMode.NONE
    upstream: str | None = None  # a URL to record from; None records from the test's own script
    cassette_dir: str | os.PathLike[str] = "cassettes"  # relative to the test file's folder
    time_scale: float = 0.0
    redact_headers: tuple[str, ...] = ()
    redact_paths: tuple[str, ...] = ()
    assert_all_used: bool = True
    assert_all_matched: bool = True
    assert_all_played: bool = True  # a replay-only cassette fails the test if a recorded exchange was never requested
    match: MatchConfig | Mapping[str, Any] | None = None  # a MatchConfig, or settings for MatchConfig.from_settings
    match_preset: str | tuple[str, ...] | None = None  # preset name(s) added to `match`, e.g. "codex"
    allow_repeats: bool | None = None  # True lets a recorded exchange answer more than once (overrides `match`)
    chaos: Chaos | str | None = None  # seeded random drops, stalls and 429s: "drop=0.02,rate_limit=0.05,seed=7"

    def __post_init__(self) -> None:
        """Check every value, so that a bad one fails naming its key; names lists become tuples."""
        try:
            object.__setattr__(self, "record_mode", parse_record_mode(self.record_mode))
        except SettingError as error:
            raise SettingError(f"rrkit_config key 'record_mode': {error}") from None
        for key, (kinds, what) in _KINDS.items():
            value = getattr(self, key)
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                raise SettingError(f"rrkit_config key {key!r} must be {what}, got {value!r}")
        for key in ("redact_headers", "redact_paths"):
            object.__setattr__(self, key, names_of(f"rrkit_config key {key!r}", getattr(self, key)))
        for path in self.redact_paths:
            JsonPath.parse(path, "rrkit_config key 'redact_paths': path")
        if self.match_preset is not None:
            object.__setattr__(self, "match_preset", names_of("rrkit_config key 'match_preset'", self.match_preset))
        if isinstance(self.chaos, str):
            try:
                object.__setattr__(self, "chaos", Chaos.parse(self.chaos))
            except SettingError as error:
                raise SettingError(f"rrkit_config key 'chaos': {error}") from None

    @classmethod
    def of(cls, settings: RRKitConfig | Mapping[str, Any]) -> RRKitConfig:
        """`settings` as an RRKitConfig: a mapping's keys over the defaults; SettingError naming an unknown key
        (with the closest valid one) or a bad value."""
        if isinstance(settings, RRKitConfig):
            return settings
        if not isinstance(settings, Mapping):
            raise SettingError(f"rrkit_config must return an RRKitConfig or a mapping, got {settings!r}")
        problem = _unknown_keys(settings, CONFIG_KEYS, "rrkit_config key")
        if problem:
            raise SettingError(problem)
        return cls(**settings)

    def __getitem__(self, key: str) -> Any:
        if key not in CONFIG_KEYS:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(CONFIG_KEYS)

    def __len__(self) -> int:
        return len(CONFIG_KEYS)


CONFIG_KEYS = tuple(field.name for field in fields(RRKitConfig))
"""The keys of `rrkit_config`."""


DEFAULT_CONFIG = RRKitConfig()
"""What `rrkit_config` returns unless a conftest overrides it (frozen, so one serves every test)."""


MARKER_KEYS = (
    "script",
    "cassette",
    "record_mode",
    "upstream",
    "assert_all_used",
    "assert_all_matched",
    "assert_all_played",
    "match",
    "match_preset",
    "allow_repeats",
    "chaos",
)
"""The arguments `@pytest.mark.rrkit(...)` accepts."""
_MARKER_KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "script": ((str, os.PathLike), "a script file path (relative to the test file or the rootdir) or 'fixture:NAME'"),
    "cassette": ((str, bool), "a cassette name, or True for cassettes/<module>/<test>.json"),
    "record_mode": ((str,), "a record mode name"),
    "match_preset": ((str, tuple, list, type(None)), "a preset name or a list of names"),
    **{key: _KINDS[key] for key in ("upstream", "assert_all_used", "assert_all_matched", "assert_all_played")},
    **{key: _KINDS[key] for key in ("match", "allow_repeats", "chaos")},
}
"""What each marker argument must be: a typo'd value (`assert_all_used="no"`) fails instead of being truthy."""
_MAX_NAME = 100


def safe_name(name: str) -> str:
    """A file name from a test name: safe characters only, bounded length, parametrized ids kept distinct."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "test"
    if len(cleaned) <= _MAX_NAME:
        return cleaned
    digest = hashlib.sha1(name.encode()).hexdigest()[:12]
    return f"{cleaned[: _MAX_NAME - 13]}-{digest}"


@dataclass
class FixtureOptions:
    """What the marker and `rrkit_config` come to for one test (the teardown checks may be relaxed by the test)."""

    test: str
    cassette: Path | None
    mode: RecordMode
    upstream: str | None
    config: RRKitConfig
    assert_all_used: bool
    assert_all_matched: bool
    assert_all_played: bool
    match: MatchConfig
    script: Path | str | None = None  # a script file, or `fixture:NAME`, from the marker's `script=`
    script_given: str = ""  # `script=` as the marker says it, for messages
    chaos: Chaos | None = None


def _unknown_keys(given: Mapping[str, Any], valid: tuple[str, ...], where: str) -> str | None:
    return next((unknown_name(where, str(key), valid) for key in given if key not in valid), None)


def _marked_and_config(
    request: pytest.FixtureRequest, config: RRKitConfig | Mapping[str, Any]
) -> tuple[dict[str, Any], RRKitConfig]:
    """The test's `rrkit` marker arguments (checked for unknown keys) and its `rrkit_config`, checked."""
    marker = request.node.get_closest_marker("rrkit")
    marked: dict[str, Any] = dict(marker.kwargs) if marker else {}
    problem = _unknown_keys(marked, MARKER_KEYS, "@pytest.mark.rrkit argument")
    if problem is None and marker is not None and marker.args:
        problem = f"@pytest.mark.rrkit takes keyword arguments only ({', '.join(MARKER_KEYS)}), got {marker.args!r}"
    if problem is None:
        problem = next((_marker_value_problem(key, value) for key, value in marked.items()), None)
    if problem is None:
        try:
            return marked, RRKitConfig.of(config)
        except SettingError as error:
            problem = str(error)
    raise pytest.UsageError(f"{request.node.nodeid}: {problem}")


def _marker_value_problem(key: str, value: object) -> str | None:
    kinds, what = _MARKER_KINDS[key]
    if isinstance(value, kinds) and (not isinstance(value, bool) or bool in kinds):
        return None
    return f"@pytest.mark.rrkit argument {key!r} must be {what}, got {value!r}"


def _script_reference(request: pytest.FixtureRequest, value: object) -> Path | str | None:
    """The marker's `script=`: `fixture:NAME` as given; a path tried next to the test file, then under the
    rootdir; a UsageError naming the marker, the test and the places looked in when it is in neither."""
    if value is None:
        return None
    text = str(value)
    if text.startswith(FIXTURE_PREFIX):
        return text
    path = Path(text)
    places = (
        [path] if path.is_absolute() else [Path(str(request.node.path)).parent / path, request.config.rootpath / path]
    )
    for place in places:
        if place.is_file():
            return place
    raise pytest.UsageError(
        f"{request.node.nodeid}: @pytest.mark.rrkit(script={text!r}): no such file (looked for "
        f"{' and '.join(str(place) for place in places)}); give a path relative to the test file or the rootdir, "
        "or `fixture:NAME` for a shipped script (`rrkit fixtures` lists them)"
    )


def script_of(options: FixtureOptions) -> Script:
    """The test's script: the marker's `script=` file loaded, else an empty one for the test to fill."""
    if options.script is None:
        return Script()
    try:
        return load_script(options.script)
    except ScriptError as error:
        raise pytest.UsageError(
            f"{options.test}: @pytest.mark.rrkit(script={options.script_given!r}): {error}"
        ) from None


_DEFAULT_MATCH = MatchConfig()  # frozen: the configuration of every test that sets none, built once


def match_of(request: pytest.FixtureRequest, config: RRKitConfig | Mapping[str, Any]) -> MatchConfig:
    """The test's matching configuration (what `rrkit_snapshot` leaves out of its snapshots, too)."""
    marked, checked = _marked_and_config(request, config)
    return _match(request.node.nodeid, marked, checked)


def _match(test: str, marked: dict[str, Any], config: RRKitConfig) -> MatchConfig:
    """The matching configuration: the marker's `match` over rrkit_config's (two mappings merge key by key),
    then the `match_preset` and `allow_repeats` shortcuts (the marker's over rrkit_config's)."""
    configured, given = config.match, marked.get("match")
    if isinstance(configured, Mapping) and isinstance(given, Mapping):
        given = {**configured, **given}
    elif given is None:
        given = configured
    try:
        if isinstance(given, MatchConfig):
            match = given
        elif given is None:
            match = _DEFAULT_MATCH
        elif isinstance(given, Mapping):
            match = MatchConfig.from_settings(given)
        else:
            raise SettingError(f"`match` is a MatchConfig or a mapping of settings, got {given!r}")
        preset = marked.get("match_preset", config.match_preset)
        if preset:
            match = replace(match, presets=(*match.presets, *((preset,) if isinstance(preset, str) else preset)))
        repeats = marked.get("allow_repeats", config.allow_repeats)
        if repeats is not None:
            match = replace(match, allow_repeats=bool(repeats))
    except SettingError as error:
        raise pytest.UsageError(f"{test}: rrkit match configuration: {error}") from None
    return match


def options_of(request: pytest.FixtureRequest, config: RRKitConfig | Mapping[str, Any]) -> FixtureOptions:
    """The test's options: its marker's arguments over `rrkit_config` (the command line's over both); a
    UsageError naming the test and the argument at fault."""
    marked, checked = _marked_and_config(request, config)
    cli_mode = request.config.getoption("--rrkit-record-mode", default=None)
    if cli_mode is None and request.config.getoption("--rrkit-update", default=False):
        cli_mode = RecordMode.REWRITE  # --rrkit-update: record every cassette afresh (and refresh snapshots)
    try:
        mode = parse_record_mode(cli_mode or marked.get("record_mode") or checked.record_mode)
    except SettingError as error:
        raise pytest.UsageError(f"{request.node.nodeid}: {error}") from None
    cassette = None
    if "cassette" in marked or "record_mode" in marked:
        folder = Path(str(request.node.path)).parent / checked.cassette_dir / safe_name(request.node.module.__name__)
        name = marked.get("cassette")
        stem = safe_name(str(name)) if isinstance(name, str) else safe_name(request.node.name)
        cassette = folder / (stem if stem.endswith(".json") else f"{stem}.json")
    return FixtureOptions(
        test=request.node.nodeid,
        cassette=cassette,
        mode=mode,
        upstream=request.config.getoption("--rrkit-upstream", default=None)
        or marked.get("upstream")
        or checked.upstream,
        config=checked,
        assert_all_used=bool(marked.get("assert_all_used", checked.assert_all_used)),
        assert_all_matched=bool(marked.get("assert_all_matched", checked.assert_all_matched)),
        assert_all_played=bool(marked.get("assert_all_played", checked.assert_all_played)),
        match=_match(request.node.nodeid, marked, checked),
        script=_script_reference(request, marked.get("script")),
        script_given=str(marked.get("script", "")),
        chaos=_chaos(request.node.nodeid, marked.get("chaos", checked.chaos)),
    )


def _chaos(test: str, given: Chaos | str | None) -> Chaos | None:
    try:
        return Chaos.parse(given) if isinstance(given, str) else given
    except SettingError as error:
        raise pytest.UsageError(f"{test}: rrkit marker argument 'chaos': {error}") from None
