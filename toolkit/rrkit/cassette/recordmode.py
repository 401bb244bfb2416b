"""Record modes: vcrpy's names and meanings, in a module light enough for the pytest plugin to load at start-up."""

from __future__ import annotations

from enum import StrEnum


class RecordMode(StrEnum):
    NONE = "none"  # replay only; an unmatched request is an error
    ONCE = "once"  # record if the cassette does not exist, else replay only
    NEW_EPISODES = "new_episodes"  # replay what matches, record the rest
    ALL = "all"  # record everything (recorded exchanges are kept, never replayed)
    REWRITE = "rewrite"  # start the cassette afresh and record everything


def parse_record_mode(value: str | RecordMode) -> RecordMode:
    try:
        return RecordMode(value)
    except ValueError:
        from ..protocol.exceptions import SettingError  # here: the plugin loads this module at pytest start-up

        valid = ", ".join(mode.value for mode in RecordMode)
        raise SettingError(f"invalid record mode {value!r}; valid modes are: {valid}") from None
