from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ladder", "0017_credentials"),
    ]

    operations = [
        migrations.AddField(
            model_name="quotawindow",
            name="exhausts_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
