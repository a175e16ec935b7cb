"""`python manage.py ensure_user NAME --password P [--token-name N] [--staff]`: for set-up
scripts.

Creates the account (with its personal team) if it does not exist and sets its password
when it differs (so that signed-in browsers stay signed in across restarts);
with --token-name, issues a new API token and prints it.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandParser

from webapp.teams.services import token_issue, user_sign_up


class Command(BaseCommand):
    help = "Create or update an account, optionally issuing an API token."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--password", required=True)
        parser.add_argument("--token-name", help="issue an API token with this name; print it")
        parser.add_argument("--staff", action="store_true",
                            help="make it a staff user (who may add catalogue datasets)")

    def handle(self, *args: Any, **options: Any) -> None:
        user = User.objects.filter(username=options["username"]).first()
        if user is None:
            user = user_sign_up(username=options["username"], password=options["password"])
        elif not user.check_password(options["password"]):
            # Only a new password is stored: hashing the same one again (a fresh salt) would
            # change the session hash and sign every browser out at each `make run`.
            user.set_password(options["password"])
            user.save(update_fields=["password"])
        if options["staff"] and not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])
        if options["token_name"]:
            self.stdout.write(token_issue(user=user, name=options["token_name"]).secret)
