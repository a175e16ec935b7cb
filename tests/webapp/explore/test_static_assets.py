"""Every script and stylesheet is served by the app itself: the machines have no internet,
so nothing may come from a CDN. Plotly comes from the installed `plotly` package."""

from __future__ import annotations

import re
from pathlib import Path

from django.contrib.staticfiles import finders

from webapp.static_finders import PackageFileFinder

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"


def test_plotly_is_found_in_the_installed_package():
    path = finders.find("vendor/plotly/plotly.min.js")
    assert path
    assert Path(path).stat().st_size > 1_000_000
    assert [(name, storage.prefix) for name, storage in PackageFileFinder().list([])] == [
        ("plotly.min.js", "vendor/plotly")]
    assert PackageFileFinder().check() == []
    assert finders.find("vendor/plotly/other.js") is None


def test_templates_load_scripts_and_styles_only_from_static():
    for template in TEMPLATES.rglob("*.html"):
        text = template.read_text()
        for tag in re.findall(r"<(?:script|link)\b[^>]*>", text):
            for url in re.findall(r'(?:src|href)="([^"]*)"', tag):
                assert url.startswith("{% static") or url.startswith("data:"), (template, url)
