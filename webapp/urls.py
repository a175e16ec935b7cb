from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from webapp.teams.views import signup

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/signup/", signup, name="signup"),
    path("api/", include("webapp.runs.api_urls")),
    path("api/", include("webapp.suites.api_urls")),
    path("admin/", admin.site.urls),
    path("compare/", include("webapp.compare.urls")),
    path("suites/", include("webapp.suites.urls")),
    path("suites/", include("webapp.suites.fidelity_urls")),
    path("", include("webapp.teams.urls")),
    path("", include("webapp.benchmarks.urls")),
    path("", include("webapp.runs.urls")),
    path("", include("webapp.defects.urls")),
]
