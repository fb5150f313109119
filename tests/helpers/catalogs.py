"""Hand-made gettext ``.mo`` catalogs for the corpus and dictionary tests."""

import struct
from pathlib import Path
from typing import Dict

HEADER = "Content-Type: text/plain; charset=UTF-8\n" "Plural-Forms: nplurals=2; plural=(n != 1);\n"


def write_mo(path: Path, entries: Dict[str, str]) -> None:
    """Write a GNU .mo file (no hash table); plural keys/values use "\\0" separators."""
    entries = {"": HEADER, **entries}
    keys = sorted(entries)
    ids = [k.encode("utf-8") for k in keys]
    strs = [entries[k].encode("utf-8") for k in keys]
    n = len(keys)
    orig_at, trans_at = 28, 28 + 8 * n
    data_at = trans_at + 8 * n
    table, blob = [], b""
    for s in ids + strs:
        table.append((len(s), data_at + len(blob)))
        blob += s + b"\0"
    head = struct.pack("<7I", 0x950412DE, 0, n, orig_at, trans_at, 0, data_at)
    body = b"".join(struct.pack("<2I", *t) for t in table)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(head + body + blob)
