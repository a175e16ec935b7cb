"""The parameter and return types of a HumanEval-X function, read from its declaration.

Each language's type text (`vector<float>`, `List<Integer>`, `[]int`, `Vec<&str>`) is
read into a `ValueType`: a small model that says what Python values it can hold and how
a literal of it is spelled. JavaScript has no declared types: its parameters and return
are `ANY`, and a value is rendered by its own Python type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Kind = str
"""int, float, bool, str, char, list, array, tuple, map, optional, any."""


class SignatureError(ValueError):
    """The declaration has no function signature this module can read."""


@dataclass(frozen=True)
class ValueType:
    kind: Kind
    bits: int = 0
    """Width of an int or float (32, 64); 0 for JavaScript's numbers."""
    unsigned: bool = False
    args: tuple[ValueType, ...] = ()
    """Element type (list, array, optional), key and value (map), items (tuple)."""
    size: int = 0
    """Length of a fixed-size array (Go's `[2]int`)."""
    spelled: str = ""
    """The type as the language writes it, for typed literals (`vector<float>`)."""
    borrowed: bool = False
    """Rust: a reference (`&str`, `&f32`, `&Vec<i32>`), so a literal is borrowed."""

    def __str__(self) -> str:
        return self.spelled or self.kind

    @property
    def has_float(self) -> bool:
        return self.kind == "float" or any(arg.has_float for arg in self.args) \
            or self.kind == "any"


ANY = ValueType("any")


@dataclass(frozen=True)
class Signature:
    name: str
    params: tuple[ValueType, ...]
    returns: ValueType


_TOKEN = re.compile(r"\s*(interface\s*\{\s*\}|'\w+|[A-Za-z_][\w:]*|\d+|[<>\[\](),&*])")


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    position = 0
    text = text.strip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise SignatureError(f"cannot read the type {text!r}")
        tokens.append(re.sub(r"\s+", "", match.group(1)))
        position = match.end()
    return tokens


class _TypeReader:
    """Recursive descent over one type's tokens; `named` maps a name and its type
    arguments to a `ValueType` in the language at hand."""

    def __init__(self, language: str, text: str) -> None:
        self.language = language
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0

    def read(self) -> ValueType:
        value = self._type()
        if self.i != len(self.tokens):
            raise SignatureError(f"cannot read the type {self.text!r}")
        return value

    def _peek(self) -> str:
        return self.tokens[self.i] if self.i < len(self.tokens) else ""

    def _take(self, expected: str | None = None) -> str:
        token = self._peek()
        if not token or (expected is not None and token != expected):
            raise SignatureError(f"cannot read the type {self.text!r}")
        self.i += 1
        return token

    def _type(self) -> ValueType:
        start = self.i
        first = self._peek()
        if self.language == "rust" and first == "&":
            self._take()
            if self._peek().startswith("'"):
                self._take()
            if self._peek() == "mut":
                self._take()
            inner = self._type()
            return ValueType(inner.kind, inner.bits, inner.unsigned, inner.args, inner.size,
                             self._spelled(start), borrowed=True)
        if self.language == "rust" and first == "(":
            self._take()
            items = [self._type()]
            while self._peek() == ",":
                self._take()
                items.append(self._type())
            self._take(")")
            return ValueType("tuple", args=tuple(items), spelled=self._spelled(start))
        if self.language == "go" and first == "[":
            self._take()
            size = self._take() if self._peek() != "]" else ""
            self._take("]")
            element = self._type()
            if size:
                return ValueType("array", args=(element,), size=int(size),
                                 spelled=self._spelled(start))
            return ValueType("list", args=(element,), spelled=self._spelled(start))
        if self.language == "go" and first == "map":
            self._take()
            self._take("[")
            key = self._type()
            self._take("]")
            value = self._type()
            return ValueType("map", args=(key, value), spelled=self._spelled(start))
        name = self._take()
        if self.language == "rust" and name == "dyn":
            name = "dyn " + self._take()
        if self.language == "cpp" and name in ("long", "unsigned", "signed", "short"):
            while self._peek() in ("long", "int", "short"):
                name += " " + self._take()
        arguments: list[ValueType] = []
        if self._peek() == "<":
            self._take()
            arguments.append(self._type())
            while self._peek() == ",":
                self._take()
                arguments.append(self._type())
            self._take(">")
        return _named(self.language, name, tuple(arguments), self._spelled(start))

    def _spelled(self, start: int) -> str:
        out = ""
        for token in self.tokens[start:self.i]:
            joined = out[-1:].isalnum() or out[-1:] == "_"
            out += (" " if joined and (token[:1].isalnum() or token[:1] == "_") else "") + token
        return out


_INTS = {
    "cpp": {"int": 32, "long": 64, "long long": 64, "long int": 64, "long long int": 64,
            "size_t": 64},
    "java": {"int": 32, "Integer": 32, "long": 64, "Long": 64},
    "go": {"int": 64, "int64": 64, "int32": 32},
    "rust": {"i32": 32, "i64": 64, "isize": 64, "u32": 32, "u64": 64, "usize": 64},
}
_FLOATS = {
    "cpp": {"float": 32, "double": 64},
    "java": {"double": 64, "Double": 64, "float": 32, "Float": 32},
    "go": {"float64": 64, "float32": 32},
    "rust": {"f32": 32, "f64": 64},
}
_BOOLS = {"cpp": "bool", "java": "boolean Boolean", "go": "bool", "rust": "bool"}
_STRINGS = {"cpp": "string std::string", "java": "String", "go": "string", "rust": "String str"}
_CHARS = {"cpp": "char", "java": "char Character", "go": "rune byte", "rust": "char"}
_LISTS = {"cpp": "vector std::vector", "java": "List ArrayList", "go": "", "rust": "Vec"}
_MAPS = {"cpp": "map std::map", "java": "Map HashMap", "go": "", "rust": "HashMap"}
_ANYS = {"cpp": "list_any boost::any", "java": "Object", "go": "interface{}",
         "rust": "dyn Any Box"}


def _named(language: str, name: str, args: tuple[ValueType, ...], spelled: str) -> ValueType:
    if name in _INTS[language]:
        return ValueType("int", bits=_INTS[language][name], unsigned=name.startswith("u"),
                         spelled=spelled)
    if name in _FLOATS[language]:
        return ValueType("float", bits=_FLOATS[language][name], spelled=spelled)
    if name in _BOOLS[language].split():
        return ValueType("bool", spelled=spelled)
    if name in _STRINGS[language].split():
        return ValueType("str", spelled=spelled)
    if name in _CHARS[language].split():
        return ValueType("char", spelled=spelled)
    if name in _LISTS[language].split() and len(args) == 1:
        return ValueType("list", args=args, spelled=spelled)
    if name in _MAPS[language].split() and len(args) == 2:
        return ValueType("map", args=args, spelled=spelled)
    if name in ("Optional", "Option") and len(args) == 1:
        return ValueType("optional", args=args, spelled=spelled)
    if name in _ANYS[language].split() or name.startswith("dyn "):
        return ValueType("any", spelled=spelled)
    # Anything else (Rust's RtnType enum, a C++ alias) has no literal we can write.
    return ValueType("other", args=args, spelled=spelled)


def read_type(language: str, text: str) -> ValueType:
    """The `ValueType` of one type as `language` spells it."""
    if language == "js":
        return ANY
    return _TypeReader(language, text).read()


# -- signatures -----------------------------------------------------------------------

def _split_top(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current = ""
    for char in text:
        if char in "<([{":
            depth += 1
        elif char in ">)]}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current)
    return [part.strip() for part in parts]


def read_signature(language: str, source: str, name: str) -> Signature:
    """The signature of function `name` in `source` (a declaration, or the declaration
    followed by the canonical solution when the function is defined there)."""
    reader = {"cpp": _cpp, "java": _java, "go": _go, "rust": _rust, "js": _js}.get(language)
    if reader is None:
        raise SignatureError(f"no signature reader for {language!r}")
    return reader(source, name)


def _cpp(source: str, name: str) -> Signature:
    pattern = re.compile(r"(?:^|[;}\n])\s*([\w:<>, ]+?)\s+" + re.escape(name)
                         + r"\s*\(([^()]*)\)\s*\{", re.MULTILINE)
    match = pattern.search(source)
    if match is None:
        raise SignatureError(f"no C++ function {name!r} in the declaration")
    params = tuple(read_type("cpp", _cpp_param_type(p)) for p in _split_top(match.group(2)))
    return Signature(name, params, read_type("cpp", match.group(1)))


def _cpp_param_type(param: str) -> str:
    match = re.fullmatch(r"(.*?)\s*&?\s*\b(\w+)", param.replace("const ", ""), re.DOTALL)
    if match is None:
        raise SignatureError(f"cannot read the parameter {param!r}")
    return match.group(1).rstrip("& ")


def _java(source: str, name: str) -> Signature:
    pattern = re.compile(r"public\s+(?:static\s+)?([\w<>, \[\]]+?)\s+" + re.escape(name)
                         + r"\s*\(([^()]*)\)")
    match = pattern.search(source)
    if match is None:
        raise SignatureError(f"no Java method {name!r} in the declaration")
    params = []
    for param in _split_top(match.group(2)):
        type_text = re.fullmatch(r"(.*?)\s+\w+", param.strip(), re.DOTALL)
        if type_text is None:
            raise SignatureError(f"cannot read the parameter {param!r}")
        params.append(read_type("java", type_text.group(1)))
    return Signature(name, tuple(params), read_type("java", match.group(1)))


def _go(source: str, name: str) -> Signature:
    pattern = re.compile(r"func\s+" + re.escape(name) + r"\s*\(([^()]*)\)\s*([^{]*?)\s*\{\s*$",
                         re.MULTILINE)
    match = pattern.search(source)
    if match is None:
        # The return type may itself contain braces (`interface{}`).
        pattern = re.compile(r"func\s+" + re.escape(name) + r"\s*\(((?:[^()]|\(\))*)\)"
                             r"\s*(.*?)\s*\{\s*$", re.MULTILINE)
        match = pattern.search(source)
    if match is None:
        raise SignatureError(f"no Go function {name!r} in the declaration")
    names_waiting = 0
    params: list[ValueType] = []
    for param in _split_top(match.group(1)):
        parts = param.split(None, 1)
        if len(parts) == 1:
            names_waiting += 1  # `a, b int`: the type comes with the last name
            continue
        value_type = read_type("go", parts[1])
        params.extend([value_type] * (names_waiting + 1))
        names_waiting = 0
    if names_waiting:
        raise SignatureError(f"cannot read the parameters of {name!r}")
    returns = match.group(2).strip()
    return Signature(name, tuple(params), read_type("go", returns) if returns else ANY)


def _rust(source: str, name: str) -> Signature:
    pattern = re.compile(r"fn\s+" + re.escape(name) + r"\s*(?:<[^>]*>)?\s*\(([^)]*)\)"
                         r"\s*(?:->\s*([^{]+?))?\s*\{")
    match = pattern.search(source)
    if match is None:
        raise SignatureError(f"no Rust function {name!r} in the declaration")
    params = []
    for param in _split_top(match.group(1)):
        _, colon, type_text = param.partition(":")
        if not colon:
            raise SignatureError(f"cannot read the parameter {param!r}")
        params.append(read_type("rust", type_text))
    returns = match.group(2)
    return Signature(name, tuple(params),
                     read_type("rust", returns) if returns else ValueType("tuple"))


def _js(source: str, name: str) -> Signature:
    pattern = re.compile(r"(?:const\s+" + re.escape(name) + r"\s*=\s*(?:function\s*)?\(([^)]*)\)"
                         r"|function\s+" + re.escape(name) + r"\s*\(([^)]*)\))")
    match = pattern.search(source)
    if match is None:
        raise SignatureError(f"no JavaScript function {name!r} in the declaration")
    params = match.group(1) if match.group(1) is not None else match.group(2)
    return Signature(name, tuple(ANY for _ in _split_top(params)), ANY)
