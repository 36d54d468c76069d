from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import ROOT

SCRIPT = textwrap.dedent(
    """
    import sys
    import httpx
    from devtools.fakeupstream import FakeUpstream

    with FakeUpstream() as upstream:
        assert httpx.get(upstream.url_for("zai-glm") + "/api/monitor/usage/quota/limit").status_code == 200
    loaded = sorted(name for name in sys.modules if name == "django" or name.startswith("django."))
    print(loaded)
    """
)


def test_it_runs_without_importing_django() -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
