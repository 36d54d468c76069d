"""Where a msgspec ValidationError points: its complaint, the path it names as keys and indexes, and
the keys the object there accepts. The API (ladder.gateway.inputs) and the state file
(ladder.contract.state.errors) word the complaint each their own way from these.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any

import msgspec

Step = str | int

_STEP = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")


def located(exc: msgspec.ValidationError) -> tuple[str, list[Step]]:
    """msgspec's complaint, and its path (`$.events[3].cost_usd`) as steps; `...` stands for a key of
    a mapping, which msgspec does not name."""
    text = str(exc)
    said, at, path = text.rpartition(" - at `$")  # msgspec puts the path last
    if not at or not path.endswith("`"):
        return text, []
    steps = _STEP.findall(path[:-1])
    return said, [key or (index if index == "..." else int(index)) for key, index in steps]


def field_path(steps: Sequence[Step]) -> str:
    """Steps as the messages write a field: `events[3].cost_usd`."""
    path = ""
    for step in steps:
        path += f"[{step}]" if isinstance(step, int) else (f".{step}" if path else step)
    return path


def value_at(document: Any, steps: Sequence[Step]) -> Any:
    """The value at `steps` of a document of JSON values, or None where it has none."""
    for step in steps:
        try:
            document = document[step]
        except (KeyError, IndexError, TypeError):
            return None
    return document


def unknown_key(kind: Any, steps: Sequence[Step] = (), hidden: Collection[str] = ()) -> str:
    """The message of a key that the object at `steps` of a `kind` document does not accept, naming
    those it does (but `hidden`)."""
    info: Any = msgspec.inspect.type_info(kind)
    for step in [*steps, None]:
        while True:
            if isinstance(info, msgspec.inspect.Metadata):
                info = info.type
            elif isinstance(info, msgspec.inspect.UnionType):
                info = next((t for t in info.types if not isinstance(t, msgspec.inspect.NoneType)), info)
                if isinstance(info, msgspec.inspect.UnionType):
                    return "unknown key"
            else:
                break
        if step is None:
            break
        if isinstance(info, msgspec.inspect.StructType):
            info = next((f.type for f in info.fields if f.encode_name == step), None)
        elif isinstance(info, msgspec.inspect.VarTupleType | msgspec.inspect.ListType):
            info = info.item_type
        else:
            return "unknown key"
    if not isinstance(info, msgspec.inspect.StructType):
        return "unknown key"
    accepted = [f.encode_name for f in info.fields if f.encode_name not in hidden]
    return f"unknown key; accepted: {', '.join(accepted)}"
