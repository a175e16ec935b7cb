"""Every script and stylesheet is served by the app itself: the machines have no internet,
so nothing may come from a CDN. Plotly comes from installed packages: the full bundle from
the `plotly` Python package, the partial one from the pinned npm package. Collected static
files get content-hashed names that WhiteNoise serves as immutable; without collectstatic
(unit tests, a fresh checkout) pages still render with the plain names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.templatetags.static import static
from django.test import Client, override_settings

from webapp import static_finders
from webapp.static_finders import NODE_MODULES, PackageFileFinder

REPO = Path(__file__).resolve().parents[3]
TEMPLATES = REPO / "templates"
BASIC = "vendor/plotly/plotly-basic.min.js"
FULL = "vendor/plotly/plotly.min.js"
LOCK = REPO / "webapp" / "static_packages" / "package-lock.json"

needs_npm_bundle = pytest.mark.skipif(
    not (NODE_MODULES / "plotly.js-basic-dist-min").is_dir(),
    reason="the npm packages of webapp/static_packages are not installed: "
           "run scripts/node_modules.sh")


def test_the_full_plotly_bundle_is_found_in_the_installed_python_package():
    path = finders.find(FULL)
    assert path
    assert Path(path).stat().st_size > 3_000_000
    assert finders.find("vendor/plotly/other.js") is None
    assert finders.find("vendor/plotly/../../webapp/settings.py") is None


def _found(name: str) -> Path:
    found = finders.find(name)
    assert isinstance(found, str), (name, found)
    return Path(found)


@needs_npm_bundle
def test_the_partial_bundle_comes_from_the_pinned_npm_package():
    path = _found(BASIC)
    assert path.parent == NODE_MODULES / "plotly.js-basic-dist-min"
    pinned = json.loads(LOCK.read_text())["packages"]["node_modules/plotly.js-basic-dist-min"]
    installed = json.loads((path.parent / "package.json").read_text())
    assert installed["version"] == pinned["version"]
    # The same plotly.js release as the full bundle, and a fraction of its size.
    version = re.escape(pinned["version"])
    banner = re.compile(rf"\* plotly\.js (?:\(basic - minified\) )?v{version}\n")
    assert banner.search(path.read_text()[:200])
    assert banner.search(_found(FULL).read_text()[:200])
    assert path.stat().st_size < _found(FULL).stat().st_size / 3
    assert sorted((name, storage.prefix) for name, storage in PackageFileFinder().list([])) == [
        ("plotly-basic.min.js", "vendor/plotly"), ("plotly.min.js", "vendor/plotly")]
    assert PackageFileFinder().check() == []


def test_without_the_npm_package_the_partial_name_serves_the_full_bundle(monkeypatch, tmp_path):
    monkeypatch.setattr(static_finders, "NODE_MODULES", tmp_path / "node_modules")
    assert PackageFileFinder().find(BASIC) == PackageFileFinder().find(FULL)
    listed = {name: storage.path(name) for name, storage in PackageFileFinder().list([])}
    assert listed["plotly-basic.min.js"] == listed["plotly.min.js"]
    (message,) = PackageFileFinder().check()
    assert message.id == "webapp.W002"
    assert "scripts/node_modules.sh" in message.msg


def test_a_missing_plotly_package_is_an_error(monkeypatch):
    monkeypatch.setattr(static_finders.PythonPackageFile, "locate", lambda self: None)
    monkeypatch.setattr(static_finders.NodePackageFile, "locate", lambda self: None)
    assert {message.id for message in PackageFileFinder().check()} == {"webapp.E001"}
    assert PackageFileFinder().find(BASIC) == []


def test_templates_load_scripts_and_styles_only_from_static():
    for template in TEMPLATES.rglob("*.html"):
        text = template.read_text()
        for tag in re.findall(r"<(?:script|link)\b[^>]*>", text):
            for url in re.findall(r'(?:src|href)="([^"]*)"', tag):
                assert url.startswith("{% static") or url.startswith("data:"), (template, url)
        for url in re.findall(r'data-plotly="([^"]*)"', text):
            assert url.startswith("{% static 'vendor/plotly/"), (template, url)


def test_every_chart_page_loads_the_partial_bundle():
    """The partial bundle has scatter, bar and pie, and no heatmap: compare-many draws its
    cells as shapes with a scatter for the hover, so no page needs the full bundle
    (4.8 MB decoded)."""
    for name in ("runs/run_detail.html", "explore/compare_pair.html",
                 "explore/compare_baseline.html", "explore/compare_many.html",
                 "suites/fidelity.html"):
        text = (TEMPLATES / name).read_text()
        assert "plotly.min.js" not in text, name
        assert "'vendor/plotly/plotly-basic.min.js'" in text, name
    for script in ("runs/charts.js", "explore/many.js"):
        text = (REPO / "static" / script).read_text()
        used = set(re.findall(r'type: "(\w+)"', text))
        assert used <= {"bar", "scatter", "log", "category", "data", "rect"}, (script, used)
        assert 'type: "heatmap"' not in text, script


@pytest.fixture
def hashed_storage(settings):
    """The production storage (webapp.settings); the fast tests use Django's plain one."""
    settings.STORAGES = {**settings.STORAGES, "staticfiles": {
        "BACKEND": "webapp.static_storage.HashedStaticFilesStorage"}}


def test_uncollected_files_keep_their_plain_names(settings, tmp_path, hashed_storage):
    settings.STATIC_ROOT = tmp_path / "empty"
    assert static("runs/charts.js") == "/static/runs/charts.js"


@needs_npm_bundle
@pytest.mark.django_db
def test_collected_files_get_hashed_names_served_as_immutable(settings, tmp_path,
                                                            hashed_storage):
    settings.STATIC_ROOT = tmp_path / "static"
    call_command("collectstatic", "--no-input", "-v", "0")
    charts = static("runs/charts.js")
    basic = static(BASIC)
    assert re.fullmatch(r"/static/runs/charts\.[0-9a-f]{12}\.js", charts)
    assert re.fullmatch(r"/static/vendor/plotly/plotly-basic\.min\.[0-9a-f]{12}\.js", basic)
    collected = settings.STATIC_ROOT / basic.removeprefix("/static/")
    assert collected.read_bytes() == _found(BASIC).read_bytes()
    # WhiteNoise reads STATIC_ROOT when the middleware is built: a fresh client's handler.
    with override_settings(WHITENOISE_AUTOREFRESH=False, DEBUG=False):
        client = Client()
        hashed = client.get(basic)
        plain = client.get("/static/runs/charts.js")
    assert hashed.status_code == 200
    assert "immutable" in hashed["Cache-Control"]
    assert "max-age=315360000" in hashed["Cache-Control"]
    assert plain.status_code == 200
    assert "immutable" not in plain.get("Cache-Control", "")


def test_production_settings_use_the_hashed_storage():
    import webapp.settings as production

    backend = production.STORAGES["staticfiles"]["BACKEND"]
    assert backend == "webapp.static_storage.HashedStaticFilesStorage"
