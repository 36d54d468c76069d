from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ladder", "0007_catalog_history"),
    ]

    operations = [
        migrations.AddField(
            model_name="usageevent",
            name="response",
            field=models.JSONField(blank=True, null=True),
        ),
    ]
