"""The one list of programming languages, and every name each of them goes by.

A language is a `Language` subclass in a module of its own (with its runtime folder, if it
has one). The class declares its `name`, `aliases`, `fence_tags`, `display_name` and
`order`; the rest of the project asks this module, never a table of its own: reading a
dataset or a generations file, the sanitizer's markdown fences, the pages' lists, the
workers' queues.

The built-in languages are listed below. Another joins in one of two ways:

- `register(ToyLanguage)` (also usable as a class decorator), from code that runs before
  the language is needed; `unregister("toy")` takes it out again (tests do);
- an entry point in the group `evaluator.languages` that names the class, for a package
  installed beside the workbench (`toy = toy_package.language:ToyLanguage` under
  `[project.entry-points."evaluator.languages"]`). Entry points are read at the first
  lookup, in every process, so web servers and workers see the same languages
  (`load_entry_points` reads them again).

Names are matched without regard to case or surrounding spaces.
"""

from __future__ import annotations

import importlib
import logging
import re
import threading
from importlib.metadata import entry_points

from evaluator.languages.base import Language, LanguageError

__all__ = [
    "ENTRY_POINT_GROUP",
    "canonical_name",
    "display_name",
    "fence_tags",
    "get_language",
    "language_class",
    "language_names",
    "language_rank",
    "load_entry_points",
    "register",
    "unregister",
]

ENTRY_POINT_GROUP = "evaluator.languages"

_BUILT_IN = (
    "evaluator.languages.python:Python",
    "evaluator.languages.cpp:Cpp",
    "evaluator.languages.java:Java",
    "evaluator.languages.js:JavaScript",
    "evaluator.languages.go:Go",
    "evaluator.languages.rust:Rust",
)
"""module:class of each language shipped with the evaluator, imported at the first lookup."""

log = logging.getLogger(__name__)

_NAME = re.compile(r"[a-z][a-z0-9_]*")
"""A language's own name: it becomes part of queue names, URLs and file names."""

_lock = threading.RLock()
_classes: dict[str, type[Language]] = {}
_spellings: dict[str, str] = {}
"""Every accepted spelling (name or alias, case-folded) -> the language's name."""
_instances: dict[str, Language] = {}
_loaded = False
_loading = False


def _key(spelling: str) -> str:
    return spelling.strip().casefold()


def register(cls: type[Language]) -> type[Language]:
    """Add a language; returns the class, so that it can decorate one.

    Raises ValueError when the class lacks a name or display name, or when its name or an
    alias is already another language's.
    """
    _load_built_in()
    with _lock:
        _register(cls)
    return cls


def unregister(name: str) -> None:
    """Remove a language (by its name or an alias); an unknown name is ignored."""
    with _lock:
        key = _spellings.get(_key(name))
        if key is None:
            return
        del _classes[key]
        _instances.pop(key, None)
        for spelling in [s for s, owner in _spellings.items() if owner == key]:
            del _spellings[spelling]


def language_names() -> tuple[str, ...]:
    """Every language's name, in display order (`order`, then name)."""
    _load_built_in()
    with _lock:
        classes = list(_classes.values())
    ordered = sorted(classes, key=lambda cls: (cls.order, cls.name))
    return tuple(cls.name for cls in ordered)


def canonical_name(spelling: str) -> str | None:
    """The language a name or alias stands for (`C++`, `golang`, ` Py `); None if none."""
    cls = _class_of(spelling)
    return cls.name if cls is not None else None


def language_class(name: str) -> type[Language]:
    """The class of the language `name` (or an alias) stands for; LanguageError otherwise."""
    cls = _class_of(name)
    if cls is None:
        raise LanguageError(f"unknown language {name!r}; known: {', '.join(language_names())}")
    return cls


def get_language(name: str) -> Language:
    """The one instance of a language, made at the first call."""
    cls = language_class(name)
    with _lock:
        if cls.name not in _instances:
            _instances[cls.name] = cls()
        return _instances[cls.name]


def display_name(name: str) -> str:
    """How pages and messages write a language (`C++`); an unknown name as it is."""
    cls = _class_of(name)
    return cls.display_name if cls is not None else name


def fence_tags(name: str) -> frozenset[str]:
    """The markdown fence tags that mark code in this language: its name, its aliases and
    its own `fence_tags`, lower-cased; empty for an unknown language."""
    cls = _class_of(name)
    if cls is None:
        return frozenset()
    return frozenset(tag.casefold() for tag in (cls.name, *cls.aliases, *cls.fence_tags))


def language_rank(name: str) -> tuple[int, int, str]:
    """A sort key that puts languages in display order, and unknown names after them in
    alphabetical order."""
    names = language_names()
    key = canonical_name(name)
    if key is None:
        return (1, 0, name)
    return (0, names.index(key), key)


def _class_of(spelling: str) -> type[Language] | None:
    _load_built_in()
    with _lock:
        key = _spellings.get(_key(spelling))
        return _classes[key] if key is not None else None


def _register(cls: type[Language]) -> None:
    if not (isinstance(cls, type) and issubclass(cls, Language)):
        raise ValueError(f"{cls!r} is not a subclass of evaluator.languages.Language")
    name = getattr(cls, "name", "")
    if not isinstance(name, str) or _NAME.fullmatch(name) is None:
        raise ValueError(f"{cls.__qualname__}.name must be lower-case letters, digits and "
                         f"underscores, starting with a letter; got {name!r}")
    if not getattr(cls, "display_name", ""):
        raise ValueError(f"{cls.__qualname__} has no display_name")
    spellings = {_key(spelling) for spelling in (cls.name, *cls.aliases)} - {""}
    for spelling in sorted(spellings):
        owner = _spellings.get(spelling)
        if owner is not None and _classes[owner] is not cls:
            raise ValueError(
                f"cannot register {cls.__qualname__}: {spelling!r} already names "
                f"the language {owner!r}"
            )
    _add(cls, spellings)


def _add(cls: type[Language], spellings: set[str]) -> None:
    _classes[cls.name] = cls
    _instances.pop(cls.name, None)
    for spelling in spellings:
        _spellings[spelling] = cls.name


def _load_built_in() -> None:
    """Import the built-in languages and the entry points' once, on the first lookup."""
    global _loaded, _loading
    if _loaded:
        return
    with _lock:
        if _loaded or _loading:
            # _loading: a plug-in's module, imported below, called `register` as it loaded.
            return
        _loading = True
        try:
            for path in _BUILT_IN:
                module_name, class_name = path.split(":")
                _register(getattr(importlib.import_module(module_name), class_name))
            _register_entry_points()
            _loaded = True
        finally:
            _loading = False


def load_entry_points() -> tuple[str, ...]:
    """Read the entry points again, for a package installed (or put on `sys.path`) since
    the first lookup; returns the names of the languages they registered."""
    _load_built_in()
    with _lock:
        return _register_entry_points()


def _register_entry_points() -> tuple[str, ...]:
    names: list[str] = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            cls = point.load()
            _register(cls)
        except Exception:
            # One broken plug-in must not take every other language down with it.
            log.exception("language entry point %r (%s) could not be registered",
                          point.name, point.value)
        else:
            names.append(cls.name)
    return tuple(names)
