"""JSON text in and out of the offline commands: a state file read from a path or standard input, and
documents written compact or indented, non-ASCII characters as they are."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import orjson

from ladder.contract.state.errors import StateError


def read_text(path: str) -> str:
    """The text of the file at `path` (- for standard input); a StateError saying why not."""
    try:
        if path == "-":
            return sys.stdin.read()
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise StateError("", f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise StateError("", f"{path} is not UTF-8 text (byte {exc.start})") from None


def dump_json_text(document: Any, indent: int | None = None) -> str:
    """The document as JSON text, compact (or indented), non-ASCII characters as they are.

    A lone surrogate (json lets one into a state: load_json_text) is written as its \\u escape, as the
    file held it: no UTF-8 output can carry it. Only JSON values go in (floats are finite here: they
    were checked on the way in); a datetime or a dataclass is refused (TypeError), as json refuses it."""
    if indent is None:
        try:
            return orjson.dumps(document, option=_ORJSON_STRICT).decode()  # several times faster than json
        except TypeError:
            pass  # a lone surrogate, or a value that is not JSON: json decides
        text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    else:
        text = json.dumps(document, ensure_ascii=False, indent=indent)
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


_ORJSON_STRICT = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_SURROGATE = re.compile("[\ud800-\udfff]")
