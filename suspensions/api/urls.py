from django.urls import path

from . import approvals, closures, discovery, flows, receipts, views

urlpatterns = [
    path("runs", views.RunList.as_view(), name="runs"),
    path("runs/<uuid:pk>", views.RunDetail.as_view(), name="run"),
    path("runs/<uuid:pk>/events", views.RunEvents.as_view(), name="run-events"),
    path("runs/<uuid:pk>/suspend", views.Suspend.as_view(), name="run-suspend"),
    path("runs/<uuid:pk>/resume", views.Resume.as_view(), name="run-resume"),
    path("runs/<uuid:pk>/complete", views.Complete.as_view(), name="run-complete"),
    path("runs/<uuid:pk>/fail", views.Fail.as_view(), name="run-fail"),
    path("runs/<uuid:pk>/cancel", views.Cancel.as_view(), name="run-cancel"),
    path("runs/<uuid:pk>/admissions", views.RunAdmissions.as_view(), name="run-admissions"),
    path("runs/<uuid:pk>/admissions/latest", views.LatestAdmission.as_view(), name="run-admission-latest"),
    path("suspensions", views.SuspensionList.as_view(), name="suspensions"),
    path("suspensions/<uuid:pk>", views.SuspensionDetail.as_view(), name="suspension-detail"),
    path("approvals", views.ApprovalList.as_view(), name="approvals"),
    path("approvals/<uuid:pk>", approvals.ApprovalDetail.as_view(), name="approval"),
    path("approvals/<uuid:pk>/decide", views.Decide.as_view(), name="approval-decide"),
    path("admissions", views.AdmissionList.as_view(), name="admissions"),
    path("admissions/<uuid:pk>/start", views.StartAdmission.as_view(), name="admission-start"),
    path("agent-replies/runs", discovery.AgentReplyRuns.as_view(), name="agent-reply-runs"),
    path("runs/<uuid:pk>/closures", closures.RunClosures.as_view(), name="run-closures"),
    path("runs/<uuid:pk>/closures/<uuid:suspension_id>", closures.RunClosure.as_view(), name="run-closure"),
    path("runs/<uuid:pk>/expiries/<uuid:suspension_id>", receipts.RunExpiry.as_view(), name="run-expiry"),
    path("flow-waits", flows.ParkFlowWait.as_view(), name="flow-waits"),
    path("dispatch/resume", flows.DispatchResume.as_view(), name="dispatch-resume"),
]
