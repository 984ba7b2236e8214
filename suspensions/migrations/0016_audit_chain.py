# docs/auditors.md, "What is recorded": every event carries prev_hash and hash (the run's chain), and signed checkpoints
# (with the last sealed head of each run, and a BRIN index on event.at for "runs with events since") seal the chains.
# Existing events are chained here, run by run in id order, with suspensions/audit.py: the same function the writer's
# SQL agrees with and the verifier recomputes.

import django.contrib.postgres.indexes
from django.db import migrations, models

from suspensions import audit

BATCH = 2000


def chain_existing_events(apps, schema_editor):
    """Keyset pages over (run_id, id): memory stays flat whatever the table holds; each page one bulk UPDATE."""
    Event = apps.get_model("suspensions", "Event")
    after: tuple = ()
    run_id, prev = None, audit.GENESIS
    while True:
        page = Event.objects.order_by("run_id", "id")
        if after:
            page = page.filter(models.Q(run_id__gt=after[0]) | models.Q(run_id=after[0], id__gt=after[1]))
        rows = list(page[:BATCH])
        if not rows:
            return
        for e in rows:
            if e.run_id != run_id:
                run_id, prev = e.run_id, audit.GENESIS
            fields = {k: getattr(e, k) for k in ("id", "run_id", "scope", "kind", "actor", "revision", "data", "at")}
            e.prev_hash, e.hash = prev, audit.event_hash(prev, fields)
            prev = e.hash
        Event.objects.bulk_update(rows, ["prev_hash", "hash"])
        after = (rows[-1].run_id, rows[-1].id)


class Migration(migrations.Migration):
    dependencies = [
        ("suspensions", "0015_idempotency_keys_and_tags"),
    ]

    operations = [
        migrations.AddField(
            model_name="event",
            name="prev_hash",
            field=models.CharField(default="", editable=False, max_length=64),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="event",
            name="hash",
            field=models.CharField(default="", editable=False, max_length=64),
            preserve_default=False,
        ),
        migrations.RunPython(chain_existing_events, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="event",
            index=django.contrib.postgres.indexes.BrinIndex(fields=["at"], name="event_at_brin"),
        ),
        migrations.CreateModel(
            name="AuditCheckpoint",
            fields=[
                ("seq", models.BigIntegerField(primary_key=True, serialize=False)),
                ("at", models.DateTimeField()),
                ("previous", models.CharField(max_length=64)),
                ("root", models.CharField(max_length=64)),
                ("runs", models.JSONField(default=list)),
                ("signature", models.CharField(max_length=128)),
            ],
        ),
        migrations.CreateModel(
            name="AuditRunHead",
            fields=[
                ("run_id", models.UUIDField(primary_key=True, serialize=False)),
                ("head", models.CharField(max_length=64)),
                ("count", models.BigIntegerField()),
                ("seq", models.BigIntegerField()),
            ],
        ),
    ]
