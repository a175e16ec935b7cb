"""The Django project: settings, ASGI entry point, Celery app and URLs."""

from __future__ import annotations

from webapp.celery import app as celery_app

__all__ = ["celery_app"]
