"""The app's top level stays small: a file's folder says what it may touch (DESIGN §4)."""

from __future__ import annotations

from pathlib import Path

import ladder

MAX_TOP_LEVEL_MODULES = 12


def test_it_keeps_at_most_twelve_modules_at_the_top_of_ladder() -> None:
    top = sorted(path.name for path in Path(ladder.__file__).parent.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top
