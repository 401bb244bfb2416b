"""A response's `usage` object, and the cheap token estimate its default figures come from."""

from __future__ import annotations

from typing import Any


def estimate_tokens(value: Any) -> int:
    """A stable, cheap token estimate (about 4 characters a token) for default usage figures."""
    return max(1, len(str(value)) // 4) if value else 0


def usage(
    input_tokens: int = 0,
    output_tokens: int = 0,
    *,
    cached_tokens: int = 0,
    reasoning_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> dict[str, Any]:
    """A `usage` object with every field the official SDK requires."""
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached_tokens, "cache_write_tokens": cache_write_tokens},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": input_tokens + output_tokens,
    }
