"""Reading a user's text tables loudly: the checks every reader of a user's CSV / TSV file
shares (a molecule CSV, ``data.path``; a node table and an edge list, ``data.nodes`` /
``data.edges``; the split files of ``data.split_files``; the inputs of ``predict``), so that a
wrong file is one :class:`~graph_transformers.errors.DataError` naming it, never a traceback
from deep inside or a silent wrong result.

* :func:`check_text_head` / :func:`decode_text`: a file that is not text — a Python pickle, a zip
  archive (a torch ``.pt`` file, an Excel workbook), gzip where the reader takes no ``.gz``,
  another binary format, UTF-16 text, NUL bytes, bytes that are not UTF-8 — is named as such in
  one line (``x.pkl: this is a Python pickle, not a CSV/text table``);
* :func:`check_header`: a column name given twice in the header, where the reader uses it;
* :func:`csv_records`: ``csv.reader`` whose records carry their first line, that refuses a cell
  holding a line break (a stray ``"`` would otherwise swallow the rows below it, silently) and
  turns ``csv.Error`` into a :class:`DataError` naming the line;
* :func:`parse_float_cell`: a cell as a finite float (or NaN for a missing one), its error
  naming the cell.
"""
from __future__ import annotations

import csv
import gzip
import math
import os
import zlib
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path

from ..errors import DataError

__all__ = ["TEXT_TABLE", "HEAD_BYTES", "read_head", "check_text_head", "decode_text",
           "check_header", "csv_records", "parse_float_cell"]

#: what a reader of this module expects, in its messages
TEXT_TABLE = "a CSV/text table"
#: bytes read off the start of a file to tell what it is
HEAD_BYTES = 65536

#: leading bytes of binary formats → their name in a message
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"PK\x03\x04", "a zip archive (e.g. a torch .pt file or an Excel .xlsx workbook)"),
    (b"PK\x05\x06", "an (empty) zip archive"),
    (b"\x1f\x8b", "gzip-compressed"),
    (b"BZh", "bzip2-compressed"),
    (b"\xfd7zXZ\x00", "xz-compressed"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed"),
    (b"\x93NUMPY", "a NumPy .npy array"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file"),
    (b"PAR1", "a Parquet file"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Excel .xls (OLE) file"),
    (b"%PDF-", "a PDF document"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"\x7fELF", "an executable (ELF)"),
)


def read_head(path: str | os.PathLike, *, gzip_ok: bool = False) -> bytes:
    """The first bytes of a file, to tell what it is (:func:`check_text_head`).

    Args:
        path: the file.
        gzip_ok: the reader takes ``.gz`` files: for a ``.gz`` file that starts like gzip, the
            first bytes of its decompressed content are returned instead.

    Returns:
        Up to :data:`HEAD_BYTES` bytes (of a ``.gz`` stream, as many as can be decompressed:
        a truncated or corrupt stream is the reader's own error to report).

    Raises:
        OSError: the file cannot be opened.
    """
    path = Path(path)
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    if gzip_ok and path.name.lower().endswith(".gz") and head.startswith(b"\x1f\x8b"):
        inner = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip framing
        try:
            return inner.decompress(head, HEAD_BYTES)
        except zlib.error:
            return b""  # corrupt: the reader says so, naming the file
    return head


def _utf8_error(data: bytes, final: bool) -> UnicodeDecodeError | None:
    """The first UTF-8 decoding error of ``data``; an incomplete character at the very end is
    none unless ``final`` (a head cut off in the middle of a character)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        if not final and err.reason == "unexpected end of data" and err.end == len(data):
            return None
        return err
    return None


def check_text_head(path: str | os.PathLike, head: bytes, *, gzip_ok: bool = False,
                    final: bool = False) -> None:
    """Refuses a file whose first bytes ``head`` show it is not UTF-8 text.

    Args:
        path: the file, for the message.
        head: its first bytes (:func:`read_head`; decompressed for a ``.gz`` the reader takes).
        gzip_ok: the reader takes ``.gz`` files (so gzip framing is no error here).
        final: ``head`` is the whole file (an incomplete character at its end is an error).

    Raises:
        DataError: ``<path>: this is a Python pickle, not a CSV/text table`` (protocol 2 and
            above: a ``0x80`` byte then the protocol), a zip archive, compressed data the reader
            does not take, another binary format (:data:`_MAGIC`), UTF-16 / UTF-32 text (a byte
            order mark), bytes that are not UTF-8 (naming byte, offset and line) or NUL bytes.
    """
    compressed = head.startswith(b"\x1f\x8b") and not (gzip_ok and
                                                         str(path).lower().endswith(".gz"))
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        raise DataError(f"{path}: this is a Python pickle, not {TEXT_TABLE}")
    err = _utf8_error(head, final)
    nul = head.find(b"\x00")
    text = err is None and nul < 0
    for magic, name in _MAGIC:
        if text and magic.isascii() and magic.decode().isprintable():
            continue  # "PAR1", "BZh", "%PDF-" may start a text table's header: not binary
        if head.startswith(magic) and (magic != b"\x1f\x8b" or compressed):
            hint = "; decompress it first (e.g. gunzip)" if name.endswith("compressed") else ""
            raise DataError(f"{path}: this is {name}, not {TEXT_TABLE}{hint}")
    for bom, name in ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
                      (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16")):
        if head.startswith(bom):
            raise DataError(f"{path}: this is {name} text, not UTF-8; save it as UTF-8")
    if err is not None:
        line = head[:err.start].count(b"\n") + 1
        raise DataError(f"{path}: not UTF-8 text (byte {head[err.start]:#04x} at offset "
                        f"{err.start}, line {line}); save it as UTF-8")
    if nul >= 0:
        line = head[:nul].count(b"\n") + 1
        raise DataError(f"{path}: holds a NUL byte (offset {nul}, line {line}): a binary file "
                        f"or UTF-16 text, not {TEXT_TABLE}; save it as UTF-8 text")


def decode_text(path: str | os.PathLike, data: bytes) -> str:
    """A whole file as text.

    Args:
        path: the file, for the messages.
        data: all of its bytes.

    Returns:
        ``data`` decoded from UTF-8, a leading byte order mark dropped, once
        :func:`check_text_head` over all of it found text.

    Raises:
        DataError: as :func:`check_text_head`.
    """
    check_text_head(path, data, final=True)
    return data.decode("utf-8").removeprefix("\ufeff")


def check_header(path: str | os.PathLike, header: Sequence[str],
                 used: Iterable[str] | None = None) -> None:
    """Refuses a header that names a column twice, where the reader would pick one copy
    silently.

    Args:
        path: the file, for the message.
        header: the column names, in file order (as the reader compares them: stripped).
        used: the names the reader takes its data from; a repeat of another name is harmless
            and passes. ``None``: every column is used.

    Raises:
        DataError: ``<path>: column 'y' appears twice in the header (columns 3 and 5); rename
            one`` (1-based positions; ``appears 3 times ... (columns 2, 3 and 5)``).
    """
    wanted = None if used is None else set(used)
    where: dict[str, list[int]] = {}
    for k, name in enumerate(header, 1):
        where.setdefault(name, []).append(k)
    for name, cols in where.items():
        if len(cols) > 1 and (wanted is None or name in wanted):
            times = "twice" if len(cols) == 2 else f"{len(cols)} times"
            listed = ", ".join(map(str, cols[:-1])) + f" and {cols[-1]}"
            raise DataError(f"{path}: column {name!r} appears {times} in the header (columns "
                            f"{listed}); rename one")


def csv_records(path: str | os.PathLike, lines: Iterable[str], **fmt) -> Iterator[tuple[int,
                                                                                      list[str]]]:
    """``(first line, record)`` for each record of ``csv.reader(lines, **fmt)``, blank lines
    included (as ``[]``), in file order.

    Args:
        path: the file, for the messages.
        lines: the file's lines (an open text file with ``newline=""``, or
            ``text.splitlines(keepends=True)``).
        fmt: ``csv.reader``'s format arguments (``delimiter``, ``strict``).

    Raises:
        DataError: a cell holding a line break (a quoted cell over several lines: a ``"`` left
            open swallows the rows below it), or a line ``csv`` cannot parse; both name the line.
            Reading ``lines`` from an open file: a truncated or corrupt gzip stream, or bytes
            that are not UTF-8.
    """
    reader = csv.reader(lines, **fmt)
    start = 1
    try:
        for record in reader:
            first, start = start, reader.line_num + 1
            if any("\n" in c or "\r" in c for c in record):
                raise DataError(
                    f"{path} line {first}: a quoted cell runs over lines {first}-"
                    f"{reader.line_num} (a '\"' left open?); a cell cannot hold a line break, "
                    "so close or remove the quote")
            yield first, record
    except csv.Error as err:
        kind = "TSV" if fmt.get("delimiter") == "\t" else "CSV"
        raise DataError(f"{path} line {reader.line_num}: cannot be parsed as {kind} "
                        f"({err})") from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise DataError(f"{path}: cannot read it: truncated or corrupt gzip file "
                        f"({err})") from None
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text (byte {err.object[err.start]:#04x} at offset "
                        f"{err.start} of a block); save it as UTF-8") from None


def parse_float_cell(text: str, where: str, *, missing: Collection[str] = (),
                     hint: str = "") -> float:
    """A table cell as a finite float, or NaN where the cell (stripped, lower-cased) is one of
    ``missing``.

    Args:
        text: the cell.
        where: names the cell in the messages, e.g. ``"f.csv: line 3, column 'y': label"``.
        missing: the cells read as a missing value (NaN), lower-case; none by default.
        hint: said in brackets after a message (how to write a missing value, ...).

    Raises:
        DataError: ``{where} '…' is not a number`` or ``… is not a finite number`` (the cell
            quoted up to 40 characters).

    Example:
        >>> parse_float_cell(" 0.5 ", "f.csv: line 2: y")
        0.5
        >>> parse_float_cell("NA", "f.csv: line 2: y", missing={"", "na"})
        nan
    """
    t = text.strip()
    if t.lower() in missing:
        return math.nan
    tail = f" ({hint})" if hint else ""
    try:
        v = float(t)
    except ValueError:
        raise DataError(f"{where} {t[:40]!r} is not a number{tail}") from None
    if not math.isfinite(v):
        raise DataError(f"{where} {t[:40]!r} is not a finite number{tail}")
    return v
