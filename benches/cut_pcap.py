"""Copy the longest prefix of a classic pcap file, at most LIMIT bytes, that ends at a record.

Usage: python benches/cut_pcap.py SRC DST LIMIT

A `head -c` prefix ends inside a record: the last time chunk of a two-thread scan then meets
a cut record, warns, and the chunks give up (the scan runs again by the metric split), so the
counts of such a prefix measure another path. This walks the records instead. pcapng is not
handled (cut it at a block boundary the same way).
"""

from __future__ import annotations

import struct
import sys

LITTLE = (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1")
BIG = (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d")
HEADER = 24
RECORD = 16


def cut(data: bytes) -> tuple[int, int]:
    """The length of the longest whole-record prefix of `data`, and its records."""
    magic = data[:4]
    if magic in LITTLE:
        order = "<"
    elif magic in BIG:
        order = ">"
    else:
        raise SystemExit(f"not a classic pcap file (magic {magic.hex()}); pcapng is not handled")
    end, records = HEADER, 0
    while end + RECORD <= len(data):
        (incl,) = struct.unpack_from(order + "I", data, end + 8)
        if end + RECORD + incl > len(data):
            break
        end += RECORD + incl
        records += 1
    return end, records


def main() -> None:
    src, dst, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(src, "rb") as f:
        data = f.read(limit)
    end, records = cut(data)
    with open(dst, "wb") as f:
        f.write(data[:end])
    print(f"{end} bytes, {records} packets")


if __name__ == "__main__":
    main()
