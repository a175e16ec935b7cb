"""Settings helpers read the environment and fail loudly on bad values."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from webapp.env import env_bool, env_choice, env_float, env_int, env_list, env_str


def test_defaults_when_unset_or_blank(monkeypatch):
    monkeypatch.delenv("WB_X", raising=False)
    assert env_int("WB_X", 3) == 3
    monkeypatch.setenv("WB_X", "  ")
    assert env_bool("WB_X", True) is True
    assert env_str("WB_X", "d") == "d"
    assert env_list("WB_X", ["a"]) == ["a"]


def test_values_are_parsed(monkeypatch):
    monkeypatch.setenv("WB_X", "1_000")
    assert env_int("WB_X", 0) == 1000
    monkeypatch.setenv("WB_X", "off")
    assert env_bool("WB_X", True) is False
    monkeypatch.setenv("WB_X", "a.example, b.example")
    assert env_list("WB_X", []) == ["a.example", "b.example"]
    monkeypatch.setenv("WB_X", "2.5")
    assert env_float("WB_X", 0.0) == 2.5


@pytest.mark.parametrize(
    ("reader", "value"),
    [
        (lambda: env_int("WB_X", 1), "ten"),
        (lambda: env_int("WB_X", 1, minimum=1), "0"),
        (lambda: env_bool("WB_X", False), "maybe"),
        (lambda: env_float("WB_X", 1.0), "fast"),
        (lambda: env_choice("WB_X", "auto", ("auto", "none")), "docker"),
    ],
)
def test_bad_values_fail_loudly_naming_the_variable(monkeypatch, reader, value):
    monkeypatch.setenv("WB_X", value)
    with pytest.raises(ImproperlyConfigured, match="WB_X"):
        reader()


def test_settings_import_with_no_environment(tmp_path):
    import subprocess
    import sys

    from webapp.stack import REPO_ROOT

    code = ("import django, os; os.environ['DJANGO_SETTINGS_MODULE']='webapp.settings'; "
            "django.setup(); from django.conf import settings; "
            "print(settings.DATABASES['default']['ENGINE'], settings.CELERY_BROKER_URL, "
            "settings.CHANNEL_LAYERS['default']['BACKEND'])")
    env = {"PATH": "/usr/bin:/bin", "WORKBENCH_VAR_DIR": str(tmp_path),
           "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=REPO_ROOT).stdout.split()
    assert out == ["django.db.backends.sqlite3", "filesystem://",
                   "webapp.channel_layers.SQLiteChannelLayer"]


def test_bad_setting_stops_start_up(tmp_path):
    import subprocess
    import sys

    from webapp.stack import REPO_ROOT

    code = ("import django, os; os.environ['DJANGO_SETTINGS_MODULE']='webapp.settings'; "
            "django.setup()")
    env = {"PATH": "/usr/bin:/bin", "WORKBENCH_VAR_DIR": str(tmp_path),
           "PYTHONPATH": str(REPO_ROOT), "EVALUATOR_SANDBOX": "docker"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          cwd=REPO_ROOT)
    assert done.returncode != 0
    assert "EVALUATOR_SANDBOX='docker' is not one of" in done.stderr
