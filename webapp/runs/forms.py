"""Forms of the upload page, shared with `POST /api/runs`."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib.auth.models import AbstractBaseUser

from webapp.benchmarks.models import Dataset
from webapp.benchmarks.selectors import dataset_list, dataset_lookup
from webapp.runs.models import Run
from webapp.teams.models import Team
from webapp.teams.selectors import teams_for_user


class UploadForm(forms.Form):
    file = forms.FileField(
        # An empty file reaches the checker, which says so in the same words as other issues.
        allow_empty_file=True,
        help_text="JSON Lines, plain (.jsonl) or gzip-compressed (.jsonl.gz)."
    )
    dataset = forms.CharField(help_text="Dataset id, or key such as humaneval/python/en.")
    name = forms.CharField(max_length=200, required=False)
    model_name = forms.CharField(max_length=200, required=False, label="Model")
    model_meta = forms.CharField(
        required=False, label="Model metadata (JSON object)",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": '{"temperature": 0.8}'}),
    )
    team = forms.CharField(required=False, help_text="Team slug; your personal team if empty.")
    visibility = forms.ChoiceField(
        choices=Run.Visibility.choices, initial=Run.Visibility.TEAM, required=False
    )
    sanitize = forms.BooleanField(
        required=False, initial=True,
        help_text="Strip markdown fences and repeated signatures from raw model output.",
    )

    def __init__(self, *args: Any, user: AbstractBaseUser, api: bool = False, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.user = user
        self.api = api
        datasets = list(dataset_list())
        self.fields["dataset"].widget = forms.Select(
            choices=[(str(d.pk), f"{d.key} ({d.problem_count} problems, version {d.version})")
                     for d in datasets]
        )
        teams = list(teams_for_user(user=user))
        self.fields["team"].widget = forms.Select(choices=[(t.slug, t.name) for t in teams])
        if datasets and not self.is_bound:
            self.initial.setdefault("dataset", str(datasets[0].pk))

    def clean_dataset(self) -> Dataset:
        dataset = dataset_lookup(reference=self.cleaned_data["dataset"])
        if dataset is None:
            raise forms.ValidationError("No such dataset.")
        return dataset

    def clean_team(self) -> Team:
        slug = self.cleaned_data.get("team") or ""
        teams = teams_for_user(user=self.user)
        team = teams.filter(slug=slug).first() if slug else teams.first()
        if team is None:
            raise forms.ValidationError("You are not a member of that team.")
        return team

    def clean_model_meta(self) -> dict[str, Any]:
        text = (self.cleaned_data.get("model_meta") or "").strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc.msg}.") from None
        if not isinstance(value, dict):
            raise forms.ValidationError("Give a JSON object, like {\"temperature\": 0.8}.")
        return value

    def clean_visibility(self) -> str:
        return self.cleaned_data.get("visibility") or Run.Visibility.TEAM

    def clean_sanitize(self) -> bool:
        # An API client that leaves the field out gets the default; a browser sends the box.
        if self.api and "sanitize" not in self.data:
            return True
        return bool(self.cleaned_data.get("sanitize"))


class ConfirmForm(forms.Form):
    token = forms.CharField(widget=forms.HiddenInput)
