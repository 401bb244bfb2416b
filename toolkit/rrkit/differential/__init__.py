"""Differential testing: one script run by the real Codex CLI and by the reference client, what the server saw
compared attempt by attempt."""

from .codex import CODEX_VERSION, INSTALL_HINT, CodexNotFound, CodexRun, find_codex, run_codex
from .observe import Attempt, Observation, WaitRanges, observe
from .settings import Budgets

__all__ = [
    "CODEX_VERSION",
    "INSTALL_HINT",
    "Attempt",
    "Budgets",
    "CodexNotFound",
    "CodexRun",
    "Observation",
    "WaitRanges",
    "find_codex",
    "observe",
    "run_codex",
]
