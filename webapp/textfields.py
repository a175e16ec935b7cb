"""Text from outside, checked once at the edge: the forms of every app, the JSON API's
bodies and the URL's query parameters refuse what the database, the UTF-8 encoder or the
JSON parser would fail on, with an error that names the field, never a 500.

What is refused everywhere: NUL (PostgreSQL text and JSON cannot hold it) and lone
surrogates (U+D800 to U+DFFF: not text, and no UTF-8 encoder will write them). JSON
typed into a field also has its nesting depth bounded before it is parsed, and NaN or
infinite numbers (which no JSON column accepts) are refused. Yes/no fields accept the
usual spellings and nothing else, so a typo is not silently read as "yes".

The forms use `TextField`, `FlagField` and `json_object_from_text`; the API's schemas
(django-ninja, pydantic) use `SlugText`, `NameText`, `LongText`, `JSONText` and
`StoredJSONObject`. Any app may import this module: it imports none of them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Annotated, Any

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import ProhibitNullCharactersValidator
from pydantic import AfterValidator, StringConstraints
from pydantic_core import PydanticCustomError

NAME_MAX = 200
"""A run's or a suite's name, model and revision (their columns' length)."""
SLUG_MAX = 100
"""A team's slug or name, a profile's name, a token's name."""
LONG_TEXT_MAX = 10_000
"""Free text such as a suite's description."""
JSON_TEXT_MAX = 10_000
"""JSON typed into a field (a run's model metadata, a suite's decoding settings)."""
JSON_DEPTH_MAX = 32
"""How deep such JSON may nest: far more than settings need, far less than recursion
limits (Python's parser fails past about a thousand levels)."""

UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
TRUE_SPELLINGS = frozenset({"1", "true", "on", "yes"})
FALSE_SPELLINGS = frozenset({"", "0", "false", "off", "no"})


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored as text, or None when it can."""
    found = UNSTORABLE.search(value)
    if found is None:
        return None
    if found.group() == "\x00":
        return "NUL characters are not allowed."
    return (f"Lone surrogates (here U+{ord(found.group()):04X}) are not text; send the "
            "character itself or its UTF-16 pair.")


def refuse_unstorable_text(value: object) -> None:
    """A form validator: `text_problem` as a `ValidationError`."""
    problem = text_problem(value) if isinstance(value, str) else None
    if problem is not None:
        raise ValidationError(problem, code="unstorable")


class TextField(forms.CharField):
    """A form's text field: a length limit of its own, and nothing `text_problem` refuses."""

    default_validators = [refuse_unstorable_text]

    def __init__(self, *, max_length: int, **kwargs: Any) -> None:
        super().__init__(max_length=max_length, **kwargs)
        # Django's own NUL check would say it a second time.
        self.validators = [validator for validator in self.validators
                           if not isinstance(validator, ProhibitNullCharactersValidator)]


def _nesting_depth(text: str, limit: int) -> int:
    """How deep the brackets of `text` nest outside its strings, counting no further than
    `limit` + 1: enough to refuse it before the parser recurses that deep (which raises
    RecursionError past about a thousand levels)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > limit:
                break
        elif char in "]}":
            depth -= 1
    return deepest


def json_value_problem(value: object, *, max_depth: int = JSON_DEPTH_MAX) -> str | None:
    """Why a parsed JSON value cannot be stored, or None: too deep, a key or a string that
    `text_problem` refuses, or a number that is not finite."""
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, Mapping | list | tuple):
            if depth > max_depth:
                return f"Nested deeper than {max_depth} levels."
            if isinstance(item, Mapping):
                for key in item:
                    problem = text_problem(str(key))
                    if problem is not None:
                        return f"In a key: {problem}"
                pending.extend((child, depth + 1) for child in item.values())
            else:
                pending.extend((child, depth + 1) for child in item)
        elif isinstance(item, str):
            problem = text_problem(item)
            if problem is not None:
                return problem
        elif isinstance(item, float) and not math.isfinite(item):
            return "NaN and infinite numbers are not JSON."
    return None


class _NotFinite(ValueError):
    pass


def _not_finite(text: str) -> float:
    raise _NotFinite(f"{text} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise _NotFinite(f"{text[:20]} is too large a number")
    return number


def json_parse(text: str, *, max_depth: int = JSON_DEPTH_MAX) -> Any:
    """Parse JSON from outside, no deeper than `max_depth` and with finite numbers only; a
    `ValidationError` says what is wrong. Its strings are not checked (`json_from_text`)."""
    if _nesting_depth(text, max_depth) > max_depth:
        raise ValidationError(f"Nested deeper than {max_depth} levels.", code="too_deep")
    try:
        value = json.loads(text, parse_constant=_not_finite, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"Not valid JSON: {exc.msg}.", code="invalid_json") from None
    except _NotFinite as exc:
        raise ValidationError(f"Not valid JSON: {exc}.", code="invalid_json") from None
    except ValueError:
        # Python reads no integer of more than 4300 digits (sys.get_int_max_str_digits).
        raise ValidationError("Not valid JSON: a number has too many digits.",
                              code="invalid_json") from None
    return value


def json_from_text(text: str, *, max_depth: int = JSON_DEPTH_MAX) -> Any:
    """`json_parse`, and nothing in the value that `json_value_problem` refuses."""
    value = json_parse(text, max_depth=max_depth)
    problem = json_value_problem(value, max_depth=max_depth)
    if problem is not None:
        raise ValidationError(problem, code="unstorable")
    return value


def json_object_from_text(text: str) -> dict[str, Any]:
    """A field that holds a JSON object as text: empty, or the object."""
    text = text.strip()
    if not text:
        return {}
    value = json_from_text(text)
    if not isinstance(value, dict):
        raise ValidationError('Give a JSON object, like {"temperature": 0.8}.',
                              code="not_an_object")
    return value


def flag_from_text(value: str | None, *, default: bool = False) -> bool:
    """A yes/no value given as text (a form field, a query parameter): None is `default`."""
    if value is None:
        return default
    spelled = value.strip().lower()
    if spelled in TRUE_SPELLINGS:
        return True
    if spelled in FALSE_SPELLINGS:
        return False
    raise ValidationError(f"Give 1 or 0 (true or false), not {value[:20]!r}.",
                          code="not_a_flag")


def _looks_ticked(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in TRUE_SPELLINGS
    return bool(value)


class FlagCheckbox(forms.CheckboxInput):
    """A checkbox that hands its field the text it was sent, so that the field can refuse
    what is not a yes or a no (Django's checkbox reads any other text as ticked)."""

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs, check_test=_looks_ticked)

    def value_from_datadict(self, data: Any, files: Any, name: str) -> Any:
        return data.get(name)


class FlagField(forms.Field):
    """A yes/no form field: a ticked box ("on"), or 1/0, true/false, yes/no; absent or
    empty is no, and anything else is an error."""

    widget = FlagCheckbox

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        # The box stands left of its label, which reads as a statement, not a question.
        kwargs.setdefault("label_suffix", "")
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        return flag_from_text(None if value is None else str(value))

    def validate(self, value: Any) -> None:
        if self.required and not value:
            raise ValidationError(self.error_messages["required"], code="required")

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            return bool(self.to_python(initial) != self.to_python(data))
        except ValidationError:
            return True


def _stored_text(value: str) -> str:
    problem = text_problem(value)
    if problem is not None:
        raise PydanticCustomError("unstorable", problem)
    return value


def _stored_json_object(value: dict[str, Any]) -> dict[str, Any]:
    problem = json_value_problem(value)
    if problem is not None:
        raise PydanticCustomError("unstorable", problem)
    return value


# A schema's text fields, each with the length limit of the forms' field of its kind.
SlugText = Annotated[str, StringConstraints(max_length=SLUG_MAX), AfterValidator(_stored_text)]
NameText = Annotated[str, StringConstraints(max_length=NAME_MAX), AfterValidator(_stored_text)]
LongText = Annotated[str, StringConstraints(max_length=LONG_TEXT_MAX),
                     AfterValidator(_stored_text)]
JSONText = Annotated[str, StringConstraints(max_length=JSON_TEXT_MAX),
                     AfterValidator(_stored_text)]
"""JSON typed as text, as the multipart forms take it (`json_object_from_text`)."""
StoredJSONObject = Annotated[dict[str, Any], AfterValidator(_stored_json_object)]
"""A schema's JSON object: nothing `json_value_problem` refuses."""
