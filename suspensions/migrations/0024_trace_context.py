"""The trace context an outbox event and its webhook messages carry (docs/deploy.md, "Traces").

An empty string by default, in the database too: a row written with traces off has none, and an insert that
names no such column gets it. A constant default adds the column without rewriting the table.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('suspensions', '0023_event_announce'),
    ]

    operations = [
        migrations.AddField(
            model_name='outboxevent',
            name='traceparent',
            field=models.CharField(blank=True, db_default='', default='', max_length=55),
        ),
        migrations.AddField(
            model_name='webhookmessage',
            name='traceparent',
            field=models.CharField(blank=True, db_default='', default='', max_length=55),
        ),
    ]
