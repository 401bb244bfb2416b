"""Text cut into the pieces its deltas stream, as even as possible: all at once or one at a time."""

from __future__ import annotations


def split_chunks(text: str, chunks: int) -> list[str]:
    """Split `text` into `chunks` contiguous pieces as even as possible (fewer if the text is shorter): the first
    `len(text) % chunks` of them one character longer."""
    if chunks < 1:
        raise ValueError(f"chunks must be at least 1, got {chunks}")
    if not text:
        return [""]
    size, extra = divmod(len(text), min(chunks, len(text)))
    longer = extra * (size + 1)
    return [text[i : i + size + 1] for i in range(0, longer, size + 1)] + [
        text[i : i + size] for i in range(longer, len(text), size)
    ]
