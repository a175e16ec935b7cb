"""The defect registry: known defects of the benchmark data, kept as versioned data.

`registry.json` lists each defect with the task it affects, what is wrong, the evidence
(what was run or read, and where), its effect on verdicts, and optionally a patch. No
code here knows any task: everything task-specific is in the data.

    defects_for(problem)   -> the defects recorded for that problem (and its dataset)
    apply_patches(problem) -> a patched copy, the patches named in `extra["patches"]`
    explains(problem, test_set, task) -> the defects that explain a failing canonical
                                         solution
    explains_input(problem, arguments, cause, fixed) -> those that explain one failing
                                                        HumanEval+ input
    nondeterministic_tests(problem, test_set) -> those that say the test's own inputs vary
                                                 from run to run

A problem built by `evaluator.plus` (it carries `extra["plus"]`) has HumanEval+'s inputs
as its tests: its test set is `plus`, whatever a run calls it, and the patches of the
base tests (`test`, `example_test`) are not for it.

Verdicts are reported on the original data unless a run asks for patches
(`RunOptions.patched`).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evaluator.records import Problem

REGISTRY_PATH = Path(__file__).resolve().parent / "registry.json"

TEXT_FIELDS = ("prompt", "declaration", "canonical_solution", "test", "example_test")
PATCHABLE_FIELDS = (*TEXT_FIELDS, "entry_point")
KINDS = frozenset({
    "wrong_canonical", "flaky_canonical", "wrong_test", "vacuous_test", "tests_disabled",
    "missing_example_test", "misspelled_name", "helper_in_solution", "needs_dependency",
    "float_equality", "prompt_contradiction", "missing_tasks", "harness_behaviour",
    "not_a_defect", "cosmetic", "broken_declaration", "different_interface",
    "nondeterministic_test",
})
INTERFACE_KIND = "different_interface"
"""The variant asks for another output than HumanEval's (another format, rounding or
type): HumanEval+'s expected values do not hold for it, and `evaluator.plus` leaves the
inputs out (all of the problem's, or those listed in `inputs`)."""
NONDETERMINISTIC_KIND = "nondeterministic_test"
"""The shipped test draws its inputs from an unseeded random source, so a solution that is
wrong on some of them passes or fails by chance, under the reference harness as under ours.
The canonical solution's verdict may be stable (it is right on every draw): `flaky` is for
that. A `patch` seeds the test, and applies, as every patch does, only when a run asks.
Its `detect` names the random draw in the test field it lies in (required)."""
TEST_SETS = ("hidden", "example", "plus")
"""`plus` is HumanEval+'s inputs as `evaluator.plus` translated them (plus-mini, plus-full)."""
TEST_FIELDS = frozenset({"test", "example_test"})
FIELD_TEST_SETS = {"test": "hidden", "example_test": "example"}
TASKS = ("generation", "translation")
RULE_CAUSES = frozenset({
    "integral_float", "float32_input", "negative_operand", "overflow", "float_precision",
    "non_ascii_semantics", "timeout", "not_a_root",
})
"""The causes a `rule` may name: those of `evaluator.plus.validate.classify` that describe
a class of inputs. Its catch-alls (`unexplained`, `program_failed`) and the causes of other
checks (`variant_interface`, `broken_oracle`, `humaneval_canonical`) describe none."""


NO_VERDICT_KINDS = frozenset({"not_a_defect", "cosmetic"})
"""Kinds that change no verdict: a suspicion found not to be a defect, a blemish of text."""
KIND_TEST_SETS: dict[str, tuple[str, ...]] = {"missing_example_test": ("example",)}
"""Kinds that lie in one test set whatever the entry says."""
SHIPPED_TEST_KINDS = frozenset({"wrong_test", "vacuous_test", "tests_disabled",
                                "float_equality", NONDETERMINISTIC_KIND})
"""Kinds that lie in the tests the dataset ships: a plus problem's tests are built anew
from HumanEval+'s inputs, so they are not in them unless the entry says the plus tests
fail too."""


class DefectError(ValueError):
    """The registry is malformed, or a patch does not apply to the data it names."""


@dataclass(frozen=True)
class Edit:
    """One change a patch makes.

    Either `field` + `old` + `new` (the exact text `old`, which must occur exactly once
    in `field`, becomes `new`), or `rename` + `new` (the identifier `rename` becomes
    `new` in every text field and in the entry point).
    """

    new: str
    field: str = ""
    old: str = ""
    rename: str = ""


@dataclass(frozen=True)
class Patch:
    description: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Rule:
    """The failing plus inputs a defect explains as a class, in any set (the full set's
    after the Mini set's were listed): those the validation puts down to one of `causes`
    (`RULE_CAUSES`), and with `fixed_by_patch` those that the problem's solution passes
    once the registry's patches (this entry's among them) are applied, whatever cause the
    validation read off their values."""

    causes: tuple[str, ...] = ()
    fixed_by_patch: bool = False

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.causes:
            data["causes"] = list(self.causes)
        if self.fixed_by_patch:
            data["fixed_by_patch"] = True
        return data


@dataclass(frozen=True)
class Detect:
    """Text whose presence in a field shows that the defect is in this copy of the data."""

    field: str
    contains: str


@dataclass(frozen=True)
class Defect:
    id: str
    dataset: str
    language: str
    task_id: str
    """`HumanEval/N`, or `*` for a defect of the whole dataset."""
    source_id: str
    kind: str
    defect: str
    evidence: str
    effect: str
    canonical_fails: tuple[str, ...] = ()
    """Test sets (hidden, example) on which the shipped canonical solution fails."""
    tasks: tuple[str, ...] = TASKS
    """The HumanEval-X tasks (generation, translation) on which `canonical_fails` holds."""
    flaky: bool = False
    """The canonical solution's verdict varies from run to run."""
    inputs: tuple[str, ...] = ()
    """For a defect found by the plus tests: the failing HumanEval+ inputs, each the
    `repr` of its argument list; none listed means any input of the problem may fail."""
    rule: Rule | None = None
    """For a defect found by the plus tests that is a class of inputs rather than a few:
    the failing inputs it explains besides those listed in `inputs`."""
    detect: Detect | None = None
    patch: Patch | None = None

    def explains_plus_input(self, arguments: str, cause: str = "",
                            fixed: bool = False) -> bool:
        """Whether this defect explains a failing plus input (`arguments`: the `repr` of
        its argument list; `cause`: the validation's cause for it; `fixed`: whether the
        registry's patches make the problem's solution pass it): one it lists, one its
        rule takes in, or any at all when it names none either way."""
        if not self.inputs and self.rule is None:
            return True
        if arguments in self.inputs:
            return True
        if self.rule is None:
            return False
        return (bool(cause) and cause in self.rule.causes) \
            or (fixed and self.rule.fixed_by_patch)

    def concerns(self, *, tests: str, task: str) -> bool:
        """Whether this defect can change a verdict of a run on `tests` (hidden, example)
        for `task` (generation, translation): a missing example test says nothing of a
        hidden-test run; a declaration broken only for translation, nothing of a
        generation run; a cosmetic entry, nothing of any run."""
        if self.kind in NO_VERDICT_KINDS or task not in self.tasks:
            return False
        return tests in self.test_sets

    @property
    def test_sets(self) -> tuple[str, ...]:
        """The test sets this defect lies in: its kind's, else for a random test the one
        whose field its `detect` names, else `plus` alone for one only the plus tests show
        (a base verdict does not change), else, for a wrong test, the sets on which it
        fails the canonical solution, else, for a defect of the shipped tests, those (not
        `plus`), else all."""
        if self.kind in KIND_TEST_SETS:
            return KIND_TEST_SETS[self.kind]
        if self.kind == NONDETERMINISTIC_KIND and self.detect is not None:
            return (FIELD_TEST_SETS[self.detect.field],)
        if self.canonical_fails == ("plus",) or self.kind == INTERFACE_KIND:
            return ("plus",)
        if self.kind == "wrong_test" and self.canonical_fails:
            return self.canonical_fails
        if self.kind in SHIPPED_TEST_KINDS and "plus" not in self.canonical_fails:
            return tuple(name for name in TEST_SETS if name != "plus")
        return TEST_SETS

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id, "dataset": self.dataset, "language": self.language,
            "task_id": self.task_id, "source_id": self.source_id, "kind": self.kind,
            "defect": self.defect, "evidence": self.evidence, "effect": self.effect,
            "canonical_fails": list(self.canonical_fails), "tasks": list(self.tasks),
            "flaky": self.flaky,
        }
        if self.inputs:
            data["inputs"] = list(self.inputs)
        if self.rule:
            data["rule"] = self.rule.to_dict()
        if self.detect:
            data["detect"] = {"field": self.detect.field, "contains": self.detect.contains}
        if self.patch:
            data["patch"] = {"description": self.patch.description,
                             "edits": [_edit_dict(e) for e in self.patch.edits]}
        return data


@dataclass(frozen=True)
class Registry:
    version: str
    defects: tuple[Defect, ...]

    def for_problem(self, problem: Problem) -> list[Defect]:
        return [d for d in self.defects
                if d.dataset == problem.dataset and d.language == problem.language
                and d.task_id in (problem.task_id, "*")]


def _edit_dict(edit: Edit) -> dict[str, str]:
    if edit.rename:
        return {"rename": edit.rename, "new": edit.new}
    return {"field": edit.field, "old": edit.old, "new": edit.new}


@functools.lru_cache(maxsize=4)
def load_registry(path: Path = REGISTRY_PATH) -> Registry:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DefectError(f"{path}: cannot read the defect registry: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("version"), str):
        raise DefectError(f"{path}: the registry needs a string 'version'")
    defects = tuple(_defect(entry, f"{path}: defect {n}")
                    for n, entry in enumerate(data.get("defects", [])))
    seen: set[str] = set()
    for defect in defects:
        if defect.id in seen:
            raise DefectError(f"{path}: duplicate defect id {defect.id!r}")
        seen.add(defect.id)
    return Registry(version=data["version"], defects=defects)


def _defect(entry: Any, where: str) -> Defect:
    if not isinstance(entry, dict):
        raise DefectError(f"{where}: not an object")
    required = ("id", "dataset", "language", "task_id", "kind", "defect", "evidence",
                "effect")
    missing = [key for key in required if not isinstance(entry.get(key), str)
               or not entry[key]]
    if missing:
        raise DefectError(f"{where}: missing or empty {', '.join(missing)}")
    if entry["kind"] not in KINDS:
        raise DefectError(f"{where}: unknown kind {entry['kind']!r}")
    if entry["task_id"] != "*" and not re.fullmatch(r"HumanEval/\d+", entry["task_id"]):
        raise DefectError(f"{where}: task_id must be HumanEval/N or *")
    fails = tuple(entry.get("canonical_fails", ()))
    if any(test_set not in TEST_SETS for test_set in fails):
        raise DefectError(f"{where}: canonical_fails takes {TEST_SETS}")
    inputs = entry.get("inputs", [])
    if not isinstance(inputs, list) or not all(isinstance(i, str) and i for i in inputs):
        raise DefectError(f"{where}: inputs takes a list of argument lists' reprs")
    if inputs and "plus" not in fails and entry["kind"] != INTERFACE_KIND:
        raise DefectError(f"{where}: inputs are for a defect the plus tests find")
    rule = _rule(entry.get("rule"), where)
    if rule and rule.fixed_by_patch and not entry.get("patch"):
        raise DefectError(f"{where}: a rule fixed_by_patch needs the entry's patch")
    if rule and "plus" not in fails:
        raise DefectError(f"{where}: a rule is for a defect the plus tests find")
    if rule and not inputs and entry["kind"] == INTERFACE_KIND:
        # The builder leaves out an interface entry's inputs before any cause is known:
        # by its list, or all of them when it lists none.
        raise DefectError(f"{where}: a {INTERFACE_KIND} entry with a rule lists the "
                          "inputs the builder leaves out")
    tasks = tuple(entry.get("tasks", TASKS))
    if not tasks or any(task not in TASKS for task in tasks):
        raise DefectError(f"{where}: tasks takes {TASKS}")
    detect = None
    if entry.get("detect"):
        raw = entry["detect"]
        if raw.get("field") not in TEXT_FIELDS or not raw.get("contains"):
            raise DefectError(f"{where}: detect needs a text field and 'contains'")
        detect = Detect(field=raw["field"], contains=raw["contains"])
    if entry["kind"] == NONDETERMINISTIC_KIND and (detect is None
                                                   or detect.field not in TEST_FIELDS):
        raise DefectError(f"{where}: a {NONDETERMINISTIC_KIND} entry needs a detect of the "
                          "random draw in test or example_test")
    patch = None
    if entry.get("patch"):
        raw = entry["patch"]
        edits = []
        for edit in raw.get("edits", []):
            if "rename" in edit:
                if not re.fullmatch(r"[A-Za-z_]\w*", edit["rename"]) or not edit.get("new"):
                    raise DefectError(f"{where}: a rename needs identifiers")
                edits.append(Edit(rename=edit["rename"], new=edit["new"]))
            else:
                if edit.get("field") not in PATCHABLE_FIELDS or not edit.get("old"):
                    raise DefectError(f"{where}: an edit needs a field and 'old' text")
                edits.append(Edit(field=edit["field"], old=edit["old"], new=edit["new"]))
        if not edits or not raw.get("description"):
            raise DefectError(f"{where}: a patch needs a description and edits")
        patch = Patch(description=raw["description"], edits=tuple(edits))
    return Defect(
        id=entry["id"], dataset=entry["dataset"], language=entry["language"],
        task_id=entry["task_id"], source_id=entry.get("source_id", ""), kind=entry["kind"],
        defect=entry["defect"], evidence=entry["evidence"], effect=entry["effect"],
        canonical_fails=fails, tasks=tasks, flaky=bool(entry.get("flaky", False)),
        inputs=tuple(inputs), rule=rule, detect=detect,
        patch=patch,
    )


def _rule(raw: Any, where: str) -> Rule | None:
    if raw is None:
        return None
    shape = (f"{where}: a rule is {{\"causes\": [...], \"fixed_by_patch\": true}} (either or "
             f"both), each cause one of {sorted(RULE_CAUSES)}")
    if not isinstance(raw, dict) or not raw or set(raw) - {"causes", "fixed_by_patch"}:
        raise DefectError(shape)
    causes = raw.get("causes", [])
    fixed = raw.get("fixed_by_patch", False)
    if not isinstance(causes, list) or ("causes" in raw and not causes) \
            or any(cause not in RULE_CAUSES for cause in causes) \
            or fixed not in (True, False) or ("fixed_by_patch" in raw and not fixed):
        raise DefectError(shape)
    return Rule(causes=tuple(causes), fixed_by_patch=fixed)


def parse_defect(entry: Any, where: str = "entry") -> Defect:
    """One registry entry, checked exactly as `load_registry` checks each of its entries."""
    return _defect(entry, where)


def registry_version() -> str:
    return load_registry().version


def defects_for(problem: Problem) -> list[Defect]:
    """Every registered defect of `problem`, including those of its whole dataset."""
    return load_registry().for_problem(problem)


def is_plus(problem: Problem) -> bool:
    """Whether `problem`'s tests are HumanEval+'s inputs (built by `evaluator.plus`)."""
    return "plus" in problem.extra


def explains(problem: Problem, test_set: str, task: str = "generation") -> list[Defect]:
    """The defects that say the canonical solution fails (or is flaky) on `test_set`
    (`plus` for a plus problem, whichever set a run names)."""
    test_set = "plus" if is_plus(problem) else test_set
    return [d for d in defects_for(problem)
            if test_set in d.canonical_fails and task in d.tasks]


def explains_input(problem: Problem, arguments: str, cause: str = "", fixed: bool = False,
                   task: str = "generation") -> list[Defect]:
    """The defects that explain the canonical solution failing the plus test of one
    HumanEval+ input (`arguments`: the `repr` of its argument list; `cause`: the one
    `evaluator.plus.validate.classify` gave it; `fixed`: whether the solution patched by
    the registry passes it; an entry's `rule` may take in either)."""
    return [d for d in defects_for(problem)
            if "plus" in d.canonical_fails and task in d.tasks
            and d.explains_plus_input(arguments, cause, fixed)]


def nondeterministic_tests(problem: Problem, test_set: str = "hidden",
                           task: str = "generation") -> list[Defect]:
    """The defects that say the tests `problem` is judged by on `test_set` draw their
    inputs at random: two runs of one wrong solution may get different verdicts."""
    return [d for d in defects_for(problem) if d.kind == NONDETERMINISTIC_KIND
            and d.concerns(tests="plus" if is_plus(problem) else test_set, task=task)]


def flaky_defects(problem: Problem) -> list[Defect]:
    """The defects that say any verdict on `problem` varies from run to run."""
    return [d for d in defects_for(problem) if d.flaky]


def apply_patches(problem: Problem) -> Problem:
    """A copy of `problem` with every registered patch applied.

    The ids of the applied patches go into `extra["patches"]`, and the registry version
    into `extra["defect_registry"]`. A patch that does not match the data raises
    DefectError: the data is not the copy the registry was written for.
    """
    plus = is_plus(problem)
    patches = [d for d in defects_for(problem) if d.patch is not None
               and any(_edits_this_copy(edit, plus) for edit in d.patch.edits)]
    if not patches:
        return problem
    fields: dict[str, str] = {name: getattr(problem, name) for name in PATCHABLE_FIELDS}
    for defect in patches:
        assert defect.patch is not None
        for edit in defect.patch.edits:
            if not _edits_this_copy(edit, plus):
                continue
            if edit.rename:
                pattern = re.compile(rf"\b{re.escape(edit.rename)}\b")
                if not any(pattern.search(fields[name]) for name in PATCHABLE_FIELDS):
                    raise DefectError(f"{defect.id}: {edit.rename!r} is not in "
                                      f"{problem.task_id}")
                for name in PATCHABLE_FIELDS:
                    fields[name] = pattern.sub(edit.new, fields[name])
                continue
            count = fields[edit.field].count(edit.old)
            if count != 1:
                raise DefectError(f"{defect.id}: the text to replace occurs {count} times "
                                  f"in {problem.task_id}'s {edit.field}, not once")
            fields[edit.field] = fields[edit.field].replace(edit.old, edit.new)
    extra = dict(problem.extra)
    extra["patches"] = [d.id for d in patches]
    extra["defect_registry"] = registry_version()
    return replace(problem, prompt=fields["prompt"], declaration=fields["declaration"],
                   canonical_solution=fields["canonical_solution"], test=fields["test"],
                   example_test=fields["example_test"], entry_point=fields["entry_point"],
                   extra=extra)


def _edits_this_copy(edit: Edit, plus: bool) -> bool:
    """Whether `edit` is for this copy of the problem: a plus problem's tests are built
    from HumanEval+, so an edit of the shipped tests has nothing to apply to there."""
    return edit.field not in TEST_FIELDS or not plus
