"""A team's page: its members and the runs of the team the viewer may see. It lists runs, so
it lives here rather than in `webapp.teams`, which knows nothing of runs."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render

from webapp.runs.reads.selectors import visible_runs
from webapp.teams.forms import MemberForm
from webapp.teams.selectors import get_team_for_user, team_memberships, team_role
from webapp.teams.signed_in import SignedInRequest


@login_required
def team_detail(request: SignedInRequest, slug: str) -> HttpResponse:
    team = get_team_for_user(user=request.user, slug=slug)
    runs = visible_runs(user=request.user).filter(team=team).select_related("dataset", "owner")
    return render(request, "teams/team_detail.html", {
        "team": team,
        "memberships": team_memberships(team=team),
        "role": team_role(team=team, user=request.user),
        "runs": runs[:100],
        "form": MemberForm(),
    })
