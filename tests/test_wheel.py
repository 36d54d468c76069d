"""The wheel built from pyproject.toml holds the product and never the development tools (issue 27)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.conftest import ROOT

# What a build reads; copied so that the build's build/ and *.egg-info stay out of the work tree.
SOURCES = ("pyproject.toml", "ladder", "ladder_client", "omniroute", "devtools")


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q"]
        + ["-w", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = out.glob("omniroute_ladder-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


@pytest.mark.slow
def test_it_leaves_the_fake_upstream_out_of_the_wheel(wheel_names: list[str]) -> None:
    assert [name for name in wheel_names if "devtools" in name or "fakeupstream" in name] == []
    assert not any(name.startswith(("tests/", "benchmarks/")) for name in wheel_names)


@pytest.mark.slow
def test_it_ships_the_product_and_its_seed(wheel_names: list[str]) -> None:
    assert "ladder/__init__.py" in wheel_names
    assert "ladder_client/__init__.py" in wheel_names
    assert "omniroute/settings.py" in wheel_names
    assert "ladder/seed/billing_catalog.json" in wheel_names
    assert "ladder/seed/models.json" in wheel_names
    assert "ladder/migrations/0001_initial.py" in wheel_names
