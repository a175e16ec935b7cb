"""Sign-up, teams and their members, and API tokens. The team page lists runs, so its view
is `webapp.explore.team_views.team_detail`."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from webapp.teams.forms import MemberForm, SignUpForm, TeamForm, TokenForm
from webapp.teams.selectors import (
    get_team_for_user,
    teams_for_user,
    tokens_for_user,
)
from webapp.teams.services import (
    membership_add,
    membership_remove,
    team_create,
    token_issue,
    token_revoke,
    user_sign_up,
)
from webapp.teams.signed_in import SignedInRequest


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = user_sign_up(username=form.cleaned_data["username"],
                            password=form.cleaned_data["password1"],
                            email=form.cleaned_data.get("email") or "")
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, "Welcome! Upload a generations file to evaluate it.")
        return redirect("runs:upload")
    return render(request, "teams/signup.html", {"form": form},
                  status=400 if request.method == "POST" else 200)


@login_required
@require_http_methods(["GET", "POST"])
def team_list(request: SignedInRequest) -> HttpResponse:
    form = TeamForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        team = team_create(owner=request.user, name=form.cleaned_data["name"])
        return redirect("teams:detail", slug=team.slug)
    return render(request, "teams/team_list.html",
                  {"teams": teams_for_user(user=request.user), "form": form})


@login_required
@require_POST
def member_add(request: SignedInRequest, slug: str) -> HttpResponse:
    team = get_team_for_user(user=request.user, slug=slug)
    form = MemberForm(request.POST)
    if form.is_valid():
        try:
            membership_add(team=team, actor=request.user, username=form.cleaned_data["username"],
                           role=form.cleaned_data["role"])
            messages.success(request, f"{form.cleaned_data['username']} joined {team.name}.")
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
    return redirect("teams:detail", slug=team.slug)


@login_required
@require_POST
def member_remove(request: SignedInRequest, slug: str, user_id: int) -> HttpResponse:
    team = get_team_for_user(user=request.user, slug=slug)
    try:
        membership_remove(team=team, actor=request.user, user_id=user_id)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    return redirect("teams:detail", slug=team.slug)


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: SignedInRequest) -> HttpResponse:
    form = TokenForm(request.POST or None)
    issued = None
    if request.method == "POST" and form.is_valid():
        issued = token_issue(user=request.user, name=form.cleaned_data["name"])
        form = TokenForm()
    return render(request, "teams/tokens.html", {
        "tokens": tokens_for_user(user=request.user), "form": form, "issued": issued,
    })


@login_required
@require_POST
def token_revoke_view(request: SignedInRequest, token_id: int) -> HttpResponse:
    if not token_revoke(user=request.user, token_id=token_id):
        raise Http404("No such active token")
    messages.success(request, "The token was revoked.")
    return redirect("teams:tokens")
