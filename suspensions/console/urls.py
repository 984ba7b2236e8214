from django.contrib.auth import views as auth_views
from django.urls import path

from . import act, approvals, away, bulk, closures, floors, routes, signin, views, webhooks

app_name = "console"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("login/", signin.ConsoleLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("approvals/", approvals.inbox, name="inbox"),
    path("approvals/decide", bulk.decide_many, name="decide_many"),
    path("approvals/<uuid:pk>/", approvals.approval, name="approval"),
    path("approvals/<uuid:pk>/decide", approvals.decide, name="decide"),
    path("approvals/<uuid:pk>/extend", approvals.extend, name="extend"),
    path("act/", act.resume, name="act_resume"),
    path("act/<str:token>", act.act, name="act"),
    path("away/", away.away, name="away"),
    path("away/<uuid:pk>/end", away.end, name="away_end"),
    path("runs/", views.runs, name="runs"),
    path("runs/<uuid:pk>/", views.run, name="run"),
    path("uncertain/", views.uncertain, name="uncertain"),
    path("runs/<uuid:pk>/close", closures.close, name="close"),
    path("runs/<uuid:pk>/closures/<uuid:suspension_id>/", closures.receipt, name="closure"),
    path("approval-floors/", floors.floor_list, name="floors"),
    path("approval-floors/new", floors.new_floor, name="floor_new"),
    path("approval-floors/<uuid:pk>/", floors.edit_floor, name="floor"),
    path("approval-floors/<uuid:pk>/delete", floors.delete_floor, name="floor_delete"),
    path("webhooks/", webhooks.endpoints, name="webhooks"),
    path("webhooks/new", webhooks.new_endpoint, name="webhook_new"),
    path("webhooks/<uuid:pk>/", webhooks.endpoint, name="webhook"),
    path("webhooks/<uuid:pk>/secret", webhooks.secret_page, name="webhook_secret"),
    path("webhooks/<uuid:pk>/disable", webhooks.change, {"action": "disable"}, name="webhook_disable"),
    path("webhooks/<uuid:pk>/enable", webhooks.change, {"action": "enable"}, name="webhook_enable"),
    path("webhooks/<uuid:pk>/test", webhooks.change, {"action": "test"}, name="webhook_test"),
    path("webhooks/<uuid:pk>/rotate-secret", webhooks.change, {"action": "rotate"}, name="webhook_rotate"),
    path("webhooks/<uuid:pk>/messages/<uuid:message_id>/redeliver", webhooks.redeliver, name="webhook_redeliver"),
    path("notification-routes/", routes.route_list, name="routes"),
    path("notification-routes/<uuid:pk>/disable", routes.change, {"action": "disable"}, name="route_disable"),
    path("notification-routes/<uuid:pk>/enable", routes.change, {"action": "enable"}, name="route_enable"),
    path("notification-routes/<uuid:pk>/delete", routes.change, {"action": "delete"}, name="route_delete"),
]
