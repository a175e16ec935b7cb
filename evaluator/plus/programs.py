"""The plus test program of one problem, in the shape each harness splits per test.

Every kept input becomes one equality check whose two sides the language's harness
shows as actual and expected: C++ `assert (f(x) == (e));`, Java
`if (!Objects.equals(s.f(x), e)) { throw new AssertionError(); }`, JavaScript
`assert.deepEqual(f(x), e)` (a local `assert`), Go `assert.Equal(e, F(x))`, Rust
`assert_eq!(f(x), e);`. Checks follow the kept inputs' order, so test outcome i is
input i. C++'s checks sit in functions of 10 and Java's in methods of 40, which `main`
calls in order: g++ and the JVM both balk at one function of a thousand.

Floats are judged as EvalPlus judges them, |actual - expected| <= atol + rtol * |expected|
(atol the problem's, at least 1e-6 when the output is a float; rtol 1e-7, or 1e-5 when
the declared type is a 32-bit float). A generated `snap` helper gives back the expected
value when the actual one is close enough, and the actual one otherwise, so the check
stays an equality and a failure still shows both values.

A problem judged by a property (`ROOT_ORACLE`: HumanEval/32, any root of the polynomial
passes) gets a check of the same shape whose two sides are texts: a generated `root`
helper evaluates the polynomial, as EvalPlus does (sum of c * pow(x, i), in order), at
the returned x over its own copy of the coefficients, and gives back `root_text(atol)`
when |poly(x)| <= atol, else "x = <x>, poly(x) = <value>", which the failure then shows
as the actual value.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluator.plus.literals import CPP_STRINGS, quoted
from evaluator.plus.types import Signature, ValueType

F64_RTOL = 1e-7
F32_RTOL = 1e-5
ROOT_ORACLE = "poly_root"
"""The one property oracle a test program can judge (HumanEval+'s `extra["oracle"]`)."""
ROOT_PACKAGES = {"go": ("math", "strconv")}
"""Packages the root check calls, which the test's setup must import (Go refuses an
unused import, so only problems with a root check get them)."""


@dataclass(frozen=True)
class Check:
    arguments: tuple[str, ...]
    """The arguments as literals of the language."""
    expected: str
    tolerant: bool
    """Compare within atol/rtol (the expected value holds a float)."""
    oracle: str = ""
    """`ROOT_ORACLE`: the output is judged as a root of the first argument, and
    `expected` is unused."""


def root_text(atol: float) -> str:
    """What a root check expects, and its helper returns for a root."""
    return f"a root, |poly(x)| <= {atol!r}"


def tolerance(returns: ValueType, atol: float) -> tuple[float, float]:
    rtol = F32_RTOL if _has_f32(returns) else F64_RTOL
    return max(atol, 1e-6), rtol


def _has_f32(value_type: ValueType) -> bool:
    return (value_type.kind == "float" and value_type.bits == 32) or any(
        _has_f32(arg) for arg in value_type.args)


def test_program(target: str, signature: Signature, checks: list[Check], atol: float) -> str:
    if any(check.oracle for check in checks):
        # A root is judged with the problem's own atol, as EvalPlus does: no 1e-6 floor.
        roots = {"cpp": _cpp_roots, "java": _java_roots, "js": _js_roots,
                 "go": _go_roots, "rust": _rust_roots}[target]
        return roots(signature, checks, atol)
    writer = {"cpp": _cpp, "java": _java, "js": _js, "go": _go, "rust": _rust}[target]
    return writer(signature, checks, *tolerance(signature.returns, atol))




# -- C++ ------------------------------------------------------------------------------

_CPP_SNAP = """\
inline bool plus_close_(double a, double e, double atol, double rtol) {
    double d = a > e ? a - e : e - a;
    return d <= atol + rtol * (e < 0 ? -e : e);
}
template <class T> bool plus_same_(const T& a, const T& e, double atol, double rtol) {
    return plus_close_(a, e, atol, rtol);
}
template <class T>
bool plus_same_(const std::vector<T>& a, const std::vector<T>& e, double atol, double rtol) {
    if (a.size() != e.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!plus_same_(a[i], e[i], atol, rtol)) return false;
    return true;
}
template <class T> T plus_snap_(const T& a, const T& e, double atol, double rtol) {
    return plus_same_(a, e, atol, rtol) ? e : a;
}
"""


_CPP_STRINGS = f"""\
#include<initializer_list>
#include<string>
#include<vector>
std::vector<std::string> {CPP_STRINGS}(std::initializer_list<const char*> items) {{
    return std::vector<std::string>(items.begin(), items.end());
}}
"""

_CPP_CHUNK = 10
"""Checks per function. g++ allocates registers over a whole function at once, at -O0
too, in time that grows faster than the function: HumanEval/20's 1,005 checks,
instrumented, took 10 s of CPU in one `main`, 4.6 s in functions of 50, 3.2 s in
functions of 10."""


def _cpp(signature: Signature, checks: list[Check], atol: float, rtol: float) -> str:
    lines = ["#undef NDEBUG", "#include<assert.h>"]
    if any(check.tolerant for check in checks):
        lines.append(_CPP_SNAP)
    asserts = []
    for check in checks:
        call = f"{signature.name}({', '.join(check.arguments)})"
        if check.tolerant:
            call = f"plus_snap_({call}, {signature.returns.spelled}({check.expected}), " \
                   f"{atol!r}, {rtol!r})"
        asserts.append(f"assert ({call} == ({check.expected}));")
    return _cpp_program(lines, asserts)


def _cpp_program(lines: list[str], asserts: list[str]) -> str:
    """The asserts in functions of `_CPP_CHUNK`, which `main` calls in order, after
    `lines` and the string-list helper when a literal calls it."""
    strings = any(f"{CPP_STRINGS}(" in text for text in asserts)
    lines = [*lines, *([_CPP_STRINGS] if strings else [])]
    chunks = [asserts[i:i + _CPP_CHUNK] for i in range(0, len(asserts), _CPP_CHUNK)]
    for number, chunk in enumerate(chunks):
        lines.append(f"static void plus_checks_{number}_(){{")
        lines.extend(f"    {text}" for text in chunk)
        lines.append("}")
    lines.append("int main(){")
    lines.extend(f"    plus_checks_{number}_();" for number in range(len(chunks)))
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- Java -----------------------------------------------------------------------------

_JAVA_HELPERS = """\
    @SuppressWarnings("unchecked")
    static <K, V> Map<K, V> plusMap(Object... pairs) {
        Map<K, V> map = new HashMap<>();
        for (int i = 0; i < pairs.length; i += 2) map.put((K) pairs[i], (V) pairs[i + 1]);
        return map;
    }
    static boolean plusSame(Object a, Object e, double atol, double rtol) {
        if (e instanceof Double || e instanceof Float) {
            if (!(a instanceof Double || a instanceof Float)) return false;
            double x = ((Number) a).doubleValue(), y = ((Number) e).doubleValue();
            return Math.abs(x - y) <= atol + rtol * Math.abs(y);
        }
        if (a instanceof List && e instanceof List) {
            List<?> x = (List<?>) a, y = (List<?>) e;
            if (x.size() != y.size()) return false;
            for (int i = 0; i < x.size(); i++)
                if (!plusSame(x.get(i), y.get(i), atol, rtol)) return false;
            return true;
        }
        if (a instanceof Optional && e instanceof Optional) {
            Optional<?> x = (Optional<?>) a, y = (Optional<?>) e;
            return x.isPresent() == y.isPresent()
                && (!x.isPresent() || plusSame(x.get(), y.get(), atol, rtol));
        }
        return Objects.equals(a, e);
    }
    static Object plusSnap(Object a, Object e, double atol, double rtol) {
        return plusSame(a, e, atol, rtol) ? e : a;
    }
"""

_JAVA_CHUNK = 40
"""Checks per method: one method holding thousands would pass the JVM's 64 KB limit."""
_JAVA_CHUNK_CHARS = 12_000
"""And characters per method: a literal's element costs javac more bytes than its text
(an `Integer` boxed into an array: about 12 bytes for `1831, `), and HumanEval/96's 40
checks of up to 1,831 primes each passed 64 KB (`code too large`)."""


def _java(signature: Signature, checks: list[Check], atol: float, rtol: float) -> str:
    statements = []
    for check in checks:
        call = f"s.{signature.name}({', '.join(check.arguments)})"
        if check.tolerant:
            call = f"plusSnap({call}, {check.expected}, {atol!r}, {rtol!r})"
        statements.append(f"if (!Objects.equals({call}, {check.expected})) "
                          "{ throw new AssertionError(); }")
    return _java_program(_JAVA_HELPERS, statements)


def _java_program(helpers: str, statements: list[str]) -> str:
    """The checks in methods of at most `_JAVA_CHUNK` checks and about `_JAVA_CHUNK_CHARS`
    characters (a check longer than that has a method of its own), which `main` calls in
    order."""
    chunks: list[list[str]] = []
    size = 0
    for statement in statements:
        if not chunks or len(chunks[-1]) >= _JAVA_CHUNK \
                or size + len(statement) > _JAVA_CHUNK_CHARS:
            chunks.append([])
            size = 0
        chunks[-1].append(statement)
        size += len(statement)
    lines = ["public class Main {", helpers]
    for number, chunk in enumerate(chunks):
        lines.append(f"    static void plusChecks{number}(Solution s) {{")
        lines.extend(f"        {statement}" for statement in chunk)
        lines.append("    }")
    lines.append("    public static void main(String[] args) {")
    lines.append("        Solution s = new Solution();")
    lines.extend(f"        plusChecks{number}(s);" for number in range(len(chunks)))
    lines.append("    }")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- JavaScript -----------------------------------------------------------------------

_JS_HELPERS = """\
  const plusSame = (a, e, tol) => {
    if (e === null) return a === null || a === undefined
    // Python's == holds False == 0 and True == 1, and EvalPlus judges by it.
    if (typeof e === 'boolean' && typeof a === 'number') return a === Number(e)
    if (typeof e === 'number' && typeof a === 'boolean') return Number(a) === e
    if (typeof e === 'number') {
      if (typeof a !== 'number') return false
      return a === e || (tol !== null && Math.abs(a - e) <= tol[0] + tol[1] * Math.abs(e))
    }
    if (Array.isArray(e)) {
      return Array.isArray(a) && a.length === e.length && e.every((x, i) => plusSame(a[i], x, tol))
    }
    if (typeof e === 'object') {
      if (a === null || typeof a !== 'object' || Array.isArray(a)) return false
      const keys = Object.keys(e)
      return keys.length === Object.keys(a).length && keys.every((k) => plusSame(a[k], e[k], tol))
    }
    return a === e
  }
  const assert = {
    deepEqual (actual, expected, tol) {
      if (!plusSame(actual, expected, tol)) {
        const error = new Error('expected ' + JSON.stringify(expected))
        error.name = 'AssertionError'
        throw error
      }
    }
  }
"""


def _js(signature: Signature, checks: list[Check], atol: float, rtol: float) -> str:
    # A block of its own: its `assert` shadows any the completion declared.
    lines = ["{", _JS_HELPERS]
    for check in checks:
        tol = f"[{atol!r}, {rtol!r}]" if check.tolerant else "null"
        lines.append(f"  assert.deepEqual({signature.name}({', '.join(check.arguments)}), "
                     f"{check.expected}, {tol})")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- Go -------------------------------------------------------------------------------

def _go_same(value_type: ValueType, depth: int = 0) -> str:
    """A Go function literal `func(a, e T) bool` judging equality as EvalPlus does."""
    a, e = f"a{depth}", f"e{depth}"
    spelled = value_type.spelled
    if value_type.kind == "float":
        return (f"func({a}, {e} {spelled}) bool {{ d := {a} - {e}; if d < 0 {{ d = -d }}; "
                f"m := {e}; if m < 0 {{ m = -m }}; return d <= plusAtol + plusRtol*m }}")
    if value_type.kind in ("list", "array"):
        inner = _go_same(value_type.args[0], depth + 1)
        return (f"func({a}, {e} {spelled}) bool {{ if len({a}) != len({e}) {{ return false }}; "
                f"same := {inner}; for i := range {e} {{ if !same({a}[i], {e}[i]) "
                f"{{ return false }} }}; return true }}")
    if value_type.kind == "any":
        return (f"func({a}, {e} interface{{}}) bool {{ x, ok := {a}.(float64); "
                f"y, ok2 := {e}.(float64); if !ok || !ok2 {{ return false }}; d := x - y; "
                f"if d < 0 {{ d = -d }}; if y < 0 {{ y = -y }}; "
                f"return d <= plusAtol + plusRtol*y }}")
    return f"func({a}, {e} {spelled}) bool {{ return {a} == {e} }}"


def _go(signature: Signature, checks: list[Check], atol: float, rtol: float) -> str:
    returns = signature.returns
    snap = any(check.tolerant for check in checks) or returns.kind == "list"
    lines = [f"func Test{signature.name}Plus(t *testing.T) {{", "    assert := assert.New(t)"]
    for check in checks:
        call = f"{signature.name}({', '.join(check.arguments)})"
        if snap:
            call = f"plusSnap({call}, {check.expected})"
        lines.append(f"    assert.Equal({check.expected}, {call})")
    lines.append("}")
    if snap:
        # A nil slice and an empty one are both Python's []; reflect.DeepEqual would
        # tell them apart.
        lines.append(f"const plusAtol, plusRtol = {atol!r}, {rtol!r}")
        lines.append(f"func plusSnap(a, e {returns.spelled}) {returns.spelled} {{")
        lines.append(f"    if ({_go_same(returns)})(a, e) {{ return e }}")
        lines.append("    return a")
        lines.append("}")
    return "\n".join(lines) + "\n"


# -- Rust -----------------------------------------------------------------------------

_RUST_SNAP = """\
    trait PlusSame { fn plus_same(&self, e: &Self, atol: f64, rtol: f64) -> bool; }
    impl PlusSame for f64 {
        fn plus_same(&self, e: &Self, atol: f64, rtol: f64) -> bool {
            (self - e).abs() <= atol + rtol * e.abs()
        }
    }
    impl PlusSame for f32 {
        fn plus_same(&self, e: &Self, atol: f64, rtol: f64) -> bool {
            (*self as f64).plus_same(&(*e as f64), atol, rtol)
        }
    }
    impl<T: PlusSame> PlusSame for Vec<T> {
        fn plus_same(&self, e: &Self, atol: f64, rtol: f64) -> bool {
            self.len() == e.len() && self.iter().zip(e).all(|(x, y)| x.plus_same(y, atol, rtol))
        }
    }
    impl<A: PlusSame, B: PlusSame> PlusSame for (A, B) {
        fn plus_same(&self, e: &Self, atol: f64, rtol: f64) -> bool {
            self.0.plus_same(&e.0, atol, rtol) && self.1.plus_same(&e.1, atol, rtol)
        }
    }
    fn plus_snap<T: PlusSame + Clone>(a: T, e: T, atol: f64, rtol: f64) -> T {
        if a.plus_same(&e, atol, rtol) { e } else { a }
    }
"""


def _rust(signature: Signature, checks: list[Check], atol: float, rtol: float) -> str:
    lines = ["", "#[cfg(test)]", "mod tests {", "    use super::*;", ""]
    if any(check.tolerant for check in checks):
        lines.append(_RUST_SNAP)
    lines.append("    #[test]")
    lines.append(f"    fn test_{signature.name}_plus() {{")
    for check in checks:
        call = f"{signature.name}({', '.join(check.arguments)})"
        if check.tolerant:
            call = f"plus_snap({call}, {check.expected}, {atol!r}, {rtol!r})"
        lines.append(f"        assert_eq!({call}, {check.expected});")
    lines.append("    }")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- root checks (HumanEval/32) --------------------------------------------------------
# Each helper sums in the coefficients' order and compares |sum| <= atol, so NaN (no
# comparison holds) and an overflowed power (inf, or inf - inf) are no root, as
# `math.pow`'s OverflowError makes them in Python. The coefficients it evaluates are a
# literal of their own: whatever the solution did to the list it was given, the
# polynomial is the input's.

_CPP_ROOT = """\
#include<cmath>
#include<cstdio>
#include<cstdlib>
#include<cstring>
#include<string>
std::string plus_shortest_(double v) {
    // The fewest digits that read back as v, as Python's repr; no exponent where repr
    // writes none (%.1g writes 10 as 1e+01).
    bool plain = std::fabs(v) >= 1e-4 && std::fabs(v) < 1e16;
    char text[40];
    for (int digits = 1; digits <= 17; ++digits) {
        std::snprintf(text, sizeof text, "%.*g", digits, v);
        if (std::strtod(text, nullptr) == v && !(plain && std::strchr(text, 'e'))) break;
    }
    return text;
}
std::string plus_root_(double x, const COEFFICIENTS& xs) {
    double sum = 0;
    for (size_t i = 0; i < xs.size(); ++i) sum += (double) xs[i] * std::pow(x, (double) i);
    if (std::fabs(sum) <= ATOL) return ROOT;
    return "x = " + plus_shortest_(x) + ", poly(x) = " + plus_shortest_(sum);
}
"""


def _root_helper(template: str, coefficients: ValueType, atol: float, target: str) -> str:
    return (template.replace("COEFFICIENTS", coefficients.spelled)
            .replace("ATOL", repr(atol)).replace("ROOT", quoted(root_text(atol), target)))


def _cpp_roots(signature: Signature, checks: list[Check], atol: float) -> str:
    lines = ["#undef NDEBUG", "#include<assert.h>",
             _root_helper(_CPP_ROOT, signature.params[0], atol, "cpp")]
    expected = f"std::string({quoted(root_text(atol), 'cpp')})"
    asserts = [f"assert (plus_root_({signature.name}({', '.join(check.arguments)}), "
               f"{check.arguments[0]}) == ({expected}));" for check in checks]
    return _cpp_program(lines, asserts)


_JAVA_ROOT = """\
    static String plusRoot(double x, List<? extends Number> xs) {
        double sum = 0;
        for (int i = 0; i < xs.size(); i++) sum += xs.get(i).doubleValue() * Math.pow(x, i);
        if (Math.abs(sum) <= ATOL) return ROOT;
        return "x = " + x + ", poly(x) = " + sum;
    }
"""


def _java_roots(signature: Signature, checks: list[Check], atol: float) -> str:
    expected = quoted(root_text(atol), "java")
    statements = [f"if (!Objects.equals(plusRoot(s.{signature.name}"
                  f"({', '.join(check.arguments)}), {check.arguments[0]}), {expected})) "
                  "{ throw new AssertionError(); }" for check in checks]
    return _java_program(_root_helper(_JAVA_ROOT, signature.params[0], atol, "java"),
                         statements)


# `**` and a conditional rather than Math.pow and Math.abs: the program runs first, in
# the same realm, and could replace Math's functions with ones that make every x a root.
_JS_ROOT = """\
  const plusRoot = (x, xs) => {
    if (typeof x !== 'number' && typeof x !== 'boolean') {
      let shown
      try { shown = `${x}` } catch (error) { shown = typeof x }
      return `x = ${shown} (a ${typeof x}), not a number`
    }
    let sum = 0
    for (let i = 0; i < xs.length; i++) sum += xs[i] * (+x) ** i
    return (sum < 0 ? -sum : sum) <= ATOL ? ROOT : `x = ${x}, poly(x) = ${sum}`
  }
"""


def _js_roots(signature: Signature, checks: list[Check], atol: float) -> str:
    lines = ["{", _JS_HELPERS, _root_helper(_JS_ROOT, signature.params[0], atol, "js")]
    expected = quoted(root_text(atol), "js")
    for check in checks:
        call = f"{signature.name}({', '.join(check.arguments)})"
        lines.append(f"  assert.deepEqual(plusRoot({call}, {check.arguments[0]}), "
                     f"{expected}, null)")
    lines.append("}")
    return "\n".join(lines) + "\n"


_GO_ROOT = """\
func plusRoot(x float64, xs COEFFICIENTS) string {
    sum := 0.0
    for i, c := range xs {
        sum += float64(c) * math.Pow(x, float64(i))
    }
    if math.Abs(sum) <= ATOL {
        return ROOT
    }
    return "x = " + strconv.FormatFloat(x, 'g', -1, 64) + ", poly(x) = " +
        strconv.FormatFloat(sum, 'g', -1, 64)
}"""


def _go_roots(signature: Signature, checks: list[Check], atol: float) -> str:
    lines = [f"func Test{signature.name}Plus(t *testing.T) {{", "    assert := assert.New(t)"]
    expected = quoted(root_text(atol), "go")
    for check in checks:
        call = f"{signature.name}({', '.join(check.arguments)})"
        lines.append(f"    assert.Equal({expected}, plusRoot({call}, {check.arguments[0]}))")
    lines.append("}")
    lines.append(_root_helper(_GO_ROOT, signature.params[0], atol, "go"))
    return "\n".join(lines) + "\n"


_RUST_ROOT = """\
    fn plus_root(x: f64, xs: &[ELEMENT]) -> String {
        let mut sum: f64 = 0.0;
        for (i, c) in xs.iter().enumerate() {
            sum += (*c as f64) * x.powf(i as f64);
        }
        if sum.abs() <= ATOL {
            return ROOT.to_string();
        }
        format!("x = {:?}, poly(x) = {:?}", x, sum)
    }
"""


def _rust_roots(signature: Signature, checks: list[Check], atol: float) -> str:
    element = signature.params[0].args[0].spelled if signature.params[0].args else "f64"
    lines = ["", "#[cfg(test)]", "mod tests {", "    use super::*;", "",
             _root_helper(_RUST_ROOT.replace("ELEMENT", element), signature.params[0], atol,
                          "rust"),
             "    #[test]", f"    fn test_{signature.name}_plus() {{"]
    expected = quoted(root_text(atol), "rust")
    for check in checks:
        call = f"{signature.name}({', '.join(check.arguments)})"
        lines.append(f"        assert_eq!(plus_root({call}, {check.arguments[0]}), {expected});")
    lines.append("    }")
    lines.append("}")
    return "\n".join(lines) + "\n"
