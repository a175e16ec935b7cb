"""The request of a signed-in user, for type checks.

A view behind `login_required`, or an API operation behind a token or session auth
(`webapp.teams.api_auth`), only ever sees a stored account as `request.user`. Such views
take a `SignedInRequest`, so the user passes to services as a `User` without a check.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest


class SignedInRequest(HttpRequest):
    user: User
