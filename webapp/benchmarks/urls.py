from __future__ import annotations

from django.urls import path

from webapp.benchmarks import views

app_name = "benchmarks"
urlpatterns = [
    path("datasets/", views.datasets, name="datasets"),
    path("datasets/catalogue/import/", views.catalogue_import, name="catalogue_import"),
    path("datasets/catalogue/imports/<int:job_id>/", views.catalogue_import_status,
         name="catalogue_import_status"),
]
