"""Bearer-token authentication for the JSON API."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from webapp.teams.selectors import user_for_token
from webapp.teams.services import token_touch

View = Callable[..., HttpResponse]


def _unauthorized(message: str) -> JsonResponse:
    response = JsonResponse({"error": "unauthorized", "message": message}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response


def api_auth(*, allow_session: bool) -> Callable[[View], View]:
    """Authenticate by `Authorization: Bearer <token>`.

    Writes take a token only, so a browser's session cookie can never be used for them and
    CSRF cannot apply; reads may also use the session of a signed-in browser.
    """

    def decorate(view: View) -> View:
        @csrf_exempt
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            header = request.headers.get("Authorization", "")
            if header:
                scheme, _, secret = header.partition(" ")
                if scheme.lower() != "bearer" or not secret.strip():
                    return _unauthorized("Use the header `Authorization: Bearer <token>`.")
                found = user_for_token(secret=secret.strip())
                if found is None:
                    return _unauthorized("The token is unknown or has been revoked.")
                request.user, token = found
                token_touch(token=token)
            elif not (allow_session and request.user.is_authenticated):
                return _unauthorized("An API token is required (`Authorization: Bearer ...`).")
            try:
                return view(request, *args, **kwargs)
            except Http404:
                return JsonResponse({"error": "not_found", "message": "No such object."},
                                    status=404)

        return wrapper

    return decorate
