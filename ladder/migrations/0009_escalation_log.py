from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('ladder', '0008_usage_response'),
    ]

    operations = [
        migrations.CreateModel(
            name='EscalationEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('auto_id', models.CharField(max_length=64)),
                ('from_rung', models.PositiveSmallIntegerField(blank=True, choices=[(0, '0 subscription'), (1, '1 keyless'), (2, '2 free'), (3, '3 cheap'), (4, '4 premium')], null=True)),
                ('to_rung', models.PositiveSmallIntegerField(blank=True, choices=[(0, '0 subscription'), (1, '1 keyless'), (2, '2 free'), (3, '3 cheap'), (4, '4 premium')], null=True)),
                ('kind', models.CharField(choices=[('up', 'up'), ('down', 'down'), ('empty', 'empty')], max_length=8)),
                ('why', models.TextField(blank=True, default='')),
                ('occurred_at', models.DateTimeField()),
            ],
            options={
                'ordering': ['occurred_at', 'id'],
                'indexes': [models.Index(fields=['auto_id', 'occurred_at'], name='escalation_auto_at_idx'), models.Index(fields=['occurred_at'], name='escalation_at_idx')],
                'constraints': [models.CheckConstraint(condition=models.Q(models.Q(('from_rung__isnull', True), ('from_rung__lte', 4), _connector='OR'), models.Q(('to_rung__isnull', True), ('to_rung__lte', 4), _connector='OR')), name='escalation_rung_range', violation_error_message='from_rung and to_rung must be empty or between 0 and 4.'), models.CheckConstraint(condition=models.Q(models.Q(('kind', 'up'), ('from_rung__isnull', False), ('to_rung__isnull', False), ('from_rung__lt', models.F('to_rung'))), models.Q(('kind', 'empty'), ('from_rung__isnull', False), ('to_rung__isnull', True)), models.Q(('kind', 'down'), ('from_rung__isnull', True), ('to_rung__isnull', False)), models.Q(('kind', 'down'), ('from_rung__isnull', False), ('to_rung__isnull', False), ('from_rung__gt', models.F('to_rung'))), _connector='OR'), name='escalation_kind_matches_rungs', violation_error_message='kind must be up (to a higher rung), empty (to no rung) or down (to a lower rung, or from no rung).')],
            },
        ),
        migrations.CreateModel(
            name='EscalationState',
            fields=[
                ('auto_id', models.CharField(max_length=64, primary_key=True, serialize=False)),
                ('rung', models.PositiveSmallIntegerField(blank=True, choices=[(0, '0 subscription'), (1, '1 keyless'), (2, '2 free'), (3, '3 cheap'), (4, '4 premium')], null=True)),
                ('changed_at', models.DateTimeField()),
            ],
            options={
                'constraints': [models.CheckConstraint(condition=models.Q(('rung__isnull', True), ('rung__lte', 4), _connector='OR'), name='escalation_state_rung_range', violation_error_message='rung must be empty or between 0 and 4.')],
            },
        ),
    ]
