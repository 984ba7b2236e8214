"""The demo of push (docs/api.md, "8. Push: webhooks"): `seed_demo`'s endpoint and the receiver the README starts."""

import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from standardwebhooks import Webhook

from suspensions.models import WebhookEndpoint
from suspensions.services.webhooks import new_secret
from tests.front_door import free_port

RECEIVER = Path(__file__).resolve().parents[2] / "examples" / "webhook_receiver.py"


def seeded_secret(out: StringIO) -> str:
    return re.findall(r"--secret (whsec_\S+)$", out.getvalue(), flags=re.M)[-1]


def test_seed_demo_creates_one_demo_endpoint_and_prints_its_secret(db):
    out = StringIO()
    call_command("seed_demo", stdout=out)

    endpoint = WebhookEndpoint.objects.get(scope="demo")
    assert (endpoint.url, endpoint.format, endpoint.active) == ("http://127.0.0.1:8001/hooks", "standard", True)
    assert endpoint.secret == seeded_secret(out)


def test_seed_demo_twice_keeps_one_endpoint_with_a_fresh_secret(db):
    first, second = StringIO(), StringIO()
    call_command("seed_demo", stdout=first)
    call_command("seed_demo", stdout=second)

    endpoint = WebhookEndpoint.objects.get(scope="demo")
    assert endpoint.secret == seeded_secret(second) != seeded_secret(first)


def post(port, body, headers):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/hooks", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:  # a bound, not a measure: a busy machine is slow
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def signed(secret, body, message_id="msg_1"):
    now = datetime.now(UTC)
    signature = Webhook(secret).sign(message_id, now, body.decode())
    return {"webhook-id": message_id, "webhook-timestamp": str(int(now.timestamp())), "webhook-signature": signature}


@pytest.fixture
def demo_receiver():
    secret, port = new_secret(), free_port()
    process = subprocess.Popen(
        [sys.executable, str(RECEIVER), "--secret", secret, "--port", str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert "listening" in process.stdout.readline()
    yield secret, port, process
    process.terminate()
    process.wait(timeout=10)


def test_the_receiver_prints_a_verified_delivery_and_refuses_a_forged_one(demo_receiver):
    secret, port, process = demo_receiver
    body = json.dumps({"type": "webhook.test", "timestamp": "now", "data": {"scope": "demo"}}).encode()

    good = post(port, body, signed(secret, body))
    forged = post(port, body, signed(new_secret(), body, "msg_2"))
    process.terminate()
    output = process.communicate(timeout=10)[0]

    assert (good, forged) == (204, 401)
    assert "verified webhook.test msg_1" in output
    assert "REFUSED msg_2" in output
