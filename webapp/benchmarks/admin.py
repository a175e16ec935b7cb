from __future__ import annotations

from django.contrib import admin

from webapp.benchmarks.models import Dataset, Problem


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin[Dataset]):
    list_display = ["key", "version", "layout", "problem_count", "imported_at"]


@admin.register(Problem)
class ProblemAdmin(admin.ModelAdmin[Problem]):
    list_display = ["task_id", "number"]
