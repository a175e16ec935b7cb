from __future__ import annotations

from django.urls import path

from webapp.runs.pages import lifecycle_views, plus_views, profile_views, reproduce_views, views

app_name = "runs"
urlpatterns = [
    path("", views.run_list, name="list"),
    path("runs/new/", views.upload, name="upload"),
    path("runs/new/confirm/", views.upload_confirm, name="upload_confirm"),
    path("runs/new/cancel/", views.upload_cancel, name="upload_cancel"),
    path("runs/<int:run_id>/", views.run_detail, name="detail"),
    path("runs/deleted/", lifecycle_views.deleted_list, name="deleted"),
    path("runs/<int:run_id>/cancel/", lifecycle_views.cancel, name="cancel"),
    path("runs/<int:run_id>/resume/", lifecycle_views.resume, name="resume"),
    path("runs/<int:run_id>/edit/", lifecycle_views.run_edit, name="edit"),
    path("runs/<int:run_id>/leaderboards/", lifecycle_views.run_leaderboards,
         name="leaderboards"),
    path("runs/<int:run_id>/delete/", lifecycle_views.run_delete_confirm, name="delete"),
    path("runs/<int:run_id>/restore/", lifecycle_views.run_restore_view, name="restore"),
    path("runs/<int:run_id>/rerun/", views.rerun, name="rerun"),
    path("runs/<int:run_id>/samples/", views.run_samples_list, name="samples"),
    path("runs/<int:run_id>/samples/<int:sample_id>/", views.sample_detail, name="sample"),
    path("runs/<int:run_id>/scores/pass-at-<int:k>/", views.run_score, name="score"),
    path("runs/<int:run_id>/profiles/", profile_views.run_profiles_status,
         name="profiles_status"),
    path("runs/<int:run_id>/profiles/compare/", profile_views.run_profiles_compare,
         name="profiles_compare"),
    path("profiles/", profile_views.profiles, name="profiles"),
    path("runs/<int:run_id>/export/matrix.csv", views.export_matrix_csv, name="export_csv"),
    path("runs/<int:run_id>/export/matrix.json", views.export_matrix_json, name="export_json"),
    path("runs/<int:run_id>/export/results.jsonl", views.export_humaneval_results,
         name="export_results"),
    path("runs/<int:run_id>/manifest.json", reproduce_views.manifest_json, name="manifest"),
    path("runs/<int:run_id>/plus/", plus_views.score_on_plus, name="plus"),
    path("runs/<int:run_id>/reproduce/", reproduce_views.reproduce, name="reproduce"),
    path("runs/<int:run_id>/reproductions/<int:reproduction_id>/", reproduce_views.reproduction,
         name="reproduction"),
    path("runs/<int:run_id>/reproductions/<int:reproduction_id>/status.json",
         reproduce_views.reproduction_status, name="reproduction_status"),
]
