from __future__ import annotations

from django.contrib import admin

from webapp.runs.models import Run


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["pk", "name", "owner", "team", "visibility", "status", "done_count",
                    "samples_total", "created_at"]
    list_filter = ["status", "visibility"]
    raw_id_fields = ["owner", "team", "dataset", "rerun_of"]
