"""`python manage.py canary [--worker NODE] [--language NAME] [--json]`: run the canaries
here, as a worker would, and record them for the local node."""

from __future__ import annotations

import json
import socket
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluator.doctor import DoctorReport
from evaluator.languages.registry import canonical_name
from webapp.health.models import Worker
from webapp.health.services import canary_run


def local_workers() -> list[str]:
    """The running workers recorded on this machine (`name@host`), else Celery's default
    node name here."""
    host = socket.gethostname()
    names = list(Worker.objects.filter(name__endswith=f"@{host}", stopped_at=None)
                 .values_list("name", flat=True))
    return names or [f"celery@{host}"]


class Command(BaseCommand):
    help = ("Run each language's canary (`python -m evaluator doctor`) under this machine's "
            "EVALUATOR_SANDBOX, record the results for the local worker nodes, and have each "
            "consume the queues of the languages that passed. Exits 1 when any failed.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--worker", action="append", default=[], metavar="NODE",
                            help="a worker node name (default: the running workers recorded "
                                 "on this machine, else celery@<hostname>)")
        parser.add_argument("--language", action="append", default=[], metavar="NAME",
                            help="a language to check (default: the worker's languages)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        languages = []
        for name in options["language"]:
            canonical = canonical_name(name)
            if canonical is None:
                raise CommandError(f"unknown language {name!r}")
            languages.append(canonical)
        failed = False
        reports: dict[str, Any] = {}
        for worker in options["worker"] or local_workers():
            checks = canary_run(worker=worker, languages=languages or None)
            report = DoctorReport(tuple(checks.values()))
            failed = failed or not report.ok
            if options["json"]:
                reports[worker] = report.to_dict()
            else:
                self.stdout.write(f"{worker}:\n{report.text()}")
        if options["json"]:
            self.stdout.write(json.dumps(reports, indent=2))
        if failed:
            raise SystemExit(1)
