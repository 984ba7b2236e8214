from django.urls import path

from . import approvals, closures, discovery, floors, flows, receipts, views, webhooks
from .lane import plain

urlpatterns = [
    path("runs", plain(views.RunList), name="runs"),
    path("runs/<uuid:pk>", views.RunDetail.as_view(), name="run"),
    path("runs/<uuid:pk>/events", views.RunEvents.as_view(), name="run-events"),
    path("runs/<uuid:pk>/suspend", plain(views.Suspend), name="run-suspend"),
    path("runs/<uuid:pk>/resume", plain(views.Resume), name="run-resume"),
    path("runs/<uuid:pk>/complete", plain(views.Complete), name="run-complete"),
    path("runs/<uuid:pk>/fail", plain(views.Fail), name="run-fail"),
    path("runs/<uuid:pk>/cancel", plain(views.Cancel), name="run-cancel"),
    path("runs/<uuid:pk>/admissions", plain(views.RunAdmissions), name="run-admissions"),
    path("runs/<uuid:pk>/admissions/latest", views.LatestAdmission.as_view(), name="run-admission-latest"),
    path("suspensions", views.SuspensionList.as_view(), name="suspensions"),
    path("suspensions/<uuid:pk>", views.SuspensionDetail.as_view(), name="suspension-detail"),
    path("approvals", views.ApprovalList.as_view(), name="approvals"),
    path("approvals/<uuid:pk>", approvals.ApprovalDetail.as_view(), name="approval"),
    path("approvals/<uuid:pk>/decide", plain(views.Decide), name="approval-decide"),
    path("admissions", views.AdmissionList.as_view(), name="admissions"),
    path("admissions/<uuid:pk>/start", plain(views.StartAdmission), name="admission-start"),
    path("agent-replies/runs", discovery.AgentReplyRuns.as_view(), name="agent-reply-runs"),
    path("runs/<uuid:pk>/closures", closures.RunClosures.as_view(), name="run-closures"),
    path("runs/<uuid:pk>/closures/<uuid:suspension_id>", closures.RunClosure.as_view(), name="run-closure"),
    path("runs/<uuid:pk>/expiries/<uuid:suspension_id>", receipts.RunExpiry.as_view(), name="run-expiry"),
    path("flow-waits", flows.ParkFlowWait.as_view(), name="flow-waits"),
    path("dispatch/resume", flows.DispatchResume.as_view(), name="dispatch-resume"),
    path("approval-floors", floors.ApprovalFloorList.as_view(), name="approval-floors"),
    path("approval-floors/<uuid:pk>", floors.ApprovalFloorDetail.as_view(), name="approval-floor"),
    path("webhooks", webhooks.WebhookList.as_view(), name="webhooks"),
    path("webhooks/<uuid:pk>", webhooks.WebhookDetail.as_view(), name="webhook"),
    path("webhooks/<uuid:pk>/disable", webhooks.DisableWebhook.as_view(), name="webhook-disable"),
    path("webhooks/<uuid:pk>/enable", webhooks.EnableWebhook.as_view(), name="webhook-enable"),
    path("webhooks/<uuid:pk>/rotate-secret", webhooks.RotateWebhookSecret.as_view(), name="webhook-rotate-secret"),
    path("webhooks/<uuid:pk>/test", webhooks.TestWebhook.as_view(), name="webhook-test"),
    path("webhooks/<uuid:pk>/messages", webhooks.WebhookMessages.as_view(), name="webhook-messages"),
    path(
        "webhooks/<uuid:pk>/messages/<uuid:message_id>/redeliver",
        webhooks.RedeliverMessage.as_view(),
        name="webhook-message-redeliver",
    ),
]
