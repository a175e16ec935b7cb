"""The options of a multi-file upload, as the page and the API give them to `suite_upload`:
each one as sent, and `sanitize` left out by a script as the reference harness's choice."""

from __future__ import annotations

import pytest

from webapp.suites.forms import SuiteUploadForm

SENT = {"profile": "humaneval", "sanitize": "on", "allow_language_mismatch": "on",
        "dry_run": "on", "confirm_variants": "on"}


@pytest.mark.parametrize("api", [False, True])
def test_every_option_sent_reaches_the_upload(db, api):
    form = SuiteUploadForm(SENT, api=api)
    assert form.is_valid(), form.errors
    assert form.options() == {"profile": "humaneval", "sanitize": True,
                              "allow_language_mismatch": True, "dry_run": True,
                              "confirm_variants": True}


def test_options_left_out_take_their_defaults(db):
    page = SuiteUploadForm({}, api=False)
    script = SuiteUploadForm({}, api=True)
    assert page.is_valid()
    assert script.is_valid()
    defaults = {"profile": "", "allow_language_mismatch": False, "dry_run": False,
                "confirm_variants": False}
    assert page.options() == {**defaults, "sanitize": False}
    assert script.options() == {**defaults, "sanitize": None}
