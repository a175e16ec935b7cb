"""The leaderboards: the public one, and one per team."""

from __future__ import annotations

from functools import cache

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from evaluator.metrics import ANY_OF_K, METRICS
from webapp.defects.scores import WAY_LABELS, query_scores
from webapp.explore.leaderboard import (
    Leaderboard,
    LeaderboardRuns,
    leaderboard_drawn,
    leaderboard_state,
)
from webapp.query_params import handles_bad_query, query_choice, query_text
from webapp.runs.models import Run
from webapp.runs.reads.page_cache import FINISHED_SECONDS, key_of
from webapp.runs.reads.selectors import visible_runs
from webapp.runs.reads.verified import DEFINITION as VERIFIED_DEFINITION
from webapp.runs.services.plus import PLUS_COLUMNS, runs_plus_scores
from webapp.teams.models import Team
from webapp.teams.selectors import get_team_for_user
from webapp.teams.signed_in import SignedInRequest


def _leaderboard(request: HttpRequest, runs: QuerySet[Run], *, team: Team | None) -> HttpResponse:
    sort = query_text(request.GET, "sort")
    descending = query_choice(request.GET, "order", ("asc", "desc"), default="desc") == "desc"
    scores = query_scores(request.GET)
    metric = query_choice(request.GET, "metric", METRICS, default=ANY_OF_K)
    tests = query_choice(request.GET, "tests", PLUS_COLUMNS, default="base")
    state = leaderboard_state(runs=runs)

    @cache
    def drawn() -> tuple[Leaderboard, LeaderboardRuns]:
        return leaderboard_drawn(runs=runs, sort=sort, descending=descending, scores=scores,
                                 metric=metric, state=state)

    def board_sort_state() -> str:
        board = drawn()[0]
        return f"{board.sort}:{'desc' if board.descending else 'asc'}"

    # The table is the same for every viewer whose scope holds the same runs (`state`), so
    # it is kept whole, under the query it answers; the page around it (the viewer's name,
    # their CSRF token, their messages) is drawn per request. Plus scores are read from
    # runs outside that state (the plus runs the viewer may see): drawn every time.
    page_key = ("" if tests == "both" else
                key_of("leaderboard-page", state, sorted(request.GET.lists()),
                       team and (team.pk, team.name)))
    # What the template draws is read only when the table is drawn.
    return render(request, "explore/leaderboard.html", {
        "tests": tests, "plus_columns": PLUS_COLUMNS,
        "plus_pairs": lambda: (runs_plus_scores(runs=drawn()[1].listed, scope=runs)
                               if tests == "both" else {}),
        "board": lambda: drawn()[0], "team": team, "ways": WAY_LABELS, "metrics": METRICS,
        "verified_definition": VERIFIED_DEFINITION,
        "board_sort_state": board_sort_state,
        "page_key": page_key, "page_timeout": FINISHED_SECONDS,
    })


@handles_bad_query
def leaderboard(request: HttpRequest) -> HttpResponse:
    """Public runs only, whoever is looking: the same board for everyone."""
    return _leaderboard(request, visible_runs(user=AnonymousUser()), team=None)


@login_required
@handles_bad_query
def team_leaderboard(request: SignedInRequest, slug: str) -> HttpResponse:
    """The team's runs that the viewer may see: public and team runs, and the viewer's own
    private ones."""
    team = get_team_for_user(user=request.user, slug=slug)
    return _leaderboard(request, visible_runs(user=request.user).filter(team=team), team=team)
