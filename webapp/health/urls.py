from __future__ import annotations

from django.urls import path

from webapp.health import views

app_name = "health"
urlpatterns = [
    path("status/", views.status_page, name="status"),
    path("status.json", views.status_json, name="status_json"),
]
