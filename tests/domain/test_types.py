"""The vocabulary's value types: slotted, and built field by field by slot_builder."""

from __future__ import annotations

import dataclasses
import importlib
import inspect

import pytest

from ladder.domain import Connection, Reading, Snapshot, Window
from ladder.domain.types import slot_builder
from tests.domain.builders import NOW, later


def domain_dataclasses() -> list[type]:
    found = {}
    for module_name in ("types", "autoid", "billing", "budgets", "resolve"):
        module = importlib.import_module(f"ladder.domain.{module_name}")
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and dataclasses.is_dataclass(value)
                and value.__module__ == module.__name__
            ):
                found[name] = value
    return list(found.values())


def test_every_domain_value_type_is_slotted_but_the_snapshot() -> None:
    classes = domain_dataclasses()
    assert {c.__name__ for c in classes} >= {"Window", "Reading", "Connection", "PairVerdict", "Resolution"}
    unslotted = sorted(c.__name__ for c in classes if "__slots__" not in vars(c))
    # Snapshot keeps a __dict__ for its cached lookups; VerdictMemo is the mutable memo itself.
    assert unslotted == ["Snapshot", "VerdictMemo"]


@pytest.mark.parametrize(
    "value",
    [
        Window("5h", 0.0),
        Window("7d", 42.5, later(60), ("claude-opus-*", "*sonnet*"), True),
        Reading(NOW),
        Reading(NOW, (Window("5h", 3.0),), "headers", False, "meters-to-paid", "renamed field"),
        Connection("c1", "claude"),
        Connection(
            "c2",
            "zai",
            "apikey",
            True,
            False,
            "suspended",
            "https://api.example/v1",
            later(30),
            "hard-stop",
            ("glm-4.6",),
            Reading(NOW, (Window("5h", 50.0),)),
        ),
    ],
    ids=lambda v: repr(v)[:40],
)
def test_a_built_value_equals_the_constructed_one(value: object) -> None:
    cls = type(value)
    values = [getattr(value, f.name) for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    built = slot_builder(cls)(*values)
    assert type(built) is cls
    assert built == value
    assert hash(built) == hash(value)
    assert repr(built) == repr(value)
    assert not hasattr(built, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, dataclasses.fields(cls)[0].name, "other")  # type: ignore[arg-type]


def test_a_builder_wants_every_field() -> None:
    build = slot_builder(Window)
    with pytest.raises(TypeError):
        build("5h", 1.0)


def test_it_refuses_a_class_it_would_build_wrongly() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        value: int

        def __post_init__(self) -> None:
            if self.value < 0:
                raise ValueError("negative")

    @dataclasses.dataclass(frozen=True, slots=True)
    class Clashing:
        obj: int

    class Open:  # instances of subclasses keep a __dict__: not the twin's layout
        pass

    @dataclasses.dataclass(frozen=True, slots=True)
    class OnOpen(Open):
        value: int

    with pytest.raises(TypeError, match="not a slotted dataclass"):
        slot_builder(Snapshot)
    with pytest.raises(TypeError, match="layout"):
        slot_builder(OnOpen)
    with pytest.raises(TypeError, match="field named obj"):
        slot_builder(Clashing)
    with pytest.raises(TypeError, match="__post_init__"):
        slot_builder(Checked)
