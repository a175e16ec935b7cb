"""Which stored variant a generation file was written for, judged from its first lines.

A file named `samples_python.jsonl` whose ids are `Python/0`, `Python/1`, ... was written
for HumanEval-X's Python, not for OpenAI's HumanEval, whatever its name says. The head of
the file (`read_evidence`: at most `max_lines` records, read one line at a time) shows:

- the ids: `CPP/3` names a language; `Python/3` is HumanEval-X's own spelling, `python/3`
  HumanEval-XL's, `HumanEval_3_below_zero` MultiPL-E's, `HumanEval/3` every dataset's;
- the layout (`evaluator.samples`): CodeGeeX's `generation` is HumanEval-X's, EvalPlus's
  `solution` HumanEval+'s, BabelCode's records carry their `language`;
- the language of the code, by the words only one language uses (`fn`, `:=`, `elif`);
- the natural language, where the records carry the prompt (CodeT's `prompt`, a whole
  program's docstring): Cyrillic or Arabic letters.

`detect_variant` ranks the candidates by what is decisive (language, ids, natural
language), then by the layout, and only then by the file's name. `mismatch` says why a
chosen variant contradicts the decisive evidence, if it does.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from evaluator.languages.registry import canonical_name, display_name
from evaluator.samples import iter_records

__all__ = ["DETECTION_LINES", "Candidate", "Detection", "Evidence", "detect_variant",
           "read_evidence"]

DETECTION_LINES = 200
"""Records read from the head of a file; the rest is never read for detection."""
DETECTION_LINE_BYTES = 1_000_000
DETECTION_EXPANDED_BYTES = 32_000_000
"""A gzip head may expand to no more than this while its first lines are read."""
_MAX_CODE_CHARS = 400_000
"""Code kept for the language guess: enough to be sure, bounded whatever the lines hold."""
_MAX_IDS = 5_000

_LAYOUT_NAMES = {
    "completion": "human-eval layout", "generation": "HumanEval-X (CodeGeeX) layout",
    "solution": "EvalPlus layout", "codet": "CodeT layout", "babelcode": "BabelCode layout",
}
_HOME_LAYOUT = {"generation": "humaneval-x", "solution": "humanevalplus",
                "babelcode": "babelcode"}
"""The dataset whose own harness writes each layout; the others fit many datasets."""
_ID_FORM = re.compile(r"(?P<prefix>[A-Za-z][A-Za-z0-9+#]*)?[/_-]?(?P<number>\d+)(?:[_/-].*)?")

# Words and marks that only one of the languages writes. Each counts once per piece of code
# it appears in, so that one long completion cannot outvote the rest.
_LANGUAGE_MARKS: dict[str, tuple[re.Pattern[str], ...]] = {
    "python": tuple(re.compile(p, re.M) for p in (
        r"^\s*def \w+\(.*\)\s*(->.*)?:\s*$", r"\belif\b",
        r"^\s*(for|if|while|else|try|except)\b[^{;]*:\s*$", r"\bNone\b", r"\b(True|False)\b",
        r"\bnot in\b", r"\bfor \w+(, \w+)* in\b", r"\.append\(", r"^\s*#(?!include)",
    )),
    "cpp": tuple(re.compile(p, re.M) for p in (
        r"#include\s*<", r"\bstd::", r"\bvector\s*<", r"\busing namespace\b", r"\.size\(\)",
        r"\bcout\b", r"\bauto\b", r"\.push_back\(",
    )),
    "java": tuple(re.compile(p, re.M) for p in (
        r"\bpublic\s", r"\bList<", r"\bArrayList\b", r"\bString\b", r"\.length\(\)",
        r"\bArrays\.", r"\bSystem\.out\b", r"\.add\(", r"\bInteger\b", r"\bimport java\.",
    )),
    "js": tuple(re.compile(p, re.M) for p in (
        r"\bconst\b", r"=>", r"===|!==", r"\bfunction\b", r"\bconsole\.log\b",
        r"\blet\s+\w+\s*=", r"\.length\b(?!\()", r"\.push\(",
    )),
    "go": tuple(re.compile(p, re.M) for p in (
        r":=", r"\bfunc\b", r"\bpackage\b", r"\bfmt\.", r"\[\](int|string|float64)\b",
        r"\bnil\b", r"\bfor\s+\w+\s*(,\s*\w+)?\s*:?=\s*range\b",
    )),
    "rust": tuple(re.compile(p, re.M) for p in (
        r"\bfn\b", r"\blet\s+mut\b", r"\bVec<", r"::new\(", r"&str\b", r"\.iter\(\)",
        r"\b(usize|i32|i64|f64)\b", r"\bprintln!", r"\.unwrap\(\)", r"\bimpl\b",
    )),
}
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_ARABIC = re.compile(r"[\u0600-\u06ff]")
_LATIN_WORD = re.compile(r"\b[A-Za-z]{3,}\b")
_DOC_TEXT = re.compile(r'"""(.*?)"""|\'\'\'(.*?)\'\'\'|/\*(.*?)\*/', re.S)
_NATURAL_NAMES = {"en": "English", "ru": "Russian", "ar": "Arabic"}


@dataclass(frozen=True)
class Candidate:
    """A stored variant detection may choose."""

    key: str
    name: str
    """The dataset's name: humaneval, humaneval-x, mhumaneval, ..."""
    language: str
    natural_language: str
    ids: frozenset[str]
    """Every id the variant writes itself: its task ids and its source's ids."""


@dataclass
class Evidence:
    """What the head of one file shows."""

    lines: int = 0
    layout: str | None = None
    ids: list[str] = field(default_factory=list)
    """Distinct ids (`task_id`, `qid`) in the order they came."""
    stated_language: str | None = None
    """BabelCode's `language` field, when every record read agrees."""
    code_language: str | None = None
    natural_language: str | None = None
    code_marks: dict[str, int] = field(default_factory=dict)

    @property
    def id_language(self) -> str | None:
        """The language every id's prefix names (`CPP/3`, `Python/3`), if they agree."""
        found = {canonical_name(prefix) for prefix in _prefixes(self.ids)}
        return found.pop() if len(found) == 1 and None not in found else None

    @property
    def language(self) -> str | None:
        return self.stated_language or self.code_language or self.id_language

    def describe_ids(self) -> str:
        """`ids Python/0…163`, `ids HumanEval/0, HumanEval/2`: what the ids look like."""
        if not self.ids:
            return ""
        groups: dict[str, list[int]] = {}
        others: list[str] = []
        for raw in self.ids:
            match = re.fullmatch(r"(?P<head>.*?)(?P<number>\d+)", raw)
            if match is None or len(match.group("number")) > 9:
                others.append(raw)
                continue
            groups.setdefault(match.group("head"), []).append(int(match.group("number")))
        parts = []
        for head, numbers in groups.items():
            if len(numbers) <= 3:
                parts.append(", ".join(f"{head}{n}" for n in sorted(numbers)))
            else:
                parts.append(f"{head}{min(numbers)}…{max(numbers)}")
        parts.extend(_shorten(raw) for raw in others[:2])
        more = len(others) - 2
        return "ids " + ", ".join(parts[:3]) + (f" and {more} more" if more > 0 else "")


@dataclass(frozen=True)
class Ranked:
    candidate: Candidate
    decisive: float
    """Language, ids and natural language: what a choice must not contradict."""
    layout: int
    name: int


@dataclass(frozen=True)
class Detection:
    key: str | None
    """The best candidate's key; None when nothing in the file points anywhere."""
    reason: str
    """`ids Python/0…163 in the HumanEval-X (CodeGeeX) layout, Python code →
    humaneval-x/python/en`."""
    evidence: Evidence
    ranking: tuple[Ranked, ...]

    @property
    def fitting(self) -> tuple[str, ...]:
        """The keys the decisive evidence does not tell apart from the best."""
        if not self.ranking or self.key is None:
            return ()
        best = self.ranking[0].decisive
        return tuple(r.candidate.key for r in self.ranking if r.decisive >= best - 1e-9)

    def mismatch(self, chosen: str) -> str:
        """Why the variant `chosen` contradicts the content; "" when it does not."""
        if self.key is None or chosen in self.fitting:
            return ""
        ranked = next((r for r in self.ranking if r.candidate.key == chosen), None)
        if ranked is None:
            return ""
        candidate = ranked.candidate
        evidence = self.evidence
        why: list[str] = []
        language = evidence.language
        if language is not None and language != candidate.language:
            why.append(f"the code is {display_name(language)} and {chosen} is "
                       f"{display_name(candidate.language)}")
        if (evidence.natural_language is not None
                and evidence.natural_language != candidate.natural_language):
            why.append(f"the prompts are in {_natural_name(evidence.natural_language)} and "
                       f"{chosen} is in {_natural_name(candidate.natural_language)}")
        if not why and evidence.ids:
            own = sum(1 for raw in evidence.ids if raw in candidate.ids)
            read = f"the {len(evidence.ids)} distinct ids read ({evidence.describe_ids()})"
            why.append(f"{chosen} uses none of {read}" if own == 0
                       else f"{chosen} uses only {own} of {read}")
        return (f"The content points to {self.key} ({self.reason.rsplit(' → ', 1)[0]}), "
                f"not to {chosen}: {'; '.join(why)}.")


def read_evidence(stream: IO[bytes], *, max_lines: int = DETECTION_LINES) -> Evidence:
    """Read at most `max_lines` records from `stream` (open at its start; plain or gzip)
    and note what they show. The stream is left where reading stopped."""
    evidence = Evidence()
    layouts: Counter[str] = Counter()
    stated: set[str] = set()
    seen: set[str] = set()
    code: list[str] = []
    code_chars = 0
    prose: list[str] = []
    for _line, item in iter_records(stream, max_line_bytes=DETECTION_LINE_BYTES,
                                    max_expanded_bytes=DETECTION_EXPANDED_BYTES):
        if not isinstance(item, dict):
            continue
        evidence.lines += 1
        layout = _layout_of(item)
        if layout is not None:
            layouts[layout] += 1
        raw_id = item.get("task_id", item.get("qid"))
        if isinstance(raw_id, str | int) and not isinstance(raw_id, bool):
            text = str(raw_id)[:200]
            if text not in seen and len(seen) < _MAX_IDS:
                seen.add(text)
                evidence.ids.append(text)
        if isinstance(item.get("language"), str) and layout == "babelcode":
            stated.add(canonical_name(item["language"]) or item["language"].lower())
        pieces = _code_of(item)
        for piece in pieces:
            if code_chars < _MAX_CODE_CHARS:
                code.append(piece[:20_000])
                code_chars += len(code[-1])
        prompt = item.get("prompt")
        if isinstance(prompt, str):
            prose.append(prompt[:20_000])
        elif layout in ("solution", "babelcode"):
            prose.extend(piece[:20_000] for piece in pieces[:1])
        if evidence.lines >= max_lines:
            break
    if layouts:
        evidence.layout = layouts.most_common(1)[0][0]
    if len(stated) == 1:
        evidence.stated_language = stated.pop()
    evidence.code_marks = _language_marks(code)
    evidence.code_language = _code_language(evidence.code_marks)
    evidence.natural_language = _natural_language(prose)
    return evidence


def detect_variant(evidence: Evidence, candidates: Sequence[Candidate], *,
                   file_name: str = "") -> Detection:
    """Rank `candidates` by what `evidence` shows, the file's name breaking ties."""
    said = _name_words(file_name)
    ranking = sorted(
        (Ranked(candidate=c, decisive=_decisive(evidence, c),
                layout=int(_HOME_LAYOUT.get(evidence.layout or "") == c.name),
                name=_name_score(said, c.key))
         for c in candidates),
        key=lambda r: (-r.decisive, -r.layout, -r.name, _preference(r.candidate)),
    )
    if not ranking:
        return Detection(key=None, reason="no datasets are stored", evidence=evidence,
                         ranking=())
    best = ranking[0]
    shows = _what_it_shows(evidence)
    if best.decisive <= 0 and best.layout == 0:
        # Nothing in the content points anywhere: only the name is left.
        if best.name == 0:
            return Detection(key=None, reason=(shows or "nothing in the first lines")
                             + " fits no stored variant better than another",
                             evidence=evidence, ranking=tuple(ranking))
        return Detection(key=best.candidate.key,
                         reason=f"the file's name → {best.candidate.key}",
                         evidence=evidence, ranking=tuple(ranking))
    tied = [r for r in ranking if (r.decisive, r.layout) == (best.decisive, best.layout)]
    by_name = " (the file's name chose among the variants that fit)" \
        if len(tied) > 1 and best.name > tied[1].name else ""
    return Detection(key=best.candidate.key,
                     reason=f"{shows} → {best.candidate.key}{by_name}",
                     evidence=evidence, ranking=tuple(ranking))


# -- scoring ------------------------------------------------------------------------------
def _decisive(evidence: Evidence, candidate: Candidate) -> float:
    score = 0.0
    language = evidence.language
    if language is not None:
        score += 1.0 if language == candidate.language else -10.0
    if evidence.ids:
        own = sum(1 for raw in evidence.ids if raw in candidate.ids)
        # Tenths: one stray id must not make two variants differ.
        score += round(own / len(evidence.ids), 1)
    if evidence.natural_language is not None:
        score += 1.0 if evidence.natural_language == candidate.natural_language else -1.0
    return score


def _what_it_shows(evidence: Evidence) -> str:
    parts = []
    ids = evidence.describe_ids()
    if ids:
        parts.append(ids)
    if evidence.layout is not None:
        parts.append(("in the " if parts else "the ") + _LAYOUT_NAMES[evidence.layout])
    shown = " ".join(parts)
    extra = []
    if evidence.stated_language is not None:
        extra.append(f"`language` {display_name(evidence.stated_language)}")
    elif evidence.code_language is not None:
        extra.append(f"{display_name(evidence.code_language)} code")
    if evidence.natural_language is not None:
        extra.append(f"prompts in {_natural_name(evidence.natural_language)}")
    return ", ".join([shown, *extra] if shown else extra)


def _layout_of(item: dict[str, Any]) -> str | None:
    if "samples" in item or ("prompt" in item and "task_id" not in item):
        return "codet"
    if "qid" in item:
        return "babelcode"
    for layout in ("completion", "generation", "solution"):
        if "task_id" in item and layout in item:
            return layout
    return None


def _code_of(item: dict[str, Any]) -> list[str]:
    found: list[str] = []
    for name in ("completion", "generation", "solution", "code"):
        value = item.get(name)
        if isinstance(value, str):
            found.append(value)
    samples = item.get("samples")
    if isinstance(samples, list):
        found.extend(s for s in samples[:20] if isinstance(s, str))
    return found


def _language_marks(pieces: Iterable[str]) -> dict[str, int]:
    marks: Counter[str] = Counter()
    for piece in pieces:
        for language, patterns in _LANGUAGE_MARKS.items():
            marks[language] += sum(1 for pattern in patterns if pattern.search(piece))
    return dict(marks)


def _code_language(marks: dict[str, int]) -> str | None:
    """The language with clearly the most marks: at least 3, and twice the next one's."""
    ordered = sorted(marks.items(), key=lambda item: -item[1])
    if not ordered or ordered[0][1] < 3:
        return None
    if len(ordered) > 1 and ordered[0][1] < 2 * ordered[1][1]:
        return None
    return ordered[0][0]


def _natural_language(texts: Iterable[str]) -> str | None:
    """ru or ar when the prose of the prompts is mostly in that script; en when it is
    Latin prose; None when no record carries a prompt."""
    prose = " ".join(" ".join(part for part in match.groups() if part)
                     for text in texts for match in _DOC_TEXT.finditer(text))
    if not prose.strip():
        return None
    cyrillic = len(_CYRILLIC.findall(prose))
    arabic = len(_ARABIC.findall(prose))
    latin = sum(len(word) for word in _LATIN_WORD.findall(prose))
    if max(cyrillic, arabic) >= 20 and max(cyrillic, arabic) >= latin / 4:
        return "ru" if cyrillic > arabic else "ar"
    return "en" if latin >= 40 else None


def _prefixes(ids: Iterable[str]) -> set[str]:
    found = set()
    for raw in ids:
        match = _ID_FORM.fullmatch(raw)
        if match is None or match.group("prefix") is None:
            return set()
        found.add(match.group("prefix"))
    return found


_ALIASES = {
    "ru": ("ru", "rus", "russian"), "ar": ("ar", "arb", "arabic"), "en": ("en", "eng", "english"),
    "python": ("python", "py"), "cpp": ("cpp", "c++"), "java": ("java",),
    "js": ("js", "javascript"), "go": ("go", "golang"), "rust": ("rust", "rs"),
}


def _name_words(file_name: str) -> set[str]:
    stem = re.sub(r"\.jsonl(\.gz)?$", "", file_name.lower())
    return {word for word in re.split(r"[^a-z0-9+]+", stem) if word}


def _name_score(said: set[str], key: str) -> int:
    """How many parts of `key` the file's name says (`humaneval-x` as `humanevalx` too)."""
    score = 0
    for part in key.split("/"):
        names = _ALIASES.get(part, (part,))
        if any(name in said for name in names) or ("-" in part and part.replace("-", "") in said):
            score += 1
    return score


_PREFERRED = ("humaneval", "humaneval-x", "humanevalplus", "mhumaneval", "humaneval-xl",
              "multipl-e", "mera-ruhumaneval", "babelcode")


def _preference(candidate: Candidate) -> tuple[int, int, str]:
    """Among variants nothing tells apart: the original benchmark, then English."""
    rank = _PREFERRED.index(candidate.name) if candidate.name in _PREFERRED else len(_PREFERRED)
    return rank, int(candidate.natural_language != "en"), candidate.key


def _natural_name(code: str) -> str:
    return _NATURAL_NAMES.get(code, code)


def _shorten(raw: str) -> str:
    return raw if len(raw) <= 40 else raw[:37] + "..."
