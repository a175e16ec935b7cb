"""`python manage.py suite_canonical USER DATASET... [--team SLUG] [--visibility V]`: a suite
whose runs are the datasets' own canonical solutions.

Its answer is known: every variant passes every problem, so any cell that does not, and any
problem the translation-fidelity page flags, is a defect of the data, not of a model. The
files go through the same path as an upload (`suite_upload`): checked, all or nothing, then
evaluated by the workers. Datasets without canonical solutions (MultiPL-E, HumanEval-XL's
Java, JavaScript and Go) are left out, and the command says so.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.benchmarks.models import Dataset
from webapp.benchmarks.selectors import dataset_lookup
from webapp.runs.models import Run
from webapp.suites.services import SuiteFile, suite_create, suite_upload
from webapp.teams.selectors import teams_for_user


def canonical_file(dataset: Dataset) -> SimpleUploadedFile | None:
    """One sample per problem, the problem's canonical solution; None if it has none."""
    lines = [
        json.dumps({"task_id": task_id, "completion": solution}, ensure_ascii=False)
        for task_id, solution in dataset.variants.order_by("problem__number")
        .values_list("problem__task_id", "canonical_solution")
        if solution.strip()
    ]
    if not lines:
        return None
    name = dataset.key.replace("/", "-") + "-canonical.jsonl"
    return SimpleUploadedFile(name, ("\n".join(lines) + "\n").encode(),
                              content_type="application/jsonl")


class Command(BaseCommand):
    help = "Make a suite of the canonical solutions of the given datasets (keys or ids)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("datasets", nargs="+", help="keys such as humaneval/python/en")
        parser.add_argument("--team", default="", help="team slug; the user's personal team")
        parser.add_argument("--visibility", default=Run.Visibility.TEAM,
                            choices=Run.Visibility.values)
        parser.add_argument("--name", default="Canonical solutions")

    def handle(self, *args: Any, **options: Any) -> None:
        user = User.objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"No user {options['username']!r}.")
        teams = teams_for_user(user=user)
        team = teams.filter(slug=options["team"]).first() if options["team"] else teams.first()
        if team is None:
            raise CommandError("The user is not a member of that team.")
        files = []
        for reference in options["datasets"]:
            dataset = dataset_lookup(reference=reference)
            if dataset is None:
                raise CommandError(f"No dataset {reference!r}; import it first "
                                   "(manage.py import_dataset).")
            uploaded = canonical_file(dataset)
            if uploaded is None:
                self.stderr.write(f"{dataset.key}: no canonical solutions; left out.")
                continue
            files.append(SuiteFile(uploaded=uploaded, dataset=dataset))
        if not files:
            raise CommandError("None of these datasets has canonical solutions.")
        suite = suite_create(owner=user, team=team, name=options["name"],
                             model_name="canonical solutions",
                             visibility=options["visibility"])
        outcome = suite_upload(user=user, suite=suite, files=files)
        for item in outcome.files:
            state = ("; ".join(issue.message for issue in item.errors) if item.errors
                     else f"run {item.run.pk}" if item.run else "fine")
            self.stdout.write(f"{item.dataset.key}: {state}")
        if not outcome.created:
            suite.delete()
            raise CommandError("Nothing was created: " + " ".join(outcome.errors or [
                "see the files' problems above."]))
        self.stdout.write(f"suite {suite.pk}: {suite.get_absolute_url()}")
