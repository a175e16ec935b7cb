"""One module per programming language, all behind `Language` (see `base.py`); the list
of them, with their names, is `registry.py`."""

from __future__ import annotations

from evaluator.languages.base import Language, LanguageError, PreparedJob
from evaluator.languages.registry import get_language, register, unregister

__all__ = ["Language", "LanguageError", "PreparedJob", "get_language", "register", "unregister"]
