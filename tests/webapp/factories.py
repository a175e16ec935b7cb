"""factory_boy factories for the web app's models."""

from __future__ import annotations

import factory
from django.contrib.auth.models import User

from webapp.runs.models import Run
from webapp.teams.models import Membership, Team

PASSWORD = "correct-horse-battery"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team

    name = factory.Sequence(lambda n: f"Team {n}")
    slug = factory.Sequence(lambda n: f"team-{n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    team = factory.SubFactory(TeamFactory)
    user = factory.SubFactory(UserFactory)
    role = Membership.Role.MEMBER


class RunFactory(factory.django.DjangoModelFactory):
    """A run without samples, for access tests; real runs come from `run_create`."""

    class Meta:
        model = Run

    owner = factory.SubFactory(UserFactory)
    team = factory.SubFactory(TeamFactory)
    visibility = Run.Visibility.TEAM
    name = factory.Sequence(lambda n: f"run {n}")
    model_name = "test-model"
    file_name = "samples.jsonl"
    file_sha256 = factory.Sequence(lambda n: f"{n:064x}")
    file_size = 100
    file_layout = "completion"
    fingerprint = factory.Sequence(lambda n: f"{n:064x}")
    harness_version = "1.0.0"
    status = Run.Status.FINISHED
