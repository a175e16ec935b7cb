from __future__ import annotations

from django.urls import path

from webapp.benchmarks import views

app_name = "benchmarks"
urlpatterns = [
    path("datasets/", views.datasets, name="datasets"),
    path("datasets/<int:dataset_id>/", views.dataset_detail, name="dataset"),
    path("problems/", views.problem_list, name="problems"),
    path("problems/<int:number>/", views.problem_detail, name="problem"),
]
