"""Scripts: what the fake server answers to each request and handshake, written in Python or in a file."""

from .builder import (
    accept_upgrade,
    custom_tool_call,
    error_event,
    failed,
    function_call,
    incomplete,
    reasoning,
    refusal,
    refuse_upgrade,
    reject,
    reply,
    text,
)
from .loader import ScriptError, default_script, load_script, parse_script
from .models import Fault, Handshake, Match, Reply, Script, Step, UsageSpec
from .plan import WARMUP_REPLY, PlannedEvent, RecordedReply, ResponsePlan, render
from .select import Answer, NoMatch, ReplySource, RequestView, ScriptState

__all__ = [
    "WARMUP_REPLY",
    "Answer",
    "Fault",
    "Handshake",
    "Match",
    "NoMatch",
    "PlannedEvent",
    "RecordedReply",
    "Reply",
    "ReplySource",
    "RequestView",
    "ResponsePlan",
    "Script",
    "ScriptError",
    "ScriptState",
    "Step",
    "UsageSpec",
    "accept_upgrade",
    "custom_tool_call",
    "default_script",
    "error_event",
    "failed",
    "function_call",
    "incomplete",
    "load_script",
    "parse_script",
    "reasoning",
    "refusal",
    "refuse_upgrade",
    "reject",
    "render",
    "reply",
    "text",
]
