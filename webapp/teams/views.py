"""Sign-up, teams and their members, and API tokens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from webapp.defects.scores import WAY_LABELS, query_scores
from webapp.query_params import handles_bad_query, query_choice, query_text
from webapp.runs.models import Run
from webapp.runs.selectors import visible_runs
from webapp.runs.verified import DEFINITION as VERIFIED_DEFINITION
from webapp.teams.forms import MemberForm, SignUpForm, TeamForm, TokenForm
from webapp.teams.leaderboard import build_leaderboard, leaderboard_runs, mark_verification
from webapp.teams.models import Team
from webapp.teams.selectors import (
    get_team_for_user,
    team_memberships,
    team_role,
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
def team_list(request: HttpRequest) -> HttpResponse:
    form = TeamForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        team = team_create(owner=request.user, name=form.cleaned_data["name"])
        return redirect("teams:detail", slug=team.slug)
    return render(request, "teams/team_list.html",
                  {"teams": teams_for_user(user=request.user), "form": form})


@login_required
def team_detail(request: HttpRequest, slug: str) -> HttpResponse:
    team = get_team_for_user(user=request.user, slug=slug)
    runs = visible_runs(user=request.user).filter(team=team).select_related("dataset", "owner")
    return render(request, "teams/team_detail.html", {
        "team": team,
        "memberships": team_memberships(team=team),
        "role": team_role(team=team, user=request.user),
        "runs": runs[:100],
        "form": MemberForm(),
    })


@login_required
@require_POST
def member_add(request: HttpRequest, slug: str) -> HttpResponse:
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
def member_remove(request: HttpRequest, slug: str, user_id: int) -> HttpResponse:
    team = get_team_for_user(user=request.user, slug=slug)
    try:
        membership_remove(team=team, actor=request.user, user_id=user_id)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    return redirect("teams:detail", slug=team.slug)


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
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
def token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    if not token_revoke(user=request.user, token_id=token_id):
        raise Http404("No such active token")
    messages.success(request, "The token was revoked.")
    return redirect("teams:tokens")


def _leaderboard(request: HttpRequest, runs: QuerySet[Run], *, team: Team | None) -> HttpResponse:
    sort = query_text(request.GET, "sort")
    descending = query_choice(request.GET, "order", ("asc", "desc"), default="desc") == "desc"
    chosen = leaderboard_runs(runs=runs)
    finished = chosen.listed
    scores = query_scores(request.GET)
    board = build_leaderboard(runs=finished, sort=sort, descending=descending, scores=scores)
    mark_verification(board, chosen)
    return render(request, "teams/leaderboard.html", {
        "board": board, "team": team, "ways": WAY_LABELS,
        "verified_definition": VERIFIED_DEFINITION,
        "board_sort_state": f"{board.sort}:{'desc' if board.descending else 'asc'}",
    })


@handles_bad_query
def leaderboard(request: HttpRequest) -> HttpResponse:
    """Public runs only, whoever is looking: the same board for everyone."""
    return _leaderboard(request, visible_runs(user=AnonymousUser()), team=None)


@login_required
@handles_bad_query
def team_leaderboard(request: HttpRequest, slug: str) -> HttpResponse:
    """The team's runs that the viewer may see: public and team runs, and the viewer's own
    private ones."""
    team = get_team_for_user(user=request.user, slug=slug)
    return _leaderboard(request, visible_runs(user=request.user).filter(team=team), team=team)
