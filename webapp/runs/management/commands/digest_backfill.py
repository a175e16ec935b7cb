"""`python manage.py digest_backfill [RUN_ID ...] [--replace | --all] [--count]`: the
`RunDigest` of finished runs scored before digests existed (issue 26), so their pages, the
API and the leaderboards read one row instead of scanning their samples."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.runs.models import Run
from webapp.runs.worker.aggregation import finished_run_ids, run_digest_backfill

BATCH_SIZE = 100


class Command(BaseCommand):
    help = (
        "Compute the digest (pass^k, failure breakdown, unstable and verified counts) of "
        "finished runs scored before digests existed: by default every finished run without "
        "one; given run ids, those runs (--replace to compute again those that have one); "
        "--all, every finished run, replacing its digest. Safe to run twice and while "
        "workers score runs. A progress line per run goes to stderr."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run_ids", nargs="*", type=int, metavar="RUN_ID")
        parser.add_argument("--replace", action="store_true",
                            help="Compute again the digest of given runs that have one.")
        parser.add_argument("--all", action="store_true",
                            help="Every finished run, its digest computed again.")
        parser.add_argument("--count", action="store_true",
                            help="Only say how many finished runs lack a digest.")
        parser.add_argument("--batch-size", type=int, default=BATCH_SIZE,
                            help=f"Run ids read a query (default {BATCH_SIZE}).")

    def handle(self, *args: Any, **options: Any) -> None:
        lacking = Run.objects.filter(status=Run.Status.FINISHED, digest__isnull=True)
        if options["count"]:
            self.stdout.write(f"Finished runs without a digest: {lacking.count()}")
            return
        run_ids: list[int] = list(dict.fromkeys(options["run_ids"]))
        if run_ids and options["all"]:
            raise CommandError("give run ids or --all, not both")
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        ids: Iterator[int] | list[int]
        if run_ids:
            known = set(Run.objects.filter(pk__in=run_ids).values_list("pk", flat=True))
            unknown = [run_id for run_id in run_ids if run_id not in known]
            if unknown:
                raise CommandError(
                    f"no run with id {', '.join(map(str, unknown))}: nothing was done")
            ids, total, replace = run_ids, len(run_ids), options["replace"]
        elif options["all"]:
            ids = finished_run_ids(lacking_digest=False, batch_size=options["batch_size"])
            total = Run.objects.filter(status=Run.Status.FINISHED).count()
            replace = True
        else:
            ids = finished_run_ids(lacking_digest=True, batch_size=options["batch_size"])
            total, replace = lacking.count(), False
        self.backfill(ids, total=total, replace=replace)

    def backfill(self, run_ids: Iterator[int] | list[int], *, total: int,
                 replace: bool) -> None:
        started = time.monotonic()
        done = skipped = failed = 0
        for position, run_id in enumerate(run_ids, start=1):
            run_started = time.monotonic()
            try:
                outcome = run_digest_backfill(run_id=run_id, replace=replace)
            except Exception as exc:  # one run's failure must not stop the others
                failed += 1
                self.stderr.write(f"[{position}/{total}] run {run_id}: failed: "
                                  f"{type(exc).__name__}: {exc}")
                continue
            if outcome.stored:
                done += 1
            else:
                skipped += 1
            self.stderr.write(f"[{position}/{total}] run {run_id}: {outcome.note} "
                              f"({time.monotonic() - run_started:.2f} s)")
        self.stdout.write(f"Digests stored: {done}; skipped: {skipped}; failed: {failed}; "
                          f"{time.monotonic() - started:.1f} s")
        if failed:
            raise CommandError(f"{failed} run(s) failed (see above); run the command again "
                               "to retry them")
