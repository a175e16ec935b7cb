"""Reads for accounts, teams and tokens."""

from __future__ import annotations

from typing import cast

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet
from django.http import Http404

from webapp.teams.models import ApiToken, Membership, Team
from webapp.teams.services import TOKEN_PREFIX, token_digest


def teams_for_user(*, user: User | AnonymousUser) -> QuerySet[Team]:
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user_id=user.pk).order_by("-personal", "name")


def default_team(*, user: User) -> Team:
    """The user's personal team, or failing that the first team they belong to."""
    team = teams_for_user(user=user).first()
    if team is None:
        raise Team.DoesNotExist(f"{user} belongs to no team")
    return team


def get_team_for_user(*, user: User | AnonymousUser, slug: str) -> Team:
    """The team if `user` is a member; a 404 otherwise, so outsiders learn nothing."""
    team = teams_for_user(user=user).filter(slug=slug).first()
    if team is None:
        raise Http404("No such team")
    return team


def team_role(*, team: Team, user: User | AnonymousUser) -> str | None:
    return role_in_team(user=user, team_id=team.pk)


ROLES_KEPT = "_team_roles"
"""The attribute of a request's user that holds the roles already read (`keep_roles`)."""


def role_in_team(*, user: object, team_id: int) -> str | None:
    """The user's role in the team, or None for a non-member or anonymous viewer.

    A page asks it several times for one run (may the viewer see it, manage it, evaluate
    it; each section asks again): where the request kept its answers (`keep_roles`), one
    query serves them all."""
    if not getattr(user, "is_authenticated", False):
        return None
    kept: dict[int, str | None] | None = getattr(user, ROLES_KEPT, None)
    if kept is not None and team_id in kept:
        return kept[team_id]
    user_id = cast(int, getattr(user, "pk"))  # noqa: B009 - any signed-in viewer has one
    role = (Membership.objects.filter(team_id=team_id, user_id=user_id)
            .values_list("role", flat=True).first())
    if kept is not None:
        kept[team_id] = role
    return role


def keep_role(*, user: object, team_id: int, role: str | None) -> None:
    """A role read along with something else (the run's row), for `role_in_team` to answer
    from, where the request keeps its answers (`keep_roles`)."""
    kept: dict[int, str | None] | None = getattr(user, ROLES_KEPT, None)
    if kept is not None and getattr(user, "is_authenticated", False):
        kept[team_id] = role


def keep_roles(user: object) -> None:
    """Let `role_in_team` keep its answers on `user` for the rest of the request. Only a
    request's own user object: it is made for the request and dropped with it, so an
    answer never outlives a membership change by more than the request that read it."""
    if getattr(user, "is_authenticated", False):
        setattr(user, ROLES_KEPT, {})


def team_memberships(*, team: Team) -> QuerySet[Membership]:
    return team.memberships.select_related("user").order_by("-role", "user__username")


def tokens_for_user(*, user: User) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user_id=user.pk)


def user_for_token(*, secret: str) -> tuple[User, ApiToken] | None:
    """The active token's user, or None for an unknown or revoked token."""
    if not secret.startswith(TOKEN_PREFIX):
        return None
    token = (
        ApiToken.objects.select_related("user")
        .filter(digest=token_digest(secret), revoked_at=None, user__is_active=True)
        .first()
    )
    if token is None:
        return None
    return token.user, token
