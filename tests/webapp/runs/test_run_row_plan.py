"""The run's row read by a query compiled once (`selectors.read_run_row`): for every kind of
run and viewer, the same run, related rows and facts as Django's own query of it, and no
compiling after the first read. Run on PostgreSQL too (see the report of this change)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db.models.sql.compiler import SQLCompiler

from tests.webapp.factories import RunFactory
from webapp.runs.models import ProfileComparison, Run
from webapp.runs.reads import selectors
from webapp.runs.reads.selectors import read_run_row, run_row_query
from webapp.runs.services.writes import run_change_record

RELATED = ("dataset", "team", "owner", "profile_comparison")


def _state(run: Run) -> dict[str, object]:
    """Every value the run was read with: its columns, the facts and its related rows."""
    values = {name: value for name, value in run.__dict__.items() if name != "_state"}
    for name in RELATED:
        related = run._state.fields_cache.get(name, "not read")
        values[name] = (related if related in (None, "not read") else
                        {key: value for key, value in related.__dict__.items()
                         if key != "_state"})
    return values


@pytest.mark.django_db
def test_the_compiled_read_is_what_djangos_query_reads(personas, humaneval):
    def made(**fields: object) -> Run:
        return RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval,
                                 **fields)

    team_run = made(visibility=Run.Visibility.TEAM, model_meta={"t": 0.8, "note": "é"})
    made(plus_of=team_run)
    public = made(visibility=Run.Visibility.PUBLIC)
    made(reproduction_of=public)
    run_change_record(run=public, actor=personas.owner, field="name", before="a", after="b")
    ProfileComparison.objects.create(run=public)
    private = made(visibility=Run.Visibility.PRIVATE)
    viewers = [personas.owner, personas.teammate, personas.outsider, AnonymousUser()]
    for run in (team_run, public, private):
        for viewer in viewers:
            expected = run_row_query(user=viewer, run_id=run.pk).first()
            got = read_run_row(user=viewer, run_id=run.pk)
            assert got is not None
            assert expected is not None
            assert _state(got) == _state(expected), (run.visibility, viewer)
            assert got._state.db == expected._state.db
            assert not got._state.adding
    with_comparison = read_run_row(user=personas.owner, run_id=public.pk)
    assert with_comparison is not None
    assert _state(with_comparison)["profile_comparison"]
    assert read_run_row(user=personas.owner, run_id=private.pk + 1000) is None


@pytest.mark.django_db
def test_the_query_is_compiled_once_a_thread(personas, humaneval, monkeypatch):
    run = RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval)
    monkeypatch.setattr(selectors._plans, "plans", {}, raising=False)
    compiled = []
    real = SQLCompiler.as_sql

    def counting(self, *args, **kwargs):
        compiled.append(self.query.model)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SQLCompiler, "as_sql", counting)
    for viewer in (personas.owner, personas.teammate, AnonymousUser(), personas.owner):
        read = read_run_row(user=viewer, run_id=run.pk)
        assert read is not None
        assert read.pk == run.pk
    assert compiled.count(Run) == 2, "once for signed-in viewers, once for the others"
