"""`python manage.py resume_runs [--all-running]`: send again the work of interrupted runs."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from webapp.runs.services import runs_resume


class Command(BaseCommand):
    help = (
        "Re-enqueue queued and interrupted runs. Without --all-running only chunks whose "
        "claim has expired are taken back (safe while workers run, e.g. from cron); with it, "
        "every running chunk is (only when no worker is running, as at `make run` start-up)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--all-running", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        resumed = runs_resume(all_running=options["all_running"])
        if resumed:
            self.stdout.write(f"Resumed runs: {', '.join(map(str, resumed))}")
