from __future__ import annotations

from django.urls import path

from webapp.runs import api, lifecycle_api

app_name = "api"
urlpatterns = [
    path("runs", api.runs_create, name="runs"),
    path("runs/<int:run_id>", lifecycle_api.run_item, name="run"),
    path("runs/<int:run_id>/restore", lifecycle_api.run_restore_api, name="run_restore"),
    path("runs/<int:run_id>/leaderboards", lifecycle_api.run_leaderboards_api,
         name="run_leaderboards"),
    path("runs/<int:run_id>/changes", lifecycle_api.run_changes_api, name="run_changes"),
    path("runs/<int:run_id>/results", api.runs_results, name="run_results"),
    path("datasets", api.datasets, name="datasets"),
]
