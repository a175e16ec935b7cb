"""Sign-up, sign-in, teams and their members, and API token pages."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client

from tests.webapp.factories import PASSWORD
from tests.webapp.support import client_for
from webapp.teams.models import ApiToken, Membership, Team


def test_sign_up_creates_account_with_personal_team_and_signs_in(db):
    client = Client()
    response = client.post("/accounts/signup/", {
        "username": "newbie", "email": "", "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 302
    user = User.objects.get(username="newbie")
    team = Team.objects.get(memberships__user=user)
    assert team.personal
    assert Membership.objects.get(user=user).role == "owner"
    assert client.get("/runs/new/").status_code == 200, "signed in after signing up"


def test_sign_up_with_mismatched_passwords_stores_nothing(db):
    response = Client().post("/accounts/signup/", {
        "username": "newbie", "password1": PASSWORD, "password2": PASSWORD + "x"})
    assert response.status_code == 400
    assert not User.objects.exists()
    assert not Team.objects.exists()


def test_sign_in_and_out(personas):
    client = Client()
    response = client.post("/accounts/login/", {"username": "olivia", "password": PASSWORD})
    assert response.status_code == 302
    assert client.get("/teams/").status_code == 200
    client.post("/accounts/logout/")
    assert client.get("/teams/").status_code == 302


def test_sign_in_form_needs_csrf(personas):
    client = Client(enforce_csrf_checks=True)
    response = client.post("/accounts/login/", {"username": "olivia", "password": PASSWORD})
    assert response.status_code == 403


def test_owner_adds_and_removes_a_member(personas):
    owner = client_for(personas.owner)
    response = owner.post("/teams/lab/members/", {"username": "oscar", "role": "member"})
    assert response.status_code == 302
    assert Membership.objects.filter(team=personas.team, user=personas.outsider).exists()
    owner.post(f"/teams/lab/members/{personas.outsider.pk}/remove/")
    assert not Membership.objects.filter(team=personas.team, user=personas.outsider).exists()


def test_member_cannot_add_members(personas):
    response = client_for(personas.teammate).post("/teams/lab/members/",
                                                  {"username": "oscar", "role": "owner"})
    assert response.status_code == 403
    assert not Membership.objects.filter(user=personas.outsider, team=personas.team).exists()


def test_last_owner_cannot_leave(personas):
    client_for(personas.owner).post(f"/teams/lab/members/{personas.owner.pk}/remove/")
    assert Membership.objects.filter(team=personas.team, user=personas.owner,
                                     role="owner").exists()


def test_create_team(personas):
    response = client_for(personas.outsider).post("/teams/", {"name": "Other Lab"})
    team = Team.objects.get(name="Other Lab")
    assert response["Location"] == f"/teams/{team.slug}/"
    assert team.memberships.get().role == "owner"


def test_outsider_gets_404_from_team_endpoints(personas):
    outsider = client_for(personas.outsider)
    assert outsider.get("/teams/lab/").status_code == 404
    assert outsider.post("/teams/lab/members/",
                         {"username": "oscar", "role": "owner"}).status_code == 404
    assert outsider.post(f"/teams/lab/members/{personas.teammate.pk}/remove/").status_code == 404
    assert Membership.objects.filter(team=personas.team).count() == 2


def test_teammate_sees_team_page(personas):
    page = client_for(personas.teammate).get("/teams/lab/")
    assert page.status_code == 200
    assert b"olivia" in page.content


def test_token_is_shown_once_and_can_be_revoked(personas):
    client = client_for(personas.owner)
    response = client.post("/settings/tokens/", {"name": "ci"})
    secret = response.context["issued"].secret
    assert secret.encode() in response.content
    assert secret.encode() not in client.get("/settings/tokens/").content
    token = ApiToken.objects.get(user=personas.owner)
    client.post(f"/settings/tokens/{token.pk}/revoke/")
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_outsider_gets_404_revoking_someone_elses_token(personas):
    client_for(personas.owner).post("/settings/tokens/", {"name": "ci"})
    token = ApiToken.objects.get(user=personas.owner)
    response = client_for(personas.outsider).post(f"/settings/tokens/{token.pk}/revoke/")
    assert response.status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None
