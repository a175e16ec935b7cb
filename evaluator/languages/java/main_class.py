"""Which file a Java program is written to, and which class runs it.

javac wants a public class in a file of its name; HumanEval-X's test is `public class
Main`, while MultiPL-E's test closes the prompt's `class Problem` around its `main`.
Both are read from the dataset's text, never from the completion.
"""

from __future__ import annotations

from evaluator.languages import lexing
from evaluator.languages.lexing import ScanError


def _classes(text: str) -> list[tuple[int, str, bool]]:
    """(offset, name, public) of each class declared in `text`, comments skipped."""
    try:
        tokens = lexing.tokenize(text, "java")
    except ScanError:
        return []
    found = []
    for j in range(len(tokens) - 1):
        if tokens[j].text == "class" and tokens[j + 1].kind == "ident" \
                and not (j > 0 and tokens[j - 1].text == "."):
            k = j - 1
            while k >= 0 and tokens[k].text in ("final", "abstract", "static"):
                k -= 1
            found.append((tokens[j].start, tokens[j + 1].text,
                          k >= 0 and tokens[k].text == "public"))
    return found


def _main_offset(text: str) -> int | None:
    try:
        tokens = lexing.tokenize(text, "java")
    except ScanError:
        return None
    for j in range(len(tokens) - 3):
        if [t.text for t in tokens[j: j + 4]] == ["static", "void", "main", "("]:
            return tokens[j].start
    return None


def class_names(prefix: str, test: str) -> tuple[str, str]:
    """(source file name, main class) for the program `prefix + completion + test`.

    Read from the dataset's text only (prompt and test), never from the completion.
    """
    test_classes = _classes(test)
    prefix_classes = _classes(prefix)
    main_at = _main_offset(test)
    main_class = ""
    if main_at is not None:
        before = [name for offset, name, _ in test_classes if offset < main_at]
        if before:
            main_class = before[-1]
    if not main_class and prefix_classes:
        main_class = prefix_classes[-1][1]
    main_class = main_class or "Main"
    public = [name for _, name, is_public in [*prefix_classes, *test_classes] if is_public]
    return (public[0] if public else main_class) + ".java", main_class
