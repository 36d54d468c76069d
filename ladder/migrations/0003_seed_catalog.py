from django.db import migrations


def load_seed(apps, schema_editor):
    # The same loader as `manage.py ladder_load_catalog`, on the historical models.
    from ladder.services.catalog_seed import catalog_seed_load

    catalog_seed_load(registry=apps)


class Migration(migrations.Migration):
    dependencies = [("ladder", "0002_state_version_row")]

    operations = [migrations.RunPython(load_seed, migrations.RunPython.noop)]
