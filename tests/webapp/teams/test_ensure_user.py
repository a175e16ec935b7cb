"""`manage.py ensure_user`, which `make run` calls at every start for the demo account:
running it again with the same password must not sign anyone out."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client


@pytest.mark.django_db
def test_the_same_password_again_keeps_every_session():
    call_command("ensure_user", "demo", "--password", "a-long-demo-password")
    browser = Client()
    assert browser.login(username="demo", password="a-long-demo-password")
    before = User.objects.get(username="demo").get_session_auth_hash()
    call_command("ensure_user", "demo", "--password", "a-long-demo-password")
    assert User.objects.get(username="demo").get_session_auth_hash() == before
    assert browser.get("/runs/new/").status_code == 200  # still signed in


@pytest.mark.django_db
def test_a_new_password_signs_the_old_sessions_out():
    call_command("ensure_user", "demo", "--password", "a-long-demo-password")
    browser = Client()
    assert browser.login(username="demo", password="a-long-demo-password")
    call_command("ensure_user", "demo", "--password", "another-long-password")
    assert browser.get("/runs/new/").status_code == 302  # to the sign-in page
    assert Client().login(username="demo", password="another-long-password")
