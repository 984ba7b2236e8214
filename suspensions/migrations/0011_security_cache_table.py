# Issue 32: the sign-in lockout counts in a store every web process shares. The default cache is now
# Django's database cache (CACHE_URL, settings.py); its table is made here, so `migrate` is all a
# deploy runs. A cache configured later needs `manage.py createcachetable` (it skips existing tables).

from django.core.management import call_command
from django.db import migrations


def create_cache_tables(apps, schema_editor):
    call_command("createcachetable", database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = [
        ("suspensions", "0010_security_secrets_at_rest"),
    ]

    operations = [
        migrations.RunPython(create_cache_tables, migrations.RunPython.noop),
    ]
