"""bench/plus_drop.py's mutator: one change per mutant, comparisons moved by one but not
generics' brackets, arrows, shifts, comments or strings; constants moved by one; branches
that only return dropped; and the same mutants every time."""

from __future__ import annotations

import pytest

from bench.plus_drop import (
    LanguageDrop,
    boundary_sites,
    constant_sites,
    guard_sites,
    mutants,
    pass_at_1,
)

CPP = """    vector<int> out={};
    map<char,int> seen;
    if (n<2) return out;
    for (int i=0;i<=n;i++)
        if (out.size()>3 && (x<<1)>0) out.push_back(i); // i<n here
    return out;
}
"""
RUST = """    let v: Vec<i32> = xs.iter().map(|x| x * 2).collect();
    if v.len() >= 3 {
        return v;
    }
    let s = "a<b";
    v
}
"""
JS = """  const f = (x) => x > 0;
  return xs.filter(f).length < 10;
}
"""


def _applied(code: str, site: tuple[int, int, str]) -> str:
    start, end, replacement = site
    return code[:start] + replacement + code[end:]


def test_comparisons_are_moved_by_one_and_brackets_left_alone() -> None:
    flipped = [_applied(CPP, site) for site in boundary_sites(CPP, "cpp")]
    assert [line for code in flipped for line in code.splitlines()
            if line not in CPP.splitlines()] == [
        "    if (n<=2) return out;",
        "    for (int i=0;i<n;i++)",
        "        if (out.size()>=3 && (x<<1)>0) out.push_back(i); // i<n here",
        "        if (out.size()>3 && (x<<1)>=0) out.push_back(i); // i<n here",
    ]
    assert [_applied(RUST, s).split("\n")[1] for s in boundary_sites(RUST, "rust")] == [
        "    if v.len() > 3 {"]
    assert [s[2] for s in boundary_sites(JS, "js")] == [">=", "<="]


def test_constants_are_moved_by_one() -> None:
    assert [_applied(CPP, site).split("\n")[2] for site in constant_sites(CPP, "cpp")][:1] == [
        "    if (n<3) return out;"]
    assert [site[2] for site in constant_sites(JS, "js")] == ["1", "11"]


def test_branches_that_only_return_are_dropped_whole() -> None:
    (one_line,) = guard_sites(CPP, "cpp")
    assert "if (n<2)" not in _applied(CPP, one_line)
    (block,) = guard_sites(RUST, "rust")
    dropped = _applied(RUST, block)
    assert "len() >= 3" not in dropped
    assert "return v" not in dropped
    assert dropped.count("}") == RUST.count("}") - 1


def test_mutants_are_distinct_single_changes_and_deterministic() -> None:
    made = mutants(CPP, "cpp", per_operator=2)
    assert [m.operator for m in made] == ["boundary", "boundary", "constant", "constant",
                                          "drop_guard"]
    assert len({m.code for m in made}) == len(made)
    assert all(m.code != CPP for m in made)
    assert mutants(CPP, "cpp", per_operator=2) == made
    assert mutants("    return 0;\n}\n", "cpp", per_operator=0) == []


@pytest.mark.parametrize(("verdicts", "expected"), [
    ({"a": [True, False], "b": [False]}, 0.25),
    ({"a": [True]}, 1.0),
    ({}, 0.0),
])
def test_pass_at_1_is_the_mean_share_per_problem(verdicts, expected) -> None:
    assert pass_at_1(verdicts) == pytest.approx(expected)


def test_shares_are_of_the_mutants_that_compile() -> None:
    drop = LanguageDrop(language="go", problems=1, compiled=4, killed_base=1, killed_plus=3)
    assert (drop.share(drop.killed_base), drop.share(drop.killed_plus)) == (0.25, 0.75)
    assert LanguageDrop(language="go", problems=0).share(0) == 0.0
