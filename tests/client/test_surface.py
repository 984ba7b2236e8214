"""The client covers the API: every route of suspensions/api/urls.py has its method, sync and async alike."""

import inspect

from suspensions_client import AsyncClient, Client
from suspensions_client._endpoints import Endpoints, Op

from suspensions.api.urls import urlpatterns

# Route name -> the client methods that call it (each one exercised against the live server in this package).
METHODS = {
    "runs": ["register", "list_runs"],
    "run": ["get_run"],
    "run-events": ["list_events"],
    "run-wait": ["wait_run", "wait_for_admission"],
    # Server-Sent Events, for any SSE client (docs/api.md, "Waiting without webhooks"); an engine long-polls instead.
    "event-stream": [],
    "run-suspend": ["suspend", "pause_for_approval", "pause_for_tools"],
    "run-resume": ["resume"],
    "run-early-results": ["early_result"],
    "callback": ["resume_by_callback"],
    "run-complete": ["complete"],
    "run-fail": ["fail"],
    "run-cancel": ["cancel"],
    "run-admissions": ["admit_reply", "list_admissions"],
    "run-admission-latest": ["latest_admission", "wait_for_admission"],
    "suspensions": ["list_suspensions"],
    "suspension-detail": ["get_suspension"],
    "suspension-extend": ["extend_suspension"],
    "approvals": ["list_approvals"],
    "approval": ["get_approval"],
    "approval-link": ["link_approval"],
    "approval-decide": ["decide"],
    "approvals-decide": ["decide_many"],
    "admissions": ["admitted_work"],
    "admission-start": ["start"],
    "agent-reply-runs": ["agent_reply_runs"],
    "run-closures": ["close_run"],
    "run-closure": ["get_closure"],
    "run-expiry": ["get_expiry"],
    "flow-waits": ["park_flow_wait"],
    "dispatch-resume": ["dispatch_resume"],
    "delegations": ["create_delegation", "list_delegations"],
    "delegation": ["get_delegation"],
    "delegation-end": ["end_delegation"],
    "role-mappings": ["create_role_mapping", "list_role_mappings"],
    "role-mapping": ["get_role_mapping", "delete_role_mapping"],
    "role-changes": ["list_role_changes"],
    "legal-holds": ["create_legal_hold", "list_legal_holds"],
    "legal-hold-release": ["release_legal_hold"],
    "approval-floors": ["create_approval_floor", "list_approval_floors"],
    "approval-floor": ["get_approval_floor", "update_approval_floor", "delete_approval_floor"],
    "webhooks": ["create_webhook", "list_webhooks"],
    "webhook": ["get_webhook"],
    "webhook-disable": ["disable_webhook"],
    "webhook-enable": ["enable_webhook"],
    "webhook-rotate-secret": ["rotate_webhook_secret"],
    "webhook-test": ["test_webhook"],
    "webhook-messages": ["webhook_messages"],
    "webhook-message-redeliver": ["redeliver"],
    "notification-routes": ["create_notification_route", "list_notification_routes"],
    "notification-route": ["get_notification_route", "delete_notification_route"],
    "notification-route-disable": ["disable_notification_route"],
    "notification-route-enable": ["enable_notification_route"],
    "audit-public-key": ["audit_public_key"],
    "audit-export": ["audit_export"],
}


def test_every_route_has_a_client_method_and_every_method_is_an_endpoint_or_a_loop_helper():
    assert {route.name for route in urlpatterns} == set(METHODS)
    ops = {name for name, value in vars(Endpoints).items() if isinstance(value, Op)}
    assert ops == {method for methods in METHODS.values() for method in methods}


def test_the_async_client_has_the_same_methods_as_coroutines_with_the_same_signatures():
    sync, aio = Client("http://127.0.0.1:1", "t"), AsyncClient("http://127.0.0.1:1", "t")
    for name in {method for methods in METHODS.values() for method in methods}:
        assert inspect.signature(getattr(sync, name)) == inspect.signature(getattr(aio, name)), name
        assert inspect.iscoroutinefunction(getattr(aio, name)) and not inspect.iscoroutinefunction(getattr(sync, name))
        assert getattr(sync, name).__doc__, f"{name} has no docstring"
    sync.close()
