from __future__ import annotations

from django.urls import path

from webapp.compare import views

app_name = "compare"
urlpatterns = [
    path("", views.compare_index, name="index"),
    path("<int:a>/<int:b>/", views.compare_pair, name="pair"),
    path("<int:a>/<int:b>/problems/<int:number>/", views.compare_problem, name="problem"),
    path("baseline/<int:base>/", views.compare_baseline, name="baseline"),
    path("many/", views.compare_many, name="many"),
]
