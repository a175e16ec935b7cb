"""The datasets' many spellings of languages, reduced to one each.

Programming languages become the names of `evaluator.languages.registry` (python, cpp,
java, js, go, rust...), read from any of their aliases; natural languages become ISO 639-1
codes. Names outside these tables pass through lower-cased rather than fail: HumanEval-XL
and mHumanEval have many more languages than the runners support, and the language
modules are the ones to refuse what they cannot run.
"""

from __future__ import annotations

from evaluator.languages.registry import canonical_name

_FILE_SPELLINGS: dict[str, str] = {
    # MultiPL-E's Go records say "go_test.go", the name of the file they are written to.
    "go_test.go": "go",
}

# English names (HumanEval-XL file names), ISO 639-3 and FLORES-200 codes (mHumanEval).
NATURAL_LANGUAGES: dict[str, str] = {
    "english": "en", "eng": "en", "en": "en",
    "russian": "ru", "rus": "ru", "ru": "ru",
    "arabic": "ar", "arb": "ar", "ara": "ar", "ar": "ar",
    "afrikaans": "af", "afr": "af",
    "bulgarian": "bg", "bul": "bg",
    "chinese": "zh", "zho": "zh",
    "dutch": "nl", "nld": "nl",
    "estonian": "et", "est": "et",
    "finnish": "fi", "fin": "fi",
    "french": "fr", "fra": "fr",
    "german": "de", "deu": "de",
    "greek": "el", "ell": "el",
    "hebrew": "he", "heb": "he",
    "hungarian": "hu", "hun": "hu",
    "indonesian": "id", "ind": "id",
    "italian": "it", "ita": "it",
    "malay": "ms", "zsm": "ms", "msa": "ms",
    "persian": "fa", "pes": "fa", "fas": "fa",
    "portuguese": "pt", "por": "pt",
    "spanish": "es", "spa": "es",
    "tagalog": "tl", "tgl": "tl",
    "turkish": "tr", "tur": "tr",
    "vietnamese": "vi", "vie": "vi",
}  # fmt: skip


def programming_language(name: str) -> str:
    key = name.strip().lower()
    return canonical_name(key) or _FILE_SPELLINGS.get(key, key)


def natural_language(name: str) -> str:
    """`Russian`, `rus_Cyrl` and `ru` all give `ru`."""
    key = name.strip().lower()
    if key in NATURAL_LANGUAGES:
        return NATURAL_LANGUAGES[key]
    # FLORES-200 codes carry the script after an underscore: arb_Arab, rus_Cyrl.
    base = key.split("_", 1)[0]
    return NATURAL_LANGUAGES.get(base, key)
