"""Differential testing: one script run by the real Codex CLI and by the reference client, what the server saw
compared attempt by attempt."""

from .codex import CODEX_VERSION, CodexNotFound, find_codex, run_codex
from .observe import Observation, observe

__all__ = [
    "CODEX_VERSION",
    "CodexNotFound",
    "Observation",
    "find_codex",
    "observe",
    "run_codex",
]
