from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ladder", "0013_connection_reserve_poll_interval"),
    ]

    operations = [
        migrations.AddField(
            model_name="failureevent",
            name="windows",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
