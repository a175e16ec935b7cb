"""Who calls the JSON API: a bearer token, or for reads a signed-in browser's session.

Writes take a token only, so a browser's session cookie can never be used for them and CSRF
cannot apply. The two are django-ninja auth classes, so the OpenAPI schema names them as
security schemes; a refusal is the API's usual 401 body (`unauthorized_answer`).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from ninja.security import APIKeyCookie, HttpBearer

from webapp.teams.selectors import user_for_token
from webapp.teams.services import token_touch

TOKEN_REQUIRED = "An API token is required (`Authorization: Bearer ...`)."  # noqa: S105


class Unauthorized(Exception):
    """A credential was given and is wrong: answer 401 at once, whatever else came along."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def unauthorized_answer(message: str) -> JsonResponse:
    response = JsonResponse({"error": "unauthorized", "message": message}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response


class TokenAuth(HttpBearer):
    """`Authorization: Bearer <token>`, a token made on the Tokens page."""

    def __call__(self, request: HttpRequest) -> Any:
        header = request.headers.get("Authorization", "")
        if not header:
            return None
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            raise Unauthorized("Use the header `Authorization: Bearer <token>`.")
        return self.authenticate(request, secret.strip())

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        found = user_for_token(secret=token)
        if found is None:
            raise Unauthorized("The token is unknown or has been revoked.")
        request.user, stored = found
        token_touch(token=stored)
        return request.user


class SessionAuth(APIKeyCookie):
    """The session of a signed-in browser, for reads only (they change nothing, so CSRF
    does not matter)."""

    param_name = settings.SESSION_COOKIE_NAME

    def __init__(self) -> None:
        super().__init__(csrf=False)

    def __call__(self, request: HttpRequest) -> Any:
        return request.user if request.user.is_authenticated else None

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        return self(request)


TOKEN = [TokenAuth()]
TOKEN_OR_SESSION = [TokenAuth(), SessionAuth()]
