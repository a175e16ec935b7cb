from __future__ import annotations

from django.urls import path

from webapp.benchmarks import views

app_name = "benchmarks"
urlpatterns = [
    path("datasets/", views.datasets, name="datasets"),
]
