from __future__ import annotations

from pathlib import Path

import pytest

from devtools.fakeupstream.fixtures import DEFAULT_FIXTURES_DIR, load_fixtures


def test_it_ships_eighteen_fixture_copies() -> None:
    assert len(sorted(DEFAULT_FIXTURES_DIR.glob("*.json"))) == 18


def test_it_keeps_the_copies_equal_to_the_shared_originals(shared_dir: Path) -> None:
    originals = shared_dir / "fixtures" / "quota"
    if not originals.is_dir():
        pytest.skip("the shared fixtures folder exists only in development")
    shared = {path.name: path.read_bytes() for path in originals.glob("*.json")}
    copies = {path.name: path.read_bytes() for path in DEFAULT_FIXTURES_DIR.glob("*.json")}
    assert sorted(copies) == sorted(shared)
    stale = [name for name in shared if copies[name] != shared[name]]
    assert stale == []


def test_it_loads_one_kind_per_file_named_after_its_provider() -> None:
    fixtures = load_fixtures()
    assert sorted(fixtures) == sorted(path.stem for path in DEFAULT_FIXTURES_DIR.glob("*.json"))
