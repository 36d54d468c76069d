from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ladder", "0016_gateway_token_limits"),
    ]

    operations = [
        migrations.AddField(
            model_name="quotawindow",
            name="exhausts_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
