"""Profiles: the finer rules of one kind of client (the Codex CLI, the official SDKs), per scenario, as data that
`--profile` adds to the musts; shipped ones by name, a user's own as a file."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..files.documents import read_document
from ..files.invalid import validate_document
from ..protocol.exceptions import ConformError
from ..protocol.names import did_you_mean
from ..script.loader import SCRIPT_WORDS
from .listing import PROFILES
from .scenario import Expectation, Scenario


class Profile(BaseModel):
    """A kind of client's rules beyond the musts: those it keeps in every scenario (`every`), and for each scenario
    (by name) the expectations it keeps there."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str = Field(min_length=1)
    every: list[Expectation] = Field([], description="rules judged in every scenario")
    rules: dict[str, list[Expectation]] = Field({})

    @model_validator(mode="after")
    def _some_rule(self) -> Self:
        if not self.every and not self.rules:
            raise ValueError("a profile needs rules: `every` (for every scenario) or `rules` (per scenario)")
        return self

    def check_scenarios(self, scenarios: list[Scenario], where: str) -> None:
        """Every rule names a scenario that exists (a misspelt name would judge nothing, silently)."""
        names = [scenario.name for scenario in scenarios]
        for name in self.rules:
            if name not in names:
                raise ConformError(f"{where}: rules for {name!r}, which is no scenario{did_you_mean(name, names)}")


_WORDS = SCRIPT_WORDS.adding({*Profile.model_fields, *Expectation.model_fields, "is"})


def parse_profile(data: Any, path: Path | str = "<profile>", tree: Any = None) -> Profile:
    return validate_document(Profile, data, Path(path), tree, "conformance profile", ConformError, _WORDS)


def load_profile(name_or_path: str | Path) -> Profile:
    """A shipped profile by name (`codex`, `openai-sdk`), or a profile file."""
    shipped = shipped_profiles()
    if str(name_or_path) in shipped:
        path = shipped[str(name_or_path)]
    else:
        path = Path(name_or_path)
        if not path.is_file():
            hint = did_you_mean(str(name_or_path), list(shipped))
            raise ConformError(
                f"no profile named {str(name_or_path)!r}{hint} and no such file; shipped: {', '.join(shipped)}"
            )
    data, tree = read_document(path, "profile", ConformError)
    return parse_profile(data, path, tree)


def shipped_profiles() -> dict[str, Path]:
    return {path.stem: path for path in sorted(PROFILES.glob("*.yaml"))}
