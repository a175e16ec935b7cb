"""factory_boy factories for the web app's models."""

from __future__ import annotations

from django.contrib.auth.models import User
from factory.declarations import PostGenerationMethodCall, Sequence, SubFactory
from factory.django import DjangoModelFactory

from webapp.runs.models import Run
from webapp.teams.models import Membership, Team

PASSWORD = "correct-horse-battery"


class UserFactory(DjangoModelFactory[User]):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = Sequence(lambda n: f"user{n}")
    password = PostGenerationMethodCall("set_password", PASSWORD)


class TeamFactory(DjangoModelFactory[Team]):
    class Meta:
        model = Team

    name = Sequence(lambda n: f"Team {n}")
    slug = Sequence(lambda n: f"team-{n}")


class MembershipFactory(DjangoModelFactory[Membership]):
    class Meta:
        model = Membership

    team = SubFactory(TeamFactory)
    user = SubFactory(UserFactory)
    role = Membership.Role.MEMBER


class RunFactory(DjangoModelFactory[Run]):
    """A run without samples, for access tests; real runs come from `run_create`."""

    class Meta:
        model = Run

    owner = SubFactory(UserFactory)
    team = SubFactory(TeamFactory)
    visibility = Run.Visibility.TEAM
    name = Sequence(lambda n: f"run {n}")
    model_name = "test-model"
    file_name = "samples.jsonl"
    file_sha256 = Sequence(lambda n: f"{n:064x}")
    file_size = 100
    file_layout = "completion"
    fingerprint = Sequence(lambda n: f"{n:064x}")
    harness_version = "1.0.0"
    status = Run.Status.FINISHED
