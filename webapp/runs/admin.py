from __future__ import annotations

from django.contrib import admin

from webapp.runs.models import Run, RunChange


@admin.register(Run)
class RunAdmin(admin.ModelAdmin[Run]):
    list_display = ["pk", "name", "owner", "team", "visibility", "status", "done_count",
                    "samples_total", "created_at", "retracted_at", "deleted_at"]
    list_filter = ["status", "visibility"]
    raw_id_fields = ["owner", "team", "dataset", "rerun_of"]


@admin.register(RunChange)
class RunChangeAdmin(admin.ModelAdmin[RunChange]):
    """The history is a record: it is read here, never written."""

    list_display = ["created_at", "run", "actor_name", "field", "before", "after"]
    list_filter = ["field"]
    readonly_fields = ["run", "actor", "actor_name", "field", "before", "after", "created_at"]

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False
