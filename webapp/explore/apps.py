from __future__ import annotations

from django.apps import AppConfig


class ExploreConfig(AppConfig):
    name = "webapp.explore"
    label = "explore"
    verbose_name = "Exploring results"
