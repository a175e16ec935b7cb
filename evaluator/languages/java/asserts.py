"""Rewriting a Java test so that each of its checks is reported alone.

Each check becomes a block that evaluates, reports and goes on (calling the
`evaluator_harness` runtime):
- HumanEval-X: `List<Boolean> correct = Arrays.asList(e1, ..., en);` followed by
  `if (correct.contains(false)) throw new AssertionError();` becomes n checks;
- `if (cond) { throw new AssertionError(); }` becomes a check that `cond` is false;
- MultiPL-E: `assert expr;` becomes a check of `expr`.
`a.equals(b)`, `Objects.equals(a, b)` and `a == b` report expected and actual. A test
with no recognised check is left as it is (`Rewrite.whole_reason` says why).
"""

from __future__ import annotations

from evaluator.languages import c_family, lexing
from evaluator.languages.lexing import ScanError, Token
from evaluator.languages.reporting import Rewrite, Site, apply_edits

_LOW_PRECEDENCE = frozenset({"&&", "||", "?", ":", "=", ",", "!=", "&", "|", "^", "->",
                             "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=",
                             ">>>="})
"""Operators binding no tighter than `==`: with one at the top level, `a == b` is not the
whole condition."""


def rewrite_test(test: str, callees: tuple[str, ...]) -> Rewrite:
    try:
        tokens = lexing.tokenize(test, "java")
    except ScanError as exc:
        return Rewrite(test, whole_reason=f"the test text could not be scanned ({exc})")
    writer = _Writer(test, tokens, callees)
    try:
        writer.run()
    except ScanError as exc:
        return Rewrite(test, whole_reason=f"the test text could not be split ({exc})")
    if not writer.sites:
        return Rewrite(test, whole_reason="no check in the test was recognised")
    return Rewrite(apply_edits(test, writer.edits), sites=writer.sites)


class _Writer:
    def __init__(self, text: str, tokens: list[Token], callees: tuple[str, ...]) -> None:
        self.text = text
        self.tokens = tokens
        self.callees = callees
        self.edits: list[tuple[int, int, str]] = []
        self.sites: list[Site] = []

    def run(self) -> None:
        tokens = self.tokens
        i = 0
        while i < len(tokens):
            end = self._boolean_list(i)
            if end is None:
                end = self._if_throw(i)
            if end is None:
                end = self._assert(i)
            i = end if end is not None else i + 1

    # -- patterns -----------------------------------------------------------------------
    def _boolean_list(self, i: int) -> int | None:
        """`List<Boolean> x = Arrays.asList(...); if (x.contains(false)) throw ...;`"""
        t = self.tokens
        shape = ["List", "<", "Boolean", ">", None, "=", "Arrays", ".", "asList", "("]
        if not self._matches(i, shape):
            return None
        name = t[i + 4].text
        close = c_family.matching(t, i + 9)
        if close + 1 >= len(t) or t[close + 1].text != ";":
            return None
        check = close + 2
        if not self._matches(check, ["if", "(", name, ".", "contains", "(", "false", ")", ")"]):
            return None  # the list is never checked: leave it alone, as it is
        end = self._throw_body(check + 9)
        if end is None:
            return None
        blocks = []
        for element in c_family.split_arguments(t[i + 10: close]):
            blocks.append(self._check(element, negate=False, kind="list"))
        start, stop = t[i].start, t[end - 1].end
        self.edits.append((start, stop, " ".join(blocks) + self._newlines(start, stop)))
        return end

    def _if_throw(self, i: int) -> int | None:
        t = self.tokens
        if t[i].text != "if" or i + 1 >= len(t) or t[i + 1].text != "(":
            return None
        close = c_family.matching(t, i + 1)
        end = self._throw_body(close + 1)
        if end is None or (end < len(t) and t[end].text == "else"):
            return None
        condition = t[i + 2: close]
        if not condition:
            return None
        start, stop = t[i].start, t[end - 1].end
        block = self._check(condition, negate=True, kind="truth")
        self.edits.append((start, stop, block + self._newlines(start, stop)))
        return end

    def _assert(self, i: int) -> int | None:
        t = self.tokens
        if t[i].text != "assert" or t[i].kind != "ident":
            return None
        if i > 0 and t[i - 1].text not in (";", "{", "}", ")", "else", ":"):
            return None
        end = self._statement_end(i + 1)
        if end is None:
            return None
        expression = t[i + 1: end]
        top = c_family.top_level(expression)
        if any(expression[j].text == "?" for j in top):
            return None  # `assert a ? b : c : msg;` is left to Java itself
        colon = next((j for j in top if expression[j].text == ":"), None)
        if colon is not None:
            expression = expression[:colon]
        if not expression:
            return None
        start, stop = t[i].start, t[end].end
        block = self._check(expression, negate=False, kind="truth")
        self.edits.append((start, stop, block + self._newlines(start, stop)))
        return end + 1

    def _statement_end(self, j: int) -> int | None:
        """Index of the `;` ending the statement that goes on at `j`."""
        depth = 0
        for end in range(j, len(self.tokens)):
            text = self.tokens[end].text
            if text in c_family.OPEN:
                depth += 1
            elif text in c_family.CLOSE:
                depth -= 1
            elif text == ";" and depth == 0:
                return end
        return None

    def _throw_body(self, j: int) -> int | None:
        """End (exclusive) of `throw new AssertionError(...);`, braced or not, at `j`."""
        t = self.tokens
        braced = j < len(t) and t[j].text == "{"
        k = j + 1 if braced else j
        if not self._matches(k, ["throw", "new", "AssertionError", "("]):
            return None
        close = c_family.matching(t, k + 3)
        if close + 1 >= len(t) or t[close + 1].text != ";":
            return None
        end = close + 2
        if braced:
            if end >= len(t) or t[end].text != "}":
                return None
            end += 1
        return end

    def _matches(self, i: int, shape: list[str | None]) -> bool:
        if i + len(shape) > len(self.tokens):
            return False
        return all(want is None or self.tokens[i + k].text == want
                   for k, want in enumerate(shape))

    def _newlines(self, start: int, stop: int) -> str:
        return "\n" * self.text.count("\n", start, stop)

    # -- one check ----------------------------------------------------------------------
    def _check(self, condition: list[Token], *, negate: bool, kind: str) -> str:
        site = len(self.sites)
        line = self.text.count("\n", 0, condition[0].start) + 1
        source = c_family.one_line(c_family.span(self.text, condition))
        if negate:
            source = f"!({source})"
        body, split = self._body(condition, negate=negate)
        self.sites.append(Site(source=source, line=line, kind="eq" if split else kind))
        return ("{ evaluator_harness.Site evaluator_site_ = evaluator_harness.Site.open("
                f"{site}); try {{ {body} }} catch (Throwable evaluator_error_) "
                "{ evaluator_site_.raised(evaluator_error_); } }")

    def _body(self, condition: list[Token], *, negate: bool) -> tuple[str, bool]:
        tokens = _unwrap(condition)
        if negate:
            if tokens and tokens[0].text == "!" and _is_postfix(tokens[1:]):
                tokens, negate = _unwrap(tokens[1:]), False
            else:
                top = c_family.top_level(tokens)
                unequal = [j for j in top if tokens[j].text == "!="]
                if len(unequal) == 1 and not any(
                        tokens[j].text in _LOW_PRECEDENCE - {"!="} or tokens[j].text == "=="
                        for j in top):
                    left, right = tokens[: unequal[0]], tokens[unequal[0] + 1:]
                    return self._compare(left, right, "=="), True
        if not negate:
            split = self._split(tokens)
            if split is not None:
                return split, True
        text = self._tapped(tokens)
        return f"evaluator_site_.truth({'!(' + text + ')' if negate else text});", False

    def _split(self, tokens: list[Token]) -> str | None:
        top = c_family.top_level(tokens)
        # Objects.equals(a, b)
        if len(tokens) >= 4 and [t.text for t in tokens[:3]] == ["Objects", ".", "equals"] \
                and tokens[3].text == "(" and c_family.matching(tokens, 3) == len(tokens) - 1:
            arguments = c_family.split_arguments(tokens[4:-1])
            if len(arguments) == 2 and all(arguments):
                return self._compare(arguments[0], arguments[1], "Objects.equals")
        # a.equals(b), where `a` is a primary expression
        if tokens and tokens[-1].text == ")":
            opening = _opening(tokens)
            if opening is not None and opening >= 3 and tokens[opening - 1].text == "equals" \
                    and tokens[opening - 2].text == "." and opening - 2 in top:
                left, right = tokens[: opening - 2], tokens[opening + 1: -1]
                if _is_postfix(left) and len(c_family.split_arguments(right)) == 1:
                    return self._compare(left, right, ".equals")
        # a == b
        equals = [j for j in top if tokens[j].text == "=="]
        if len(equals) == 1 and not any(tokens[j].text in _LOW_PRECEDENCE for j in top):
            left, right = tokens[: equals[0]], tokens[equals[0] + 1:]
            if left and right:
                return self._compare(left, right, "==")
        return None

    def _compare(self, left: list[Token], right: list[Token], how: str) -> str:
        if any(len(side) == 1 and side[0].text == "null" for side in (left, right)):
            # `var x = (null)` does not compile: fall back to a truth check.
            joined = {"==": " == ", ".equals": ".equals(", "Objects.equals": ", "}[how]
            text = c_family.span(self.text, left) + joined + c_family.span(self.text, right)
            if how == ".equals":
                text += ")"
            elif how == "Objects.equals":
                text = f"java.util.Objects.equals({text})"
            return f"evaluator_site_.truth({text});"
        a = c_family.span(self.text, left)
        b = c_family.span(self.text, right)
        test = {"==": "evaluator_left_ == evaluator_right_",
                ".equals": "evaluator_left_.equals(evaluator_right_)",
                "Objects.equals": "java.util.Objects.equals(evaluator_left_, evaluator_right_)"}
        # The side that calls the function under test is the actual value.
        actual, expected = "evaluator_left_", "evaluator_right_"
        if self._calls(right) and not self._calls(left):
            actual, expected = expected, actual
        return (f"var evaluator_left_ = ({a}); var evaluator_right_ = ({b}); "
                f"evaluator_site_.compare({test[how]}, {actual}, {expected});")

    def _calls(self, tokens: list[Token]) -> bool:
        return any(self._is_call(tokens, j) for j in range(len(tokens)))

    def _is_call(self, tokens: list[Token], j: int) -> bool:
        return (tokens[j].kind == "ident" and tokens[j].text in self.callees
                and j + 1 < len(tokens) and tokens[j + 1].text == "(")

    def _tapped(self, tokens: list[Token]) -> str:
        for j in range(len(tokens)):
            if not self._is_call(tokens, j):
                continue
            close = c_family.matching(tokens, j + 1)
            start = j
            # Include a simple receiver: `s.method(...)`.
            if j >= 2 and tokens[j - 1].text == "." and tokens[j - 2].kind == "ident":
                start = j - 2
            text = self.text
            return (text[tokens[0].start: tokens[start].start]
                    + "evaluator_site_.tap(" + text[tokens[start].start: tokens[close].end]
                    + ")" + text[tokens[close].end: tokens[-1].end])
        return c_family.span(self.text, tokens)


def _unwrap(tokens: list[Token]) -> list[Token]:
    """`(x)` -> `x`, when the parentheses enclose the whole expression."""
    while len(tokens) >= 2 and tokens[0].text == "(" \
            and c_family.matching(tokens, 0) == len(tokens) - 1:
        tokens = tokens[1:-1]
    return tokens


def _opening(tokens: list[Token]) -> int | None:
    """Index of the `(` matching the final `)`."""
    depth = 0
    for j in range(len(tokens) - 1, -1, -1):
        text = tokens[j].text
        if text in c_family.CLOSE:
            depth += 1
        elif text in c_family.OPEN:
            depth -= 1
            if depth == 0:
                return j
    return None


def _is_postfix(tokens: list[Token]) -> bool:
    """True for a primary expression with member accesses and calls, and nothing else
    at its top level (no operator that `.equals` or `!` would bind tighter than)."""
    if not tokens:
        return False
    for j in c_family.top_level(tokens):
        token = tokens[j]
        if token.kind == "punct" and token.text not in (".", "(", "[", "{", "::"):
            return False
        if token.kind == "ident" and token.text in ("new", "instanceof"):
            return False
    return True
