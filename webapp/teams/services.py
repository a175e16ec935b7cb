"""Writes for accounts, teams and tokens."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from webapp.teams.models import ApiToken, Membership, Team

TEAM_NAME_MAX = 100
TOKEN_PREFIX = "wb_"  # noqa: S105 (a marker that tells tokens apart, not a secret)


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str
    """The whole token; shown once, never stored."""


def token_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _unique_slug(name: str) -> str:
    base = slugify(name)[:80] or "team"
    slug, suffix = base, 1
    while Team.objects.filter(slug=slug).exists():
        suffix += 1
        slug = f"{base}-{suffix}"
    return slug


def team_create(*, owner: User, name: str, personal: bool = False) -> Team:
    with transaction.atomic():
        team = Team.objects.create(name=name, slug=_unique_slug(name), personal=personal)
        Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    return team


def user_sign_up(*, username: str, password: str, email: str = "") -> User:
    """Create an account with its personal team, where its runs go by default."""
    with transaction.atomic():
        user = User.objects.create_user(username=username, password=password, email=email)
        # A username may be longer than a team's name column (150 and 100 characters).
        suffix = "'s team"
        team_create(owner=user, name=username[:TEAM_NAME_MAX - len(suffix)] + suffix,
                    personal=True)
    return user


def membership_add(
    *, team: Team, actor: User, username: str, role: str = Membership.Role.MEMBER
) -> Membership:
    _require_owner(team=team, actor=actor)
    if team.personal:
        raise ValidationError("A personal team has only its owner; create a team to share runs.")
    if role not in Membership.Role.values:
        raise ValidationError(f"Unknown role {role!r}.")
    user = User.objects.filter(username=username).first()
    if user is None:
        raise ValidationError(f"There is no user called {username!r}.")
    try:
        with transaction.atomic():
            return Membership.objects.create(team=team, user=user, role=role)
    except IntegrityError:
        raise ValidationError(f"{username} is already a member of {team.name}.") from None


def membership_remove(*, team: Team, actor: User, user_id: int) -> None:
    _require_owner(team=team, actor=actor)
    with transaction.atomic():
        membership = Membership.objects.select_for_update().filter(
            team=team, user_id=user_id
        ).first()
        if membership is None:
            return
        owners = Membership.objects.filter(team=team, role=Membership.Role.OWNER)
        if membership.role == Membership.Role.OWNER and owners.count() == 1:
            raise ValidationError("A team keeps at least one owner.")
        membership.delete()


def _require_owner(*, team: Team, actor: User) -> None:
    if not Membership.objects.filter(
        team=team, user_id=actor.pk, role=Membership.Role.OWNER
    ).exists():
        raise PermissionDenied("Only a team's owners can change its members.")


def token_issue(*, user: User, name: str) -> IssuedToken:
    prefix = secrets.token_hex(4)
    secret = f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(
        user=user, name=name or "token", prefix=prefix, digest=token_digest(secret)
    )
    return IssuedToken(token=token, secret=secret)


def token_revoke(*, user: User, token_id: int) -> bool:
    """Revoke one of `user`'s tokens; False when there is no such active token."""
    return bool(
        ApiToken.objects.filter(pk=token_id, user_id=user.pk, revoked_at=None).update(
            revoked_at=timezone.now()
        )
    )


def token_touch(*, token: ApiToken) -> None:
    # Updated at most once a minute: a script polling the API should not write every call.
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
