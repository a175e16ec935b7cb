from __future__ import annotations

from django.urls import path

from webapp.suites import views

app_name = "suites"
urlpatterns = [
    path("", views.suite_list, name="list"),
    path("new/", views.suite_new, name="new"),
    path("<int:suite_id>/", views.suite_detail, name="detail"),
    path("<int:suite_id>/runs/", views.upload, name="upload"),
    path("<int:suite_id>/runs/attach/", views.attach, name="attach"),
    path("<int:suite_id>/runs/detect/", views.detect, name="detect"),
    path("<int:suite_id>/runs/<int:run_id>/remove/", views.remove, name="remove"),
]
