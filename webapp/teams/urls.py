from __future__ import annotations

from django.urls import path

from webapp.teams import views

app_name = "teams"
urlpatterns = [
    path("teams/", views.team_list, name="list"),
    path("teams/<slug:slug>/members/", views.member_add, name="member_add"),
    path("teams/<slug:slug>/members/<int:user_id>/remove/", views.member_remove,
         name="member_remove"),
    path("settings/tokens/", views.tokens, name="tokens"),
    path("settings/tokens/<int:token_id>/revoke/", views.token_revoke_view, name="token_revoke"),
]
