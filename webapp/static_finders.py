"""A static-files finder for single files that installed packages ship.

Two Plotly bundles are served, neither committed nor fetched from a CDN (the machines have
no internet):

- `vendor/plotly/plotly.min.js`, the full 4.8 MB bundle inside the `plotly` Python package
  (`plotly/package_data/plotly.min.js`, the version pinned in requirements/base.txt), for
  the pages that draw a trace type only it has (the heatmap of `compare_many`);
- `vendor/plotly/plotly-basic.min.js`, plotly.js's partial "basic" bundle (scatter, bar
  and pie; 1.2 MB), from the npm package `plotly.js-basic-dist-min` pinned in
  `webapp/static_packages/package-lock.json` and installed by `scripts/node_modules.sh`.
  The run page and the pairwise comparisons use it: they draw lines, bands, error bars and
  bars only.

Only the named files are exposed, not whole package folders, so `collectstatic` copies one
file each. Where npm was not run, the basic name serves the full bundle (a superset), and
`manage.py check` warns, so pages still draw, only slower to load.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.staticfiles.finders import BaseFinder
from django.core.checks import CheckMessage, Error, Warning
from django.core.files.storage import FileSystemStorage

NODE_MODULES = Path(__file__).resolve().parent / "static_packages" / "node_modules"


@dataclass(frozen=True)
class PythonPackageFile:
    package: str
    inner: str

    def locate(self) -> Path | None:
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            return None
        path = Path(next(iter(spec.submodule_search_locations))) / self.inner
        return path if path.is_file() else None

    def missing(self) -> str:
        return f"the Python package {self.package} does not ship {self.inner}"


@dataclass(frozen=True)
class NodePackageFile:
    package: str
    inner: str

    def locate(self) -> Path | None:
        path = NODE_MODULES / self.package / self.inner
        return path if path.is_file() else None

    def missing(self) -> str:
        return (f"the npm package {self.package} is not installed in {NODE_MODULES.parent} "
                "(run scripts/node_modules.sh)")


FULL_PLOTLY = PythonPackageFile("plotly", "package_data/plotly.min.js")
BASIC_PLOTLY = NodePackageFile("plotly.js-basic-dist-min", "plotly-basic.min.js")

PACKAGE_FILES: dict[str, tuple[PythonPackageFile | NodePackageFile, ...]] = {
    "vendor/plotly/plotly.min.js": (FULL_PLOTLY,),
    "vendor/plotly/plotly-basic.min.js": (BASIC_PLOTLY, FULL_PLOTLY),
}
"""Static path -> where to find it, best first."""


def package_file(name: str) -> Path | None:
    """The file served under the static path `name`, or None."""
    for source in PACKAGE_FILES.get(name, ()):
        found = source.locate()
        if found is not None:
            return found
    return None


class PackageFileFinder(BaseFinder):
    def check(self, **kwargs: Any) -> list[CheckMessage]:
        messages: list[CheckMessage] = []
        for name, sources in PACKAGE_FILES.items():
            best, *fallbacks = sources
            if best.locate() is not None:
                continue
            if any(source.locate() is not None for source in fallbacks):
                messages.append(Warning(
                    f"{best.missing()}; static file {name} serves the full Plotly bundle "
                    "instead, and chart pages load more slowly.", id="webapp.W002"))
            else:
                messages.append(Error(f"{best.missing()}; static file {name} is missing.",
                                      id="webapp.E001"))
        return messages

    # django-stubs (written for Django 6) overload this on a Literal find_all and give a miss
    # as None; Django 5.2's own finders answer a miss with [] and still take `all=`.
    def find(  # type: ignore[override]
        self, path: str, find_all: bool = False, **kwargs: Any,
    ) -> str | list[str]:
        find_all = find_all or bool(kwargs.get("all"))
        found = package_file(path)
        if found is None:
            return []  # Django's own finders answer "not here" with an empty list.
        return [str(found)] if find_all else str(found)

    def list(
        self, ignore_patterns: Iterable[str] | None,
    ) -> Iterator[tuple[str, _SingleFileStorage]]:
        for name in PACKAGE_FILES:
            found = package_file(name)
            if found is None:
                continue
            # collectstatic joins the storage's `prefix` and the yielded name, so the file
            # is listed under its static name even when it is another file (the fallback).
            storage = _SingleFileStorage(found, Path(name).name)
            storage.prefix = str(Path(name).parent)
            yield Path(name).name, storage


class _SingleFileStorage(FileSystemStorage):
    """One file of a package folder, under the name it is served as."""

    prefix: str
    """Where collectstatic puts the file (it reads a storage's `prefix` if there is one)."""

    def __init__(self, path: Path, served_as: str) -> None:
        super().__init__(location=str(path.parent))
        self._path, self._served_as = path, served_as

    def path(self, name: str) -> str:
        return str(self._path) if name == self._served_as else super().path(name)
