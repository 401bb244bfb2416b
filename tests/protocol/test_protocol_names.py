"""Names a user gives: the closest valid one suggested for a misspelt name; a string-or-list setting read as a
tuple, anything else a SettingError naming the setting."""

from __future__ import annotations

import pytest

from rrkit.protocol.exceptions import SettingError
from rrkit.protocol.names import did_you_mean, names_of, unknown_name


def test_a_misspelt_name_gets_the_closest_valid_one() -> None:
    assert did_you_mean("codx", ["codex", "openai-sdk"]) == " (did you mean 'codex'?)"
    assert did_you_mean("zzz", ["codex", "openai-sdk"]) == ""


def test_an_unknown_name_lists_the_valid_ones_only_when_none_is_close_or_when_asked() -> None:
    assert unknown_name("preset", "codx", ["codex", "lax"]) == "unknown preset 'codx' (did you mean 'codex'?)"
    assert unknown_name("preset", "zzz", ["codex", "lax"]) == "unknown preset 'zzz'; valid: codex, lax"
    listed = unknown_name("preset", "codx", ["codex", "lax"], list_valid=True)
    assert listed == "unknown preset 'codx' (did you mean 'codex'?); valid: codex, lax"


@pytest.mark.parametrize(("value", "names"), [("a", ("a",)), (["a", "b"], ("a", "b")), (("a",), ("a",)), ([], ())])
def test_a_string_or_a_list_of_strings_is_read_as_a_tuple(value: object, names: tuple[str, ...]) -> None:
    assert names_of("setting 'x'", value) == names


@pytest.mark.parametrize("value", [3, None, ["a", 1], {"a": "b"}, b"a"])
def test_anything_else_is_a_setting_error_naming_the_setting_and_the_value(value: object) -> None:
    with pytest.raises(SettingError, match=r"^setting 'x' must be a string or a list of strings, got "):
        names_of("setting 'x'", value)
