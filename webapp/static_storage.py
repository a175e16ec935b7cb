"""Static files under content-hashed names, cached forever.

`collectstatic` writes each file twice, as `charts.js` and as `charts.<hash>.js`, plus a
manifest; `{% static %}` then gives the hashed name, which WhiteNoise serves with a
far-future, immutable `Cache-Control` (it recognises a hashed name by asking this storage
for the URL of the name without the hash). A changed file gets a new name, so a browser
never runs a stale script, and the 1.2 MB chart bundle is fetched once per version.

Where `collectstatic` has not run (unit tests, a fresh checkout), a name the manifest does
not know is served as it is instead of failing the page: the files are then found through
the static-file finders, uncached, as before.
"""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class HashedStaticFilesStorage(CompressedManifestStaticFilesStorage):
    manifest_strict = False

    def stored_name(self, name: str) -> str:
        try:
            return str(super().stored_name(name))
        except ValueError:
            return name  # not collected: neither in the manifest nor in STATIC_ROOT
