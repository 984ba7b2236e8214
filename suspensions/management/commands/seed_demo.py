"""Demo data for `make run`: a staff user, a handful of paused runs of every reason and a webhook endpoint.

Run again, it adds nothing while a demo pause is still live, and once they have all expired or been
answered it pauses a fresh set, so a newcomer who reads the README first still finds work waiting.
"""

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from ... import services
from ...models import ApiToken, Membership, Role, Suspension, WebhookEndpoint, WebhookFormat
from ...principals import Principal
from ...tokens import create_token

DEMO_SCOPE = "demo"
DEMO_TOKEN_NAME = "demo-all-roles"
# Where examples/webhook_receiver.py listens (README: "Watching deliveries").
DEMO_HOOK_URL = "http://127.0.0.1:8001/hooks"


def _continuation(question: str, tools: list[str]) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "user", "content": "Earlier: what is my order status?"},
            {"role": "assistant", "content": "Your order shipped yesterday."},
            {"role": "user", "content": question},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function"}]},
        ],
        "system_prompt": "You are the support agent of ACME. Be brief and precise.",
        "step_index": 3,
        "tokens_used": 1840,
        "new_messages_from": 2,
        "session_id": "sess-demo",
        "config": {"model": "gpt-4.1", "temperature": 0.2, "max_steps": 12, "tools": tools, "tools_restricted": True},
    }


# Deadlines of hours and days: long enough to read the README, the email, open the console and decide.
# The shortest, 45 minutes, is there so the dashboard's "expires within the hour" and a ticking
# countdown have something to show.
PAUSES: list[tuple[str, str, str, dict[str, Any], int]] = [
    ("refund-agent", "approval", "send_refund", {"order": "A-1042", "amount": 900, "currency": "EUR"}, 86400),
    ("refund-agent", "approval", "send_refund", {"order": "A-1077", "amount": 45, "currency": "EUR"}, 2700),
    ("ops-agent", "approval", "restart_service", {"service": "billing-api", "region": "eu-west-1"}, 7200),
    ("ops-agent", "approval", "delete_records", {"table": "sessions", "older_than_days": 90}, 10800),
    ("vpc-agent", "external_tool", "query_warehouse", {"sql": "select count(*) from orders"}, 86400),
    ("triage-agent", "agent_reply", "ask_billing_agent", {"question": "Was invoice 5521 paid?"}, 14400),
]


class Command(BaseCommand):
    help = "Create the demo staff user, an engine token and paused runs of every reason in scope 'demo'."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="admin")
        parser.add_argument("--password", default="admin")
        parser.add_argument(
            "--credentials",
            type=Path,
            help="also write what it prints to this file (mode 0600), for `make creds` to print again",
        )

    def handle(self, *args: Any, username: str, password: str, credentials: Path | None, **options: Any) -> None:
        self.verbosity = options["verbosity"]
        user_model = get_user_model()
        user, _ = user_model.objects.get_or_create(username=username, defaults={"is_staff": True, "is_superuser": True})
        user.set_password(password)
        # An approver without an address gets no approval emails (docs/notifications.md, "Email").
        user.email = user.email or f"{username}@example.com"
        user.save()
        for role in Role.values:
            membership = Membership(user=user, role=role)
            membership.stamp_scope(DEMO_SCOPE)
            if not Membership.objects.filter(user=user, role=role, scope=DEMO_SCOPE).exists():
                membership.save()
        engine = Principal(name="token:demo-engine", grants=((DEMO_SCOPE, frozenset(Role.values)),))
        if not Suspension.objects.filter(scope=DEMO_SCOPE).exists():
            for n, (agent, reason, tool, arguments, ttl) in enumerate(PAUSES):
                run = services.register_run(principal=engine, agent_id=agent, scope=DEMO_SCOPE, session_id=f"sess-{n}")
                call: dict[str, Any] = {"id": f"call_{n}", "name": tool, "arguments": json.dumps(arguments)}
                if reason == "agent_reply":
                    call["reply_with"] = f"q-{n}"
                services.suspend_run(
                    principal=engine,
                    run_id=run.id,
                    revision=run.revision,
                    reason=reason,
                    pending=[call],
                    continuation=_continuation(f"Please {tool.replace('_', ' ')}.", [tool]),
                    ttl_seconds=ttl,
                )
        secret = self._token()
        lines = [*self._webhook(engine), *_welcome(username, password, secret)]
        if credentials is not None:
            _write_private(credentials, "\n".join(lines) + "\n")
        if self.verbosity >= 1:
            self.stdout.write("\n".join(lines))

    def _token(self) -> str:
        """One demo token at any time: the previous one is revoked, since its secret cannot be shown again."""
        revoked = ApiToken.objects.filter(scope=DEMO_SCOPE, name=DEMO_TOKEN_NAME, revoked=False).update(revoked=True)
        if revoked and self.verbosity >= 1:
            self.stdout.write(f"revoked the previous demo token ({revoked}); the new one is below")
        _, secret = create_token(scope=DEMO_SCOPE, roles=Role.values, name=DEMO_TOKEN_NAME)
        return secret

    def _webhook(self, operator: Principal) -> list[str]:
        """The demo endpoint, with a fresh secret each run (like the token), and a signed test event for it.

        A second run rotates the secret rather than creating another endpoint:
        a secret is shown once, so a restarted `make run` prints a new one.
        """
        from ...services import webhooks

        endpoint = WebhookEndpoint.objects.filter(scope=DEMO_SCOPE, url=DEMO_HOOK_URL).order_by("created_at").first()
        if endpoint is None:
            endpoint, hook_secret = webhooks.create_endpoint(
                principal=operator,
                scope=DEMO_SCOPE,
                url=DEMO_HOOK_URL,
                event_types=[],
                format=WebhookFormat.STANDARD,
                description="demo receiver: python examples/webhook_receiver.py",
            )
        else:
            if not endpoint.active:
                webhooks.enable_endpoint(principal=operator, endpoint_id=endpoint.id)
            endpoint, hook_secret = webhooks.rotate_secret(principal=operator, endpoint_id=endpoint.id)
        # Something to see the moment the receiver is up: retries reach a receiver started later.
        webhooks.send_test(principal=operator, endpoint_id=endpoint.id)
        return [
            f"demo webhook endpoint {endpoint.id} -> {DEMO_HOOK_URL}; watch its deliveries with",
            f"  .venv/bin/python examples/webhook_receiver.py --secret {hook_secret}",
        ]


def _welcome(username: str, password: str, token: str) -> list[str]:
    """The lines a newcomer needs last: the login, the token (alone on its line, to copy) and the demo's links."""
    # CONSOLE_BASE_URL: `make run` sets it from PORT, so the links name the port actually served.
    base = settings.CONSOLE_BASE_URL
    return [
        f"login: {base}/console/  user {username}  password {password}",
        f"API token (all roles in scope '{DEMO_SCOPE}'):",
        token,
        f"approvals waiting: {base}/console/approvals/   API docs: {base}/api/docs/   admin: {base}/admin/",
    ]


def _write_private(path: Path, text: str) -> None:
    """Readable by this user only, as .env is: it holds a live token."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    path.chmod(0o600)  # a file left by an earlier run keeps its mode otherwise
