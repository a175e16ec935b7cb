from __future__ import annotations

from django.urls import path

from webapp.suites import api

app_name = "suites_api"
urlpatterns = [
    path("suites", api.suites_create, name="suites"),
    path("suites/<int:suite_id>", api.suites_detail, name="suite"),
    path("suites/<int:suite_id>/runs", api.suites_add_runs, name="suite_runs"),
]
