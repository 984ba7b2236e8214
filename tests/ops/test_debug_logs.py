"""Issue 32: at LOG_LEVEL=DEBUG the template engine's lookups, which carry the whole context, are not logged.

The admin's token page holds a new token's secret in its context: a process
at DEBUG creates a token through the admin and its stderr must not hold it.
"""

import os
import re
import subprocess
import sys

import pytest
from django.conf import settings
from django.db import connection

CREATE = """
import re
from django.contrib.auth import get_user_model
from django.test import Client
root = get_user_model().objects.create_superuser("root-debug", "root@example.com", "pw")
c = Client()
c.force_login(root)
page = c.post("/admin/suspensions/apitoken/add/", {"name": "n", "scope": "acme", "role_set": ["engine"]}, secure=True)
print("SECRET=" + re.search(r"sus_[A-Za-z0-9_-]{20,}", page.content.decode()).group(0))
"""


@pytest.mark.django_db(transaction=True)
def test_a_token_created_in_the_admin_at_debug_level_leaves_its_secret_out_of_the_logs():
    env = {
        **os.environ,
        "LOG_LEVEL": "DEBUG",
        "DJANGO_DEBUG": "1",  # static files unhashed: no collectstatic manifest needed
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{connection.settings_dict['NAME']}",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", CREATE],
        env=env,
        capture_output=True,
        text=True,
        cwd=settings.BASE_DIR,
        timeout=120,
    )
    found = re.search(r"SECRET=(\S+)", done.stdout)
    assert found, done.stdout + done.stderr[-3000:]
    assert "DEBUG" in done.stderr  # the process did log at DEBUG
    assert found.group(1) not in done.stderr
