"""`frame`: where a REST request begins and ends in the bytes its connection has received, or why it is refused
from its head (RFC 9112). The connection reader (has the request arrived whole?) and the request handler (which
body to read, what to refuse) both ask it, so they cannot frame one request two ways.

- Empty lines before a request line are dropped (§2.2: a server ignores at least one).
- The head (request line and header lines) ends at the first empty line; past `MAX_HEAD_BYTES` it is 431.
- A header line with whitespace between its name and its colon is 400 (§5.1: a server must reject it).
- The body is Content-Length bytes: none on a POST, or a chunked body (Transfer-Encoding), is 411; a length
  that is not a number, or two different ones, 400; one over the server's limit, 413.

Example:
    >>> frame(bytearray(b"\\r\\nPOST /v1/models/demo:predict HTTP/1.1\\r\\nContent-Length: 2\\r\\n\\r\\n{}"), 100)
    Framing(complete=True, expects_continue=False, body_length=2, refusal=None)
"""

from __future__ import annotations

import dataclasses
import re

MAX_HEAD_BYTES = 64 * 2**10  # a request line and headers (http.server's limit on one line)
_HEAD_END = re.compile(rb"\r?\n\r?\n")


@dataclasses.dataclass(frozen=True)
class Refusal:
    """A request refused from its head: an HTTP status and a message for the client."""

    status: int
    message: str


@dataclasses.dataclass(frozen=True)
class Framing:
    """The first request of a connection's bytes: whether it is `complete` (all of it, or enough to refuse it),
    whether it waits for "100 Continue" before its body, its `body_length`, and its `refusal` if it is refused."""

    complete: bool
    expects_continue: bool = False
    body_length: int = 0
    refusal: Refusal | None = None


def frame(pending: bytearray, max_body_bytes: int) -> Framing:
    """How the first request of `pending` is framed, once the empty lines before it are dropped from `pending`."""
    del pending[:len(pending) - len(pending.lstrip(b"\r\n"))]
    head_end = _HEAD_END.search(pending, 0, MAX_HEAD_BYTES + 4)
    if head_end is None:
        if len(pending) > MAX_HEAD_BYTES:
            return _refused(431, f"The request line and headers take more than {MAX_HEAD_BYTES} bytes.")
        return Framing(complete=False)
    request_line, *header_lines = bytes(pending[:head_end.start()]).splitlines()
    fields = [line.partition(b":") for line in header_lines]
    if any(name != name.rstrip(b" \t") for name, _, _ in fields):
        return _refused(400, "A header has whitespace between its name and its colon (RFC 9112 §5.1).")

    def values(field: bytes) -> list[bytes]:
        return [value.strip(b" \t") for name, _, value in fields if name.lower() == field]

    if values(b"transfer-encoding"):
        return _refused(411, "Chunked bodies are not supported: send a Content-Length header.")
    lengths = values(b"content-length")
    if not lengths:
        if request_line.split(b" ", 1)[0] == b"POST":
            return _refused(411, "A POST needs a Content-Length header.")
        return Framing(complete=True)
    digits = lengths[0]
    if len(set(lengths)) > 1 or not digits.isdigit():
        return _refused(400, f"Invalid Content-Length: {b', '.join(lengths).decode('latin-1')[:40]!r}.")
    if len(digits.lstrip(b"0")) > len(str(max_body_bytes)) or int(digits) > max_body_bytes:
        return _refused(413, f"The body is {digits[:40].decode()} bytes; this server takes at most {max_body_bytes} "
                             "(--rest_api_max_body_bytes).")
    length = int(digits)
    if len(pending) - head_end.end() >= length:
        return Framing(complete=True, body_length=length)
    expects_continue = any(value.lower() == b"100-continue" for value in values(b"expect"))
    return Framing(complete=False, expects_continue=expects_continue, body_length=length)


def _refused(status: int, message: str) -> Framing:
    return Framing(complete=True, refusal=Refusal(status, message))
