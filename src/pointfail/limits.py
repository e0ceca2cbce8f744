"""Every size cap pointfail applies to input from outside, in one place (issue 12, "Bounded parsing").

A cap that is hit is never silent: a parser records it as a parse flag (``ParseResult.flags``), a
reader as a clear error or an explained per-sample outcome. The values are far above what a real
model, judge, benchmark or study produces, and low enough that the work per input stays bounded.
"""

from __future__ import annotations

MAX_REPLY_CHARS = 1 << 20
"""Model reply characters a family parser reads (1 Mi). Longer replies are parsed from their first
``MAX_REPLY_CHARS`` characters, with parse flag ``reply_capped``. Real replies are a few hundred
characters; a ``max_new_tokens`` of 32768 gives well under this."""

MAX_ITEMS = 1000
"""Coordinate groups (points and boxes) a parser keeps from one reply, in the order written; the
rest are dropped with parse flag ``items_capped``."""

MAX_RESPONSE_RAW_TEXT_CHARS = MAX_REPLY_CHARS
"""``raw_text`` characters the runner accepts in one worker response; a longer one makes the sample
an ``error`` outcome that says so (records stay small enough to commit)."""

MAX_RESPONSE_LINE_BYTES = 8 << 20
"""Bytes of one ``responses.jsonl`` line (8 MiB: a capped ``raw_text`` fully ``\\u``-escaped fits).
A longer line is an error for its sample."""

MAX_REQUEST_LINE_BYTES = 1 << 20
"""Bytes of one ``requests.jsonl`` line."""

MAX_JUDGE_REPLY_CHARS = 4096
"""Characters of a judge reply that are stored and read for a label (a label is one word; the judge
is asked for at most 64 tokens). A longer reply is cut, with ``…[cut: N chars]`` appended to the
stored text, and read from its first ``MAX_JUDGE_REPLY_CHARS`` characters."""

MAX_MASK_BYTES = 64 << 20
"""Bytes of a mask file (64 MiB); a larger file is refused before it is read."""

MAX_MASK_PIXELS = 1 << 27
"""Pixels of a decoded mask (134 M: a 16k x 8k mask), checked from the image header before decoding."""

MAX_IMAGE_BYTES = 256 << 20
"""Bytes of an image file a loader, the worker or the judge renderer opens (256 MiB)."""

MAX_STUDY_BYTES = 1 << 20
"""Bytes of a study file (1 MiB)."""

MAX_CONTAINER_LOG_BYTES = 8 << 20
"""Bytes of a model container's log the runner keeps in ``container.log`` (8 MiB); the rest is counted,
not stored."""

MAX_LOG_LINE_CHARS = 2000
"""Characters of one container log line shown on the operator's terminal."""
