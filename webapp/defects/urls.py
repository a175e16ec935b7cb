from __future__ import annotations

from django.urls import path

from webapp.defects import views

app_name = "defects"
urlpatterns = [
    path("runs/<int:run_id>/defect-scores/", views.run_defect_scores_status, name="status"),
    path("runs/<int:run_id>/defect-scores/patched/", views.run_patched_compute,
         name="compute"),
]
