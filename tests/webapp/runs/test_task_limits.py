"""The tasks that may work as long as a chunk (a chunk, a profile comparison, the patched
scores) are acknowledged once done, so that a worker lost mid-way leaves the message to
another, and are stopped by the chunk time limit, softly first and for good 30 s later."""

from __future__ import annotations

import pytest
from celery import current_app
from django.conf import settings

from webapp.defects.services import PATCHED_SCORES
from webapp.runs.messaging.dispatch import COMPARE_PROFILES, EVALUATE_CHUNK


@pytest.mark.parametrize("name", [EVALUATE_CHUNK, COMPARE_PROFILES, PATCHED_SCORES])
def test_a_chunk_long_task_is_acknowledged_late_and_stopped_at_the_chunk_limit(name):
    task = current_app.tasks[name]
    assert task.acks_late is True
    assert task.soft_time_limit == settings.CHUNK_TIME_LIMIT
    assert task.time_limit == settings.CHUNK_TIME_LIMIT + 30
