"""Differential testing: one script run by the real Codex CLI and by the reference client, what the server saw
compared attempt by attempt.

The names below load on first use (PEP 562): running Codex needs none of the observation's imports."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from ..protocol.exceptions import CodexNotFound
    from .codex import CODEX_VERSION, find_codex, run_codex
    from .observation import Observation, observe

_HOMES = {
    "..protocol.exceptions": ("CodexNotFound",),
    ".codex": ("CODEX_VERSION", "find_codex", "run_codex"),
    ".observation": ("Observation", "observe"),
}
__all__ = ["CODEX_VERSION", "CodexNotFound", "Observation", "find_codex", "observe", "run_codex"]


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
