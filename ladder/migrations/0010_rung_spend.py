from collections import defaultdict
from datetime import UTC
from decimal import Decimal

from django.db import migrations, models


def period_starts(moment):
    """The UTC day and month an event counts toward (ladder.domain.budgets.period_bounds, frozen here)."""
    day = moment.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return (("day", day), ("month", day.replace(day=1)))


def counters_from_events(apps, schema_editor):
    UsageEvent = apps.get_model("ladder", "UsageEvent")
    RungSpend = apps.get_model("ladder", "RungSpend")
    totals = defaultdict(Decimal)
    events = UsageEvent.objects.filter(budget_rung__isnull=False).values_list(
        "budget_rung", "occurred_at", "cost_usd"
    )
    for rung, occurred_at, cost in events.iterator(chunk_size=10_000):
        for period, start in period_starts(occurred_at):
            totals[(period, start, rung)] += cost
    RungSpend.objects.bulk_create(
        [
            RungSpend(period=period, period_start=start, rung=rung, spent_usd=amount)
            for (period, start, rung), amount in totals.items()
        ],
        batch_size=1000,
    )


class Migration(migrations.Migration):

    dependencies = [
        ('ladder', '0009_escalation_log'),
    ]

    operations = [
        migrations.CreateModel(
            name='RungSpend',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('period', models.CharField(choices=[('day', 'day'), ('month', 'month')], max_length=8)),
                ('period_start', models.DateTimeField()),
                ('rung', models.CharField(choices=[('cheap', 'cheap'), ('premium', 'premium')], max_length=16)),
                ('spent_usd', models.DecimalField(decimal_places=6, default=Decimal('0'), max_digits=20)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('period', 'period_start', 'rung'), name='rung_spend_unique'), models.CheckConstraint(condition=models.Q(('rung__in', ('cheap', 'premium'))), name='rung_spend_rung_valid', violation_error_message='rung must be one of: cheap, premium.')],
            },
        ),
        migrations.RunPython(counters_from_events, migrations.RunPython.noop),
    ]
