"""One module per programming language, all behind `Language` (see `base.py`)."""

from __future__ import annotations

import importlib

from evaluator.languages.base import Language, LanguageError, PreparedJob, RunOptions

__all__ = ["Language", "LanguageError", "PreparedJob", "RunOptions", "get_language", "LANGUAGES"]

LANGUAGES: dict[str, tuple[str, str]] = {
    "python": ("evaluator.languages.python", "Python"),
    "cpp": ("evaluator.languages.cpp", "Cpp"),
    "java": ("evaluator.languages.java", "Java"),
    "js": ("evaluator.languages.js", "JavaScript"),
    "go": ("evaluator.languages.go", "Go"),
    "rust": ("evaluator.languages.rust", "Rust"),
}
"""Language name -> (module, class). Modules are imported when first asked for."""

_ALIASES = {"py": "python", "c++": "cpp", "javascript": "js", "node": "js", "rs": "rust",
            "golang": "go"}
_instances: dict[str, Language] = {}


def get_language(name: str) -> Language:
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in LANGUAGES:
        raise LanguageError(f"unknown language {name!r}; known: {', '.join(LANGUAGES)}")
    if key not in _instances:
        module_name, class_name = LANGUAGES[key]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            raise LanguageError(f"language {key!r} is not supported yet") from exc
        _instances[key] = getattr(module, class_name)()
    return _instances[key]
