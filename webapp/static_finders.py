"""A static-files finder for single files that installed packages ship.

Plotly's browser bundle is 4.8 MB and sits inside the `plotly` Python package
(`plotly/package_data/plotly.min.js`, the version pinned in requirements/base.txt). It is
served from there under `vendor/plotly/plotly.min.js` rather than committed: the pinned
package decides the version, the repository stays small, and nothing is fetched from a
CDN (the machines have no internet). Only the named files are exposed, not the whole
package folder, so `collectstatic` copies one file.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.contrib.staticfiles.finders import BaseFinder
from django.core.checks import CheckMessage, Error
from django.core.files.storage import FileSystemStorage

PACKAGE_FILES: dict[str, tuple[str, str]] = {
    "vendor/plotly/plotly.min.js": ("plotly", "package_data/plotly.min.js"),
}
"""Static path -> (package, path inside the package)."""


def _package_file(package: str, inner: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / inner
    return path if path.is_file() else None


class PackageFileFinder(BaseFinder):
    def check(self, **kwargs: Any) -> list[CheckMessage]:
        return [
            Error(f"{package} does not ship {inner}; static file {name} is missing.",
                  id="webapp.E001")
            for name, (package, inner) in PACKAGE_FILES.items()
            if _package_file(package, inner) is None
        ]

    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> str | list[str]:
        find_all = find_all or bool(kwargs.get("all"))
        target = PACKAGE_FILES.get(path)
        found = _package_file(*target) if target else None
        if found is None:
            return []  # Django's own finders answer "not here" with an empty list.
        return [str(found)] if find_all else str(found)

    def list(self, ignore_patterns: list[str] | None) -> Iterator[tuple[str, FileSystemStorage]]:
        for name, (package, inner) in PACKAGE_FILES.items():
            found = _package_file(package, inner)
            if found is None:
                continue
            # collectstatic joins the storage's `prefix` and the yielded name.
            storage = FileSystemStorage(location=str(found.parent))
            storage.prefix = str(Path(name).parent)  # type: ignore[attr-defined]
            yield found.name, storage
