"""Python values as typed literals of C++, Java, JavaScript, Go and Rust.

`literal(target, value, value_type)` spells one value, or raises `Untranslatable` with
a reason from `REASONS` when the language's type cannot hold it. The reasons are what
the builder counts, per problem and per language.
"""

from __future__ import annotations

import json
import math
from typing import Any

from evaluator.plus.types import ValueType

REASONS = {
    "int_out_of_range": "an integer past the range of the declared integer type",
    "wrong_type": "a value of another type than the signature declares",
    "non_ascii_text": "non-ASCII text where the language's strings are bytes",
    "text_outside_bmp": "text outside the Basic Multilingual Plane (UTF-16 strings)",
    "non_finite_float": "an infinite or NaN float, which has no plain literal",
    "float_out_of_range": "a float past the range of a 32-bit float",
    "dynamic_type": "a dynamically typed parameter or return (boost::any, dyn Any, an enum)",
    "canonical_error": "HumanEval+'s canonical solution raised or did not finish",
    "property_oracle": "judged by a property the test programs cannot check (HumanEval/32's "
                       "root, poly_root, they can: any other oracle)",
    "arity": "the input has another number of arguments than the signature",
    "variant_interface": "the variant asks for another output than Python's (the defect "
                         "registry says so: C++'s rounded_avg without '0b')",
    "literal_too_large": "its check would be longer than MAX_CHECK_CHARS characters of "
                         "source (a 34 MB string literal does not compile in reasonable time)",
}

MAX_CHECK_CHARS = 100_000

CPP_STRINGS = "plus_strings_"
"""The C++ test's helper making a `vector<string>` of a list of C strings: an
initializer list of `std::string` is code, a constructor and a cleanup per element,
which g++ compiles at a quarter of a millisecond each, 14 s for HumanEval/14's 32,000
(`programs._CPP_STRINGS`); a list of pointers is data."""


class Untranslatable(ValueError):  # noqa: N818 - it names the outcome, not an error
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


_JS_SAFE = 2 ** 53 - 1
_F32_MAX = 3.4028234663852886e38


def _int_range(value_type: ValueType, target: str) -> tuple[int, int]:
    if target == "js":
        return -_JS_SAFE, _JS_SAFE
    bits = value_type.bits or 64
    if value_type.unsigned:
        return 0, 2 ** bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def check_int(value: Any, value_type: ValueType, target: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Untranslatable("wrong_type", f"{value!r} for {value_type}")
    low, high = _int_range(value_type, target)
    if not low <= value <= high:
        raise Untranslatable("int_out_of_range", f"{value} for {value_type or 'a number'}")
    return value


def check_float(value: Any, value_type: ValueType) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Untranslatable("wrong_type", f"{value!r} for {value_type}")
    try:
        number = float(value)
    except OverflowError as exc:
        raise Untranslatable("float_out_of_range", str(exc)) from exc
    if not math.isfinite(number):
        raise Untranslatable("non_finite_float", repr(number))
    if value_type.bits == 32 and abs(number) > _F32_MAX:
        raise Untranslatable("float_out_of_range", f"{number!r} for {value_type}")
    return number


def check_text(value: Any, value_type: ValueType, target: str) -> str:
    if not isinstance(value, str):
        raise Untranslatable("wrong_type", f"{value!r} for {value_type or 'a string'}")
    if target in ("cpp", "go", "rust") and not value.isascii():
        raise Untranslatable("non_ascii_text", f"{value[:40]!r}")
    if target in ("java", "js") and any(ord(char) > 0xFFFF for char in value):
        raise Untranslatable("text_outside_bmp", f"{value[:40]!r}")
    return value


def float_text(number: float) -> str:
    text = repr(number)
    return text if any(c in text for c in ".en") else text + ".0"


def _escape_char(char: str, target: str, quote: str) -> str:
    code = ord(char)
    simple = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", quote: "\\" + quote}
    if char in simple:
        return simple[char]
    if target == "cpp" and char == "?":
        return "\\?"  # no trigraphs in strict C++11
    if 0x20 <= code < 0x7F:
        return char
    if target in ("cpp", "java"):
        if code < 0x100 and (target == "java" or code < 0x80):
            return f"\\{code:03o}"  # octal: never swallows the next character
        return f"\\u{code:04x}"
    if target == "go":
        return f"\\x{code:02x}" if code < 0x80 else char
    if target == "rust":
        return f"\\x{code:02x}" if code < 0x80 else f"\\u{{{code:x}}}"
    return json.dumps(char)[1:-1]


def quoted(text: str, target: str, quote: str = '"') -> str:
    return quote + "".join(_escape_char(char, target, quote) for char in text) + quote


def _items(value: Any, value_type: ValueType) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise Untranslatable("wrong_type", f"{type(value).__name__} for {value_type}")
    return list(value)


def literal(target: str, value: Any, value_type: ValueType) -> str:
    """`value` as a literal of `value_type` in `target`'s syntax."""
    spell = {"cpp": _cpp, "java": _java, "js": _js, "go": _go, "rust": _rust}[target]
    return spell(value, value_type)


# -- C++ ------------------------------------------------------------------------------

def _cpp(value: Any, t: ValueType) -> str:
    kind = t.kind
    if kind == "int":
        number = check_int(value, t, "cpp")
        suffix = "LL" if t.bits == 64 else ""
        low, _ = _int_range(t, "cpp")
        if number == low:
            return f"({low + 1}{suffix}-1)"
        return f"{number}{suffix}" if number >= 0 else f"({number}{suffix})"
    if kind == "float":
        text = float_text(check_float(value, t))
        return (text + "f" if t.bits == 32 else text) if not text.startswith("-") \
            else f"({text}{'f' if t.bits == 32 else ''})"
    if kind == "bool":
        return _bool(value, t, "true", "false")
    if kind == "str":
        return f"string({quoted(check_text(value, t, 'cpp'), 'cpp')})"
    if kind == "char":
        return quoted(_char(value, t, "cpp"), "cpp", "'")
    if kind == "list" and t.args[0].kind == "str":
        items = ", ".join(quoted(check_text(item, t.args[0], "cpp"), "cpp")
                          for item in _items(value, t))
        return f"{CPP_STRINGS}({{{items}}})"
    if kind == "list":
        items = ", ".join(_cpp(item, t.args[0]) for item in _items(value, t))
        return f"{t.spelled}{{{items}}}"
    if kind == "map":
        pairs = ", ".join(f"{{{_cpp(k, t.args[0])}, {_cpp(v, t.args[1])}}}"
                          for k, v in _mapping(value, t).items())
        return f"{t.spelled}{{{pairs}}}"
    raise Untranslatable("dynamic_type", str(t))


def _bool(value: Any, t: ValueType, true: str, false: str) -> str:
    if not isinstance(value, bool):
        raise Untranslatable("wrong_type", f"{value!r} for {t}")
    return true if value else false


def _char(value: Any, t: ValueType, target: str) -> str:
    text = check_text(value, t, target)
    if len(text) != 1:
        raise Untranslatable("wrong_type", f"{value!r} for {t}")
    return text


def _mapping(value: Any, t: ValueType) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise Untranslatable("wrong_type", f"{type(value).__name__} for {t}")
    return value


# -- Java -----------------------------------------------------------------------------

def _java(value: Any, t: ValueType) -> str:
    kind = t.kind
    if kind == "any":
        return _java_natural(value)
    if kind == "int":
        number = check_int(value, t, "java")
        suffix = "L" if t.bits == 64 else ""
        low, _ = _int_range(t, "java")
        return f"({low + 1}{suffix}-1)" if number == low else f"{number}{suffix}"
    if kind == "float":
        text = float_text(check_float(value, t))
        return text + "f" if t.bits == 32 else text
    if kind == "bool":
        return _bool(value, t, "true", "false")
    if kind == "str":
        return quoted(check_text(value, t, "java"), "java")
    if kind == "char":
        return quoted(_char(value, t, "java"), "java", "'")
    if kind == "list":
        items = [_java(item, t.args[0]) for item in _items(value, t)]
        if items == ["null"]:
            items = [f"({t.args[0].spelled}) null"]  # not asList's whole varargs array
        return f"new ArrayList<>(Arrays.asList({', '.join(items)}))" if items \
            else "new ArrayList<>()"
    if kind == "optional":
        return "Optional.empty()" if value is None else f"Optional.of({_java(value, t.args[0])})"
    if kind == "map":
        pairs = [f"{_java(k, t.args[0])}, {_java(v, t.args[1])}"
                 for k, v in _mapping(value, t).items()]
        return f"plusMap({', '.join(pairs)})"
    raise Untranslatable("dynamic_type", str(t))


def _java_natural(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        check_int(value, ValueType("int", bits=64), "java")
        return str(value) if -(2 ** 31) <= value < 2 ** 31 else f"{value}L"
    if isinstance(value, float):
        return float_text(check_float(value, ValueType("float", bits=64)))
    if isinstance(value, str):
        return quoted(check_text(value, ValueType("str"), "java"), "java")
    if isinstance(value, list | tuple):
        items = [_java_natural(item) for item in value]
        if items == ["null"]:
            items = ["(Object) null"]  # not asList's whole varargs array
        return f"new ArrayList<>(Arrays.asList({', '.join(items)}))" if items \
            else "new ArrayList<>()"
    if isinstance(value, dict):
        pairs = [f"{_java_natural(k)}, {_java_natural(v)}" for k, v in value.items()]
        return f"plusMap({', '.join(pairs)})"
    raise Untranslatable("wrong_type", type(value).__name__)


# -- JavaScript -----------------------------------------------------------------------

def _js(value: Any, t: ValueType) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(check_int(value, t, "js"))
    if isinstance(value, float):
        return float_text(check_float(value, t))
    if isinstance(value, str):
        return json.dumps(check_text(value, t, "js"))
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_js(item, t) for item in value) + "]"
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise Untranslatable("wrong_type", "a dict with non-string keys")
        return "{" + ", ".join(f"{json.dumps(check_text(k, t, 'js'))}: {_js(v, t)}"
                               for k, v in value.items()) + "}"
    raise Untranslatable("wrong_type", type(value).__name__)


# -- Go -------------------------------------------------------------------------------

def _go(value: Any, t: ValueType) -> str:
    kind = t.kind
    if kind == "any":
        return _go_natural(value)
    if kind == "int":
        return str(check_int(value, t, "go"))
    if kind == "float":
        return float_text(check_float(value, t))
    if kind == "bool":
        return _bool(value, t, "true", "false")
    if kind == "str":
        return quoted(check_text(value, t, "go"), "go")
    if kind == "char":
        return quoted(_char(value, t, "go"), "go", "'")
    if kind in ("list", "array"):
        items = _items(value, t)
        if kind == "array" and len(items) != t.size:
            raise Untranslatable("wrong_type", f"{len(items)} items for {t}")
        return f"{t.spelled}{{{', '.join(_go(item, t.args[0]) for item in items)}}}"
    if kind == "map":
        pairs = ", ".join(f"{_go(k, t.args[0])}: {_go(v, t.args[1])}"
                          for k, v in _mapping(value, t).items())
        return f"{t.spelled}{{{pairs}}}"
    raise Untranslatable("dynamic_type", str(t))


def _go_natural(value: Any) -> str:
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(check_int(value, ValueType("int", bits=64), "go"))
    if isinstance(value, float):
        return float_text(check_float(value, ValueType("float", bits=64)))
    if isinstance(value, str):
        return quoted(check_text(value, ValueType("str"), "go"), "go")
    if isinstance(value, list | tuple):
        # A homogeneous list gets its element type: an `interface{}` return holds the
        # solution's own []string or []int, and testify compares types too.
        element = "interface{}"
        for python_type, go_type in ((str, "string"), (bool, "bool"), (float, "float64")):
            if value and all(type(item) is python_type for item in value):
                element = go_type
        if value and all(type(item) is int for item in value):
            element = "int"
        return f"[]{element}{{" + ", ".join(_go_natural(item) for item in value) + "}"
    if isinstance(value, dict):
        return "map[interface{}]interface{}{" + ", ".join(
            f"{_go_natural(k)}: {_go_natural(v)}" for k, v in value.items()) + "}"
    raise Untranslatable("wrong_type", type(value).__name__)


# -- Rust -----------------------------------------------------------------------------

def _rust(value: Any, t: ValueType) -> str:
    text = _rust_owned(value, t)
    if t.borrowed and t.kind != "str":
        return "&" + text
    return text


def _rust_owned(value: Any, t: ValueType) -> str:
    kind = t.kind
    if kind == "int":
        number = check_int(value, t, "rust")
        low, _ = _int_range(t, "rust")
        return f"{t.spelled.lstrip('&')}::MIN" if number == low and number < 0 else str(number)
    if kind == "float":
        return float_text(check_float(value, t))
    if kind == "bool":
        return _bool(value, t, "true", "false")
    if kind == "str":
        text = quoted(check_text(value, t, "rust"), "rust")
        return text if t.borrowed else f"{text}.to_string()"
    if kind == "char":
        return quoted(_char(value, t, "rust"), "rust", "'")
    if kind == "list":
        items = _items(value, t)
        if not items:
            # `vec![]` leaves the element type to inference, which `==` cannot settle.
            return f"<{t.spelled.lstrip('&')}>::new()"
        return "vec![" + ", ".join(_rust(item, t.args[0]) for item in items) + "]"
    if kind == "tuple":
        items = _items(value, t)
        if len(items) != len(t.args):
            raise Untranslatable("wrong_type", f"{len(items)} items for {t}")
        inner = ", ".join(_rust(item, arg) for item, arg in zip(items, t.args, strict=True))
        return f"({inner},)" if len(items) == 1 else f"({inner})"
    if kind == "optional":
        return "None" if value is None else f"Some({_rust(value, t.args[0])})"
    if kind == "map":
        pairs = ", ".join(f"({_rust(k, t.args[0])}, {_rust(v, t.args[1])})"
                          for k, v in _mapping(value, t).items())
        return f"HashMap::from([{pairs}])"
    raise Untranslatable("dynamic_type", str(t))
