from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from webapp.benchmarks import urls as benchmarks_urls
from webapp.explore import urls as explore_urls
from webapp.teams import urls as teams_urls
from webapp.teams.views import signup

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/signup/", signup, name="signup"),
    path("api/", include("webapp.runs.api_urls")),
    path("admin/", admin.site.urls),
    path("compare/", include((explore_urls.compare_patterns, "compare"))),
    path("suites/", include("webapp.suites.urls")),
    path("suites/", include("webapp.suites.fidelity.urls")),
    # The explore app serves some pages of these namespaces: see webapp/explore/urls.py.
    path("", include((teams_urls.urlpatterns + explore_urls.team_patterns, "teams"))),
    path("", include((benchmarks_urls.urlpatterns + explore_urls.benchmark_patterns,
                      "benchmarks"))),
    path("", include("webapp.runs.urls")),
    path("", include("webapp.defects.urls")),
    path("", include("webapp.health.urls")),
]
