"""Id generation for responses and output items; injectable so that tests can be deterministic."""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable

PREFIXES = {
    "response": "resp_",
    "message": "msg_",
    "reasoning": "rs_",
    "function_call": "fc_",
    "custom_tool_call": "ctc_",
    "web_search_call": "ws_",
    "file_search_call": "fs_",
    "image_generation_call": "ig_",
    "code_interpreter_call": "ci_",
    "mcp_call": "mcp_",
    "mcp_list_tools": "mcpl_",
    "mcp_approval_request": "mcpr_",
    "mcp_approval_response": "mcpa_",
    "local_shell_call": "lsh_",
    "local_shell_call_output": "lsho_",
    "shell_call": "sh_",
    "shell_call_output": "sho_",
    "apply_patch_call": "apc_",
    "apply_patch_call_output": "apco_",
    "computer_call": "cu_",
    "computer_call_output": "cuo_",
    "function_call_output": "fco_",
    "custom_tool_call_output": "ctco_",
    "tool_search_call": "tsc_",
    "tool_search_output": "tso_",
    "additional_tools": "at_",
    "compaction": "cmp_",
    "program": "prog_",
    "program_output": "progo_",
    "call": "call_",
    "conversation": "conv_",
    "steer": "steer_",
}


class IdGenerator:
    """Makes ids such as `resp_3f2a...`; `IdGenerator.counting()` makes `resp_1`, `resp_2`, ..."""

    def __init__(self, token: Callable[[], str] | None = None) -> None:
        self._token = token or (lambda: secrets.token_hex(12))

    @classmethod
    def counting(cls) -> IdGenerator:
        counter = itertools.count(1)
        return cls(lambda: str(next(counter)))

    def new(self, kind: str) -> str:
        return PREFIXES[kind] + self._token()
