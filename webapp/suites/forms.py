"""Forms of the suite pages, shared with the suite API."""

from __future__ import annotations

from typing import Any, TypedDict

from django import forms
from django.contrib.auth.models import User
from django.http import QueryDict
from django.utils.datastructures import MultiValueDict

from webapp.benchmarks.selectors import dataset_list, dataset_lookup
from webapp.runs.forms import UploadForm, clean_profile_name, profile_help_text
from webapp.runs.models import Run
from webapp.suites.services import SuiteFile
from webapp.teams.selectors import teams_for_user
from webapp.textfields import (
    JSON_TEXT_MAX,
    LONG_TEXT_MAX,
    NAME_MAX,
    SLUG_MAX,
    FlagField,
    TextField,
    json_object_from_text,
    text_problem,
)


class SuiteForm(forms.Form):
    name = TextField(max_length=NAME_MAX, required=False,
                     help_text="How the suite is listed; the model's name if left empty.")
    model_name = TextField(max_length=NAME_MAX, label="Model")
    revision = TextField(max_length=NAME_MAX, required=False,
                         help_text="Which version of the model: a checkpoint, commit or "
                                   "release.")
    decoding = TextField(
        max_length=JSON_TEXT_MAX, required=False, label="Decoding settings (JSON object)",
        widget=forms.Textarea(attrs={
            "rows": 3, "placeholder": '{"temperature": 0.2, "top_p": 0.95, "n": 20}'}),
    )
    description = TextField(max_length=LONG_TEXT_MAX, required=False,
                            widget=forms.Textarea(attrs={"rows": 2}))
    team = TextField(max_length=SLUG_MAX, required=False,
                     help_text="The team the suite and its runs belong to. Your personal "
                               "team has only you in it.")
    visibility = forms.ChoiceField(
        choices=Run.Visibility.choices, initial=Run.Visibility.TEAM, required=False,
        help_text="Runs uploaded into the suite get the same team and visibility.",
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.user = user
        teams = list(teams_for_user(user=user))
        self.fields["team"].widget = forms.Select(choices=[(t.slug, t.name) for t in teams])

    def clean_decoding(self) -> dict[str, Any]:
        return json_object_from_text(self.cleaned_data.get("decoding") or "")

    # The same rules as the single upload: a team of the user's (their personal one if
    # none is named), and team visibility unless another is chosen.
    clean_team = UploadForm.clean_team
    clean_visibility = UploadForm.clean_visibility


class SuiteUploadOptions(TypedDict):
    """The options of `suite_upload`, as the upload page and the API give them."""

    sanitize: bool | None
    profile: str
    allow_language_mismatch: bool
    dry_run: bool
    confirm_variants: bool


class SuiteUploadForm(forms.Form):
    """The options every file of a multi-file upload shares. The files and their variants
    come as repeated `file` and `dataset` fields, paired in order (`paired_files`)."""

    # The single-upload form's own fields, so the two pages explain them in the same words.
    profile = UploadForm.base_fields["profile"]
    sanitize = UploadForm.base_fields["sanitize"]
    allow_language_mismatch = UploadForm.base_fields["allow_language_mismatch"]
    dry_run = FlagField(label="Only check the files")
    confirm_variants = FlagField(
        label="Run each file on the variant chosen for it",
        help_text=("Tick this when a file's content points to another variant than the one "
                   "you chose (its task ids, format, code or prompt language) and you are "
                   "sure of your choice."),
    )

    def __init__(self, *args: Any, api: bool = False, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.api = api
        names = sorted({dataset.name for dataset in dataset_list()})
        self.fields["profile"].help_text = profile_help_text(names)

    def clean_profile(self) -> str:
        return clean_profile_name(self.cleaned_data.get("profile"))

    def clean_sanitize(self) -> bool | None:
        # As for one file: a script that leaves the field out gets each dataset's reference
        # harness's choice (None here, resolved per file); a browser always sends the box.
        if self.api and "sanitize" not in self.data:
            return None
        return bool(self.cleaned_data.get("sanitize"))

    def options(self) -> SuiteUploadOptions:
        """The cleaned options (call after `is_valid`)."""
        data = self.cleaned_data
        return SuiteUploadOptions(
            sanitize=data["sanitize"], profile=data["profile"],
            allow_language_mismatch=data["allow_language_mismatch"], dry_run=data["dry_run"],
            confirm_variants=data["confirm_variants"])


def dataset_choices() -> list[tuple[str, str]]:
    return [(str(d.pk), f"{d.key} ({d.problem_count} problems, version {d.version[:12]})")
            for d in dataset_list()]


def paired_files(data: QueryDict, files: MultiValueDict[str, Any]) -> tuple[list[SuiteFile],
                                                                            list[str]]:
    """The uploaded files, each with the dataset named at the same position; and the
    errors, each naming the file it is about."""
    uploaded = files.getlist("file")
    references = data.getlist("dataset")
    errors: list[str] = []
    if len(references) != len(uploaded):
        errors.append(f"{len(uploaded)} file(s) but {len(references)} dataset(s): give one "
                      "`dataset` per `file`, in the same order.")
        return [], errors
    paired: list[SuiteFile] = []
    for position, (item, reference) in enumerate(zip(uploaded, references, strict=True), 1):
        problem = text_problem(reference)
        if problem is not None:
            errors.append(f"File {position} ({item.name}): the dataset: {problem}")
            continue
        dataset = (dataset_lookup(reference=reference[:NAME_MAX]) if reference.strip()
                   else None)
        if dataset is None:
            errors.append(f"File {position} ({item.name}): no such dataset "
                          f"{reference[:80]!r}.")
            continue
        paired.append(SuiteFile(uploaded=item, dataset=dataset))
    return paired, errors
