from __future__ import annotations

from django.contrib import admin

from webapp.teams.models import ApiToken, Membership, Team


class MembershipInline(admin.TabularInline[Membership, Team]):
    model = Membership
    extra = 0


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin[Team]):
    list_display = ["name", "slug", "personal", "created_at"]
    inlines = [MembershipInline]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin[ApiToken]):
    list_display = ["name", "user", "prefix", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["digest", "prefix"]
