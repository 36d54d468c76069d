from django.db import migrations


def create_state_version(apps, schema_editor):
    StateVersion = apps.get_model("ladder", "StateVersion")
    StateVersion.objects.get_or_create(pk=1, defaults={"value": 0})


class Migration(migrations.Migration):
    dependencies = [("ladder", "0001_initial")]

    operations = [migrations.RunPython(create_state_version, migrations.RunPython.noop)]
