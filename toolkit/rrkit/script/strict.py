"""The base of every script model: unknown fields refused, validators built on first use."""

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    # Each model's validator is built when the model first validates, not at import: `rrkit serve` starts sooner.
    model_config = ConfigDict(extra="forbid", defer_build=True)
