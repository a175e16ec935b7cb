"""`python manage.py resume_runs [--all-running]`: one pass of the sweeper, by hand."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from webapp.runs.worker.recovery import runs_sweep


class Command(BaseCommand):
    help = (
        "Send again the work of interrupted runs, as the periodic sweeper (Celery beat) does "
        "by itself. Without --all-running only chunks whose heartbeat lease has expired are "
        "taken back (safe while workers run); with it, every running chunk is (only when no "
        "worker is running, as at `make run` start-up)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--all-running", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        report = runs_sweep(all_running=options["all_running"])
        resumed = sorted({*report.taken_back, *report.started_runs, *report.finalized_runs})
        if resumed or report.resent_chunks:
            self.stdout.write(f"Resumed runs: {', '.join(map(str, resumed)) or '-'}; "
                              f"chunks sent again: {report.resent_chunks}")
