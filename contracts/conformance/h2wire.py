"""The few HTTP/2 wire pieces a minimal client needs (RFC 9113, RFC 7541).

Standard library only: the static-site checker and the harness's time to
first byte both speak just enough HTTP/2 to send a GET and read the answer,
and share these pieces. Header blocks are sent as HPACK literals without
indexing and never Huffman-coded, so no table state is needed.
"""

from __future__ import annotations

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
# Frame types and flags (RFC 9113 section 6).
DATA, HEADERS, RST_STREAM, SETTINGS = 0x0, 0x1, 0x3, 0x4
GOAWAY, WINDOW_UPDATE, CONTINUATION = 0x7, 0x8, 0x9
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY = 0x1, 0x1, 0x4, 0x8, 0x20
FRAME_HEADER_BYTES = 9
# HPACK static table: the first field of a response is its :status (RFC 7541 appendix A).
STATUS_INDEX = {8: 200, 9: 204, 10: 206, 11: 304, 12: 400, 13: 404, 14: 500}


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return (
        len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload
    )


def frame_header(data: bytes, offset: int = 0) -> tuple[int, int, int, int]:
    """(payload length, type, flags, stream) of the frame header at `offset`."""
    length = int.from_bytes(data[offset : offset + 3], "big")
    kind, flags = data[offset + 3], data[offset + 4]
    stream = int.from_bytes(data[offset + 5 : offset + 9], "big") & 0x7FFFFFFF
    return length, kind, flags, stream


def hpack_int(value: int, prefix_bits: int, first: int = 0) -> bytes:
    """An HPACK integer with an N-bit prefix (RFC 7541 section 5.1)."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def hpack_literals(fields) -> bytes:
    """A header block of literal fields without indexing, new names, plain strings.

    Names are lower-cased, as HTTP/2 requires.
    """
    block = b""
    for name, value in fields:
        name_bytes, value_bytes = name.lower().encode(), value.encode()
        block += b"\x00" + hpack_int(len(name_bytes), 7) + name_bytes
        block += hpack_int(len(value_bytes), 7) + value_bytes
    return block


def indexed_status(block: bytes) -> int | None:
    """A response block's :status when it leads as a static-table index (200, 404...)."""
    if block and block[0] & 0x80:
        return STATUS_INDEX.get(block[0] & 0x7F)
    return None
