"""Text cut into the pieces its deltas stream, as even as possible: all at once or one at a time."""

from __future__ import annotations

from collections.abc import Iterator


def split_chunks(text: str, chunks: int) -> list[str]:
    """Split `text` into `chunks` contiguous pieces as even as possible (fewer if the text is shorter)."""
    return list(iter_chunks(text, chunks))


def iter_chunks(text: str, chunks: int) -> Iterator[str]:
    """The pieces of `split_chunks`, one at a time."""
    if chunks < 1:
        raise ValueError(f"chunks must be at least 1, got {chunks}")
    if not text:
        yield ""
        return
    chunks = min(chunks, len(text))
    size, extra = divmod(len(text), chunks)
    start = 0
    for i in range(chunks):
        end = start + size + (1 if i < extra else 0)
        yield text[start:end]
        start = end
