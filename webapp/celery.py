"""The Celery application; workers start with `celery -A webapp worker`."""

from __future__ import annotations

import os

from celery import Celery
from kombu.transport import TRANSPORT_ALIASES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
# The embedded broker (`filesystem://`) writes each message whole before a worker can take
# it (webapp/broker.py says why).
TRANSPORT_ALIASES["filesystem"] = "webapp.broker:Transport"

app = Celery("webapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
