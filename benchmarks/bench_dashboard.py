"""Dashboard benchmark: server time of the overview page and of its polling partial with 100 and with
1,000 connections (each with a reading of two windows), on a throw-away SQLite database, through the
Django test client. Checks that both sizes cost the same number of queries. The last line is
``page_ms=<1,000> partial_ms=<1,000> scale=<page 1,000 / page 100>``."""

from __future__ import annotations

import gc
import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omniroute.settings")

PROVIDERS = 10
MODELS_PER_PROVIDER = 3
PRICES = ("0", "0.5", "3")


def populate(connections: int) -> None:
    from django.utils import timezone

    from ladder import models as m

    m.QuotaWindow.objects.all().delete()
    m.QuotaReading.objects.all().delete()
    m.Connection.objects.all().delete()
    m.BillingCatalogEntry.objects.all().delete()
    m.ModelCatalogEntry.objects.all().delete()
    for p in range(PROVIDERS):
        plan = p % 2 == 0
        m.BillingCatalogEntry.objects.create(
            provider=f"prov{p}",
            auth_type="oauth",
            billing="subscription" if plan else "metered",
            overage="hard-stop" if plan else "meters-to-paid",
        )
        for i in range(MODELS_PER_PROVIDER):
            m.ModelCatalogEntry.objects.create(
                provider=f"prov{p}",
                model=f"model-{i}",
                input_usd_per_mtok=PRICES[i],
                categories=["coding"],
                position=p * 10 + i,
            )
    now = timezone.now()
    m.Connection.objects.bulk_create(
        m.Connection(id=f"conn-{c:05d}", provider=f"prov{c % PROVIDERS}", auth_type="oauth", position=c)
        for c in range(connections)
    )
    readings = m.QuotaReading.objects.bulk_create(
        m.QuotaReading(
            connection_id=f"conn-{c:05d}", fetched_at=now - timedelta(seconds=c % 120), source="poll"
        )
        for c in range(connections)
    )
    m.QuotaWindow.objects.bulk_create(
        m.QuotaWindow(
            reading=reading,
            name=name,
            remaining_pct=float((index * 7 + offset) % 100),
            reset_at=now + timedelta(hours=5 if name == "5h" else 100),
            position=offset,
        )
        for index, reading in enumerate(readings)
        for offset, name in enumerate(("5h", "7d"))
    )


def measure(connections: int, repeat: int) -> tuple[float, float, int, int]:
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    populate(connections)
    user = User.objects.filter(username="bench").first() or User.objects.create_user("bench", password="x")
    client = Client()
    client.force_login(user)

    def timed(**headers: str) -> tuple[float, int]:
        gc.collect()  # the previous request's garbage is not this request's server time
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            response = client.get("/", headers=headers)
            elapsed = time.perf_counter() - start
        assert response.status_code == 200, response.status_code
        assert response.content.count(b'data-connection="conn-') >= connections
        return elapsed, len(queries)

    timed()  # warm the template cache
    page = [timed() for _ in range(repeat)]
    partial = [timed(HX_Request="true") for _ in range(repeat)]
    return (
        statistics.median(t for t, _ in page) * 1000,
        statistics.median(t for t, _ in partial) * 1000,
        max(q for _, q in page),
        max(q for _, q in partial),
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SQLITE_PATH"] = str(Path(tmp) / "bench.sqlite3")
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0)
        results = {}
        for size, repeat in ((100, 15), (1000, 7)):
            page_ms, partial_ms, page_q, partial_q = measure(size, repeat)
            results[size] = (page_ms, partial_ms, page_q, partial_q)
            print(
                f"connections={size} page_ms={page_ms:.1f} partial_ms={partial_ms:.1f} "
                f"page_queries={page_q} partial_queries={partial_q}"
            )
        if results[100][2:] != results[1000][2:]:
            raise SystemExit(f"query count grows with connections: {results[100][2:]} → {results[1000][2:]}")
        page_ms, partial_ms = results[1000][0], results[1000][1]
        print(f"page_ms={page_ms:.1f} partial_ms={partial_ms:.1f} scale={page_ms / results[100][0]:.2f}")


if __name__ == "__main__":
    main()
