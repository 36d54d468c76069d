"""Where the ladder reaches the providers (ladder.services.upstream)."""

from __future__ import annotations

from typing import Any

import pytest

from devtools.fakeupstream import FakeUpstream, FakeUpstreamControl
from ladder.selectors.snapshot import readings_latest
from ladder.services.upstream import upstream_override
from tests.services.refresh.rows import claim, make_connection, refresh

pytestmark = pytest.mark.django_db


def test_it_points_adapters_at_the_upstream_override_per_kind(
    upstream: FakeUpstream, control: FakeUpstreamControl, settings: Any
) -> None:
    settings.LADDER_UPSTREAM_BASE_URL = upstream.url + "/"
    make_connection(None, "z1", "zai-glm")

    assert upstream_override("zai-glm") == f"{upstream.url}/zai-glm"
    assert refresh("z1", claim("z1")) == "ok"
    assert control.count("zai-glm", connection=None) == 1
    assert [w.name for w in readings_latest()["z1"].windows] == ["5h", "7d"]


def test_it_has_no_override_when_the_setting_is_empty(settings: Any) -> None:
    settings.LADDER_UPSTREAM_BASE_URL = ""

    assert upstream_override("zai-glm") is None
