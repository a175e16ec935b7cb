from __future__ import annotations

from django.urls import path

from webapp.runs import api

app_name = "api"
urlpatterns = [
    path("runs", api.runs_create, name="runs"),
    path("runs/<int:run_id>", api.runs_detail, name="run"),
    path("runs/<int:run_id>/results", api.runs_results, name="run_results"),
    path("datasets", api.datasets, name="datasets"),
]
