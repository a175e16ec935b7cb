"""The explore pages keep the URL names they had before the app existed: the root urlconf
files `compare_patterns` under the `compare` namespace, `team_patterns` under `teams`
beside the teams app's own pages, and `benchmark_patterns` under `benchmarks` beside the
dataset list. Templates and `reverse()` callers therefore never name this app."""

from __future__ import annotations

from django.urls import path

from webapp.explore import compare_views, leaderboard_views, problem_views, team_views

compare_patterns = [
    path("", compare_views.compare_index, name="index"),
    path("<int:a>/<int:b>/", compare_views.compare_pair, name="pair"),
    path("<int:a>/<int:b>/problems/<int:number>/", compare_views.compare_problem,
         name="problem"),
    path("baseline/<int:base>/", compare_views.compare_baseline, name="baseline"),
    path("many/", compare_views.compare_many, name="many"),
]

team_patterns = [
    path("teams/<slug:slug>/", team_views.team_detail, name="detail"),
    path("teams/<slug:slug>/leaderboard/", leaderboard_views.team_leaderboard,
         name="team_leaderboard"),
    path("leaderboard/", leaderboard_views.leaderboard, name="leaderboard"),
]

benchmark_patterns = [
    path("datasets/<int:dataset_id>/", problem_views.dataset_detail, name="dataset"),
    path("problems/", problem_views.problem_list, name="problems"),
    path("problems/<int:number>/", problem_views.problem_detail, name="problem"),
]
