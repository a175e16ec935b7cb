"""Three HumanEval-X problems (/0, /13, /30) in each of the six languages, with one
completion each in that language: small datasets and generation files for the tests of
the language check (`evaluator.language_check`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from evaluator import language_check
from evaluator.languages.registry import get_language, language_names
from evaluator.languages.toolchains import ToolchainError

_PREFIX = {"python": "Python", "cpp": "CPP", "java": "Java", "js": "JavaScript", "go": "Go",
           "rust": "Rust"}

# (number, declaration, completion, test) per language; prompt = docstring + declaration.
_PROBLEMS: dict[str, list[tuple[int, str, str, str]]] = {
    "python": [
        (0, "from typing import List\n\n\ndef has_close_elements(numbers: List[float], "
            "threshold: float) -> bool:\n    \"\"\" Any two numbers closer than threshold?\"\"\"\n",
         "    for idx, elem in enumerate(numbers):\n"
         "        for idx2, elem2 in enumerate(numbers):\n"
         "            if idx != idx2 and abs(elem - elem2) < threshold:\n"
         "                return True\n    return False\n",
         "\ndef check(has_close_elements):\n    assert has_close_elements([1.0, 1.1], 0.3)\n"
         "\ncheck(has_close_elements)\n"),
        (13, "\n\ndef greatest_common_divisor(a: int, b: int) -> int:\n    \"\"\" GCD \"\"\"\n",
         "    while b:\n        a, b = b, a % b\n    return a\n",
         "\ndef check(greatest_common_divisor):\n    assert greatest_common_divisor(3, 5) == 1\n"
         "\ncheck(greatest_common_divisor)\n"),
        (30, "\n\ndef get_positive(l: list):\n    \"\"\"Only the positive numbers.\"\"\"\n",
         "    return [e for e in l if e > 0]\n",
         "\ndef check(get_positive):\n    assert get_positive([-1, 2]) == [2]\n"
         "\ncheck(get_positive)\n"),
    ],
    "cpp": [
        (0, "#include<stdio.h>\n#include<vector>\n#include<math.h>\nusing namespace std;\n"
            "bool has_close_elements(vector<float> numbers, float threshold){\n",
         "    for (auto &a : numbers)\n        for (auto &b : numbers)\n"
         "            if (&a != &b && std::abs(a - b) < threshold) return true;\n"
         "    return false;\n}\n",
         "#undef NDEBUG\n#include<assert.h>\nint main(){\n"
         "    assert (has_close_elements({1.0, 1.1}, 0.3)==true);\n}\n"),
        (13, "#include<stdio.h>\nusing namespace std;\n"
             "int greatest_common_divisor(int a, int b){\n",
         "    int out,m;\n    while (true){\n        if (a<b) {m=a;a=b;b=m;}\n"
         "        a=a%b;\n        if (a==0) return b;\n    }\n}\n",
         "#undef NDEBUG\n#include<assert.h>\nint main(){\n"
         "    assert (greatest_common_divisor(3, 7) == 1);\n}\n"),
        (30, "#include<stdio.h>\n#include<vector>\nusing namespace std;\n"
             "vector<float> get_positive(vector<float> l){\n",
         "    std::vector<float> out;\n    for (int i=0;i<l.size();i++)\n"
         "        if (l[i]>0) out.push_back(l[i]);\n    return out;\n}\n",
         "#undef NDEBUG\n#include<assert.h>\nint main(){\n"
         "    assert (get_positive({-1, 2}).size() == 1);\n}\n"),
    ],
    "java": [
        (0, "import java.util.*;\nimport java.lang.*;\n\nclass Solution {\n"
            "    public boolean hasCloseElements(List<Double> numbers, double threshold) {\n",
         "        for (int i = 0; i < numbers.size(); i++) {\n"
         "            for (int j = i + 1; j < numbers.size(); j++) {\n"
         "                double distance = Math.abs(numbers.get(i) - numbers.get(j));\n"
         "                if (distance < threshold) return true;\n            }\n        }\n"
         "        return false;\n    }\n}\n",
         "public class Main {\n    public static void main(String[] args) {\n"
         "        Solution s = new Solution();\n"
         "        if (!s.hasCloseElements(new ArrayList<>(Arrays.asList(1.0, 1.1)), 0.3)) {\n"
         "            throw new AssertionError();\n        }\n    }\n}\n"),
        (13, "import java.util.*;\nimport java.lang.*;\n\nclass Solution {\n"
             "    public int greatestCommonDivisor(int a, int b) {\n",
         "        if (a == 0 || b == 0) {\n            return a + b;\n        }\n"
         "        if (a == b) {\n            return a;\n        }\n"
         "        if (a > b) {\n            return greatestCommonDivisor(a % b, b);\n"
         "        } else {\n            return greatestCommonDivisor(a, b % a);\n        }\n"
         "    }\n}\n",
         "public class Main {\n    public static void main(String[] args) {\n"
         "        Solution s = new Solution();\n"
         "        if (s.greatestCommonDivisor(3, 7) != 1) {\n"
         "            throw new AssertionError();\n        }\n    }\n}\n"),
        (30, "import java.util.*;\nimport java.lang.*;\nimport java.util.stream.*;\n\n"
             "class Solution {\n    public List<Integer> getPositive(List<Integer> l) {\n",
         "        return l.stream().filter(p -> p > 0).collect(Collectors.toList());\n"
         "    }\n}\n",
         "public class Main {\n    public static void main(String[] args) {\n"
         "        Solution s = new Solution();\n"
         "        List<Integer> got = s.getPositive(new ArrayList<>(Arrays.asList(-1, 2)));\n"
         "        if (!got.equals(Arrays.asList(2))) {\n"
         "            throw new AssertionError();\n        }\n    }\n}\n"),
    ],
    "js": [
        (0, "/* Any two numbers closer than threshold? */\n"
            "const hasCloseElements = (numbers, threshold) => {\n",
         "  for (let i = 0; i < numbers.length; i++) {\n"
         "    for (let j = 0; j < numbers.length; j++) {\n"
         "      if (i !== j) {\n        let distance = Math.abs(numbers[i] - numbers[j]);\n"
         "        if (distance < threshold) {\n          return true;\n        }\n      }\n"
         "    }\n  }\n  return false;\n}\n",
         "const testHasCloseElements = () => {\n"
         "  console.assert(hasCloseElements([1.0, 1.1], 0.3) === true)\n}\n"
         "testHasCloseElements()\n"),
        (13, "/* GCD */\nconst greatestCommonDivisor = (a, b) => {\n",
         "  while (b !== 0) {\n    let temp = a;\n    a = b;\n    b = temp % b;\n  }\n"
         "  return a;\n}\n",
         "const testGreatestCommonDivisor = () => {\n"
         "  console.assert(greatestCommonDivisor(3, 7) === 1)\n}\n"
         "testGreatestCommonDivisor()\n"),
        (30, "/* Only the positive numbers. */\nconst getPositive = (l) => {\n",
         "  return l.filter(e => e > 0);\n}\n",
         "const testGetPositive = () => {\n"
         "  console.assert(JSON.stringify(getPositive([-1, 2])) === JSON.stringify([2]))\n}\n"
         "testGetPositive()\n"),
    ],
    "go": [
        (0, "import (\n    \"math\"\n)\n\n// Any two numbers closer than threshold?\n"
            "func HasCloseElements(numbers []float64, threshold float64) bool {\n",
         "    for i := 0; i < len(numbers); i++ {\n"
         "        for j := i + 1; j < len(numbers); j++ {\n"
         "            var distance float64 = math.Abs(numbers[i] - numbers[j])\n"
         "            if distance < threshold {\n                return true\n            }\n"
         "        }\n    }\n    return false\n}\n",
         "func TestHasCloseElements(t *testing.T) {\n    assert := assert.New(t)\n"
         "    assert.Equal(true, HasCloseElements([]float64{1.0, 1.1}, 0.3))\n}\n"),
        (13, "\n// GCD\nfunc GreatestCommonDivisor(a int,b int) int{\n",
         "    if b < 2 {\n        return b\n    }\n    var gcd int = 1\n"
         "    for i := 2; i < b; i++ {\n        if a%i == 0 && b%i == 0 {\n"
         "            gcd = i\n        }\n    }\n    return gcd\n}\n",
         "func TestGreatestCommonDivisor(t *testing.T) {\n    assert := assert.New(t)\n"
         "    assert.Equal(1, GreatestCommonDivisor(3, 7))\n}\n"),
        (30, "\n// Only the positive numbers.\nfunc GetPositive(l []int) []int {\n",
         "    res := make([]int, 0)\n    for _, x := range l {\n        if x > 0 {\n"
         "            res = append(res, x)\n        }\n    }\n    return res\n}\n",
         "func TestGetPositive(t *testing.T) {\n    assert := assert.New(t)\n"
         "    assert.Equal([]int{2}, GetPositive([]int{-1, 2}))\n}\n"),
    ],
    "rust": [
        (0, "\nfn has_close_elements(numbers:Vec<f32>, threshold: f32) -> bool{\n",
         "    for i in 0..numbers.len(){\n        for j in 1..numbers.len(){\n"
         "            if i != j {\n                let distance:f32 = numbers[i] - numbers[j];\n"
         "                if distance.abs() < threshold{\n                    return true;\n"
         "                }\n            }\n        }\n    }\n    return false;\n}\n",
         "\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n"
         "    fn test_has_close_elements() {\n"
         "        assert_eq!(has_close_elements(vec![1.0, 1.1], 0.3), true);\n    }\n}\n"),
        (13, "\nfn greatest_common_divisor(mut a:i32,mut b:i32) -> i32{\n",
         "    while b > 0 {\n        (a, b) = (b, a % b);\n    }\n    return a;\n}\n",
         "\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n"
         "    fn test_gcd() {\n        assert_eq!(greatest_common_divisor(3, 7), 1);\n    }\n}\n"),
        (30, "\nfn get_positive(numbers:Vec<i32>) -> Vec<i32>{\n",
         "    return numbers.into_iter().filter(|n| n.is_positive()).collect();\n}\n",
         "\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n"
         "    fn test_get_positive() {\n"
         "        assert_eq!(get_positive(vec![-1, 2]), vec![2]);\n    }\n}\n"),
    ],
}


def dataset_records(language: str) -> list[dict[str, Any]]:
    """The records of `humaneval_<language>.jsonl`, HumanEval-X's layout."""
    records = []
    for number, declaration, completion, test in _PROBLEMS[language]:
        record: dict[str, Any] = {
            "task_id": f"{_PREFIX[language]}/{number}",
            # Rust's prompt is only the docstring; the harness puts the declaration first.
            "prompt": "\n/* doc */\n" if language == "rust" else declaration,
            "declaration": declaration,
            "canonical_solution": completion,
            "test": test,
            "example_test": "",
        }
        if language == "go":
            record["test_setup"] = ('package main\n\nimport (\n    "math"\n    "testing"\n'
                                    '    "github.com/stretchr/testify/assert"\n)\n')
        records.append(record)
    return records


def write_dataset(folder: Path, language: str) -> Path:
    path = folder / f"humaneval_{language}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in dataset_records(language)))
    return path


def generations(language: str, *, copies: int = 2) -> list[dict[str, Any]]:
    """Completions in `language`, under the language-neutral ids `HumanEval/N`."""
    return [
        {"task_id": f"HumanEval/{number}", "completion": completion}
        for number, _declaration, completion, _test in _PROBLEMS[language]
        for _ in range(copies)
    ]


LANGUAGES = tuple(name for name in language_names() if name in _PROBLEMS)
"""The languages of the registry this module has problems for, in the registry's order."""


def require_parser(language: str) -> None:
    """Skip (in CI: fail) the calling test unless `language`'s parser is installed (a
    front end that is a program; Python's is in process)."""
    parser = language_check.front_end(language)
    runner = get_language(language)
    if parser is None or runner.toolchain is None:
        return
    try:
        runner.toolchain.beside(parser)
    except ToolchainError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the {language} parser must be installed in CI: {exc}")
        pytest.skip(f"no {language} parser here: {exc}")
