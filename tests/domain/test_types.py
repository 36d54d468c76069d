"""The vocabulary's value types: Structs for the values a state holds by the thousand, untracked by the
cyclic collector; slotted dataclasses for the rest."""

from __future__ import annotations

import dataclasses
import gc
import importlib
import inspect
from typing import Any

import msgspec
import pytest

from ladder.domain import Candidate, CatalogEntry, Connection, ModelEntry, Reading, Window
from tests.domain.builders import NOW, later


def domain_classes(kind: type) -> list[Any]:
    found = {}
    for module_name in ("types", "autoid", "billing", "budgets", "memo", "resolve"):
        module = importlib.import_module(f"ladder.domain.{module_name}")
        for name, value in vars(module).items():
            if not inspect.isclass(value) or value.__module__ != module.__name__:
                continue
            if dataclasses.is_dataclass(value) if kind is object else issubclass(value, kind):
                found[name] = value
    return list(found.values())


def test_every_domain_dataclass_is_slotted_but_the_snapshot() -> None:
    classes = domain_classes(object)
    assert {c.__name__ for c in classes} >= {"LadderConfig", "PairVerdict", "Resolution"}
    unslotted = sorted(c.__name__ for c in classes if "__slots__" not in vars(c))
    # Snapshot keeps a __dict__ for its cached lookups; VerdictMemo is the mutable memo itself.
    assert unslotted == ["Snapshot", "VerdictMemo"]


def test_the_values_a_state_holds_by_the_thousand_are_frozen_untracked_structs() -> None:
    structs = set(domain_classes(msgspec.Struct))
    assert structs == {Window, Reading, Connection, CatalogEntry, ModelEntry, Candidate}
    for cls in structs:
        config = cls.__struct_config__
        assert (config.frozen, config.forbid_unknown_fields, config.gc) == (True, True, False), cls


@pytest.mark.parametrize(
    "value",
    [
        Window("7d", 42.5, later(60), ("claude-opus-*", "*sonnet*"), True),
        Reading(NOW, (Window("5h", 3.0),), "headers", False, "meters-to-paid", "renamed field"),
        Connection(
            "c2", "zai", "apikey", True, False, "suspended", None, later(30), "hard-stop", ("glm-4.6",)
        ),
    ],
    ids=lambda v: type(v).__name__,
)
def test_a_value_is_frozen_and_never_tracked(value: msgspec.Struct) -> None:
    assert not gc.is_tracked(value)
    copy = msgspec.structs.replace(value)
    assert copy == value
    assert hash(copy) == hash(value)
    with pytest.raises(AttributeError):
        value.provider = "other"  # type: ignore[attr-defined]
