"""Runs, their samples and chunks, their aggregates, and the result cache."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from evaluator.records import STATUSES
from webapp.benchmarks.models import Dataset, Problem, ProblemVariant
from webapp.runs.domain.problem_scores import problem_pass_at_k
from webapp.teams.models import Team

SAMPLE_STATUSES: tuple[str, ...] = ("pending", *STATUSES)
LEGACY_PROFILE = "strict"
"""The profile of runs created before profiles were recorded: its rules judged them."""


class Run(models.Model):
    class Status(models.TextChoices):
        STAGED = "staged", "Awaiting confirmation"
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        AGGREGATING = "aggregating", "Computing scores"
        FINISHED = "finished", "Finished"
        CANCELLED = "cancelled", "Cancelled"
        FAILED = "failed", "Failed"
        PAUSED = "paused", "Paused: the machine failed"

    class Visibility(models.TextChoices):
        PRIVATE = "private", "Private: only me"
        TEAM = "team", "Team: members of the team"
        PUBLIC = "public", "Public: everyone"

    ACTIVE = (Status.QUEUED, Status.RUNNING, Status.AGGREGATING)

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="runs"
    )
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="runs")
    visibility = models.CharField(
        max_length=10, choices=Visibility.choices, default=Visibility.TEAM
    )
    name = models.CharField(max_length=200)
    model_name = models.CharField(max_length=200, blank=True)
    model_meta = models.JSONField(default=dict, blank=True)
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="runs")

    file_name = models.CharField(max_length=255)
    file_sha256 = models.CharField(max_length=64)
    file_size = models.BigIntegerField()
    file_layout = models.CharField(max_length=20)
    options = models.JSONField(
        default=dict,
        help_text="sanitize, limits, task, tests, harness profile: what decides a verdict.",
    )
    fingerprint = models.CharField(
        max_length=64, db_index=True, help_text="Hash of file, dataset and options: finds repeats."
    )
    use_cache = models.BooleanField(default=True)
    rerun_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reruns"
    )
    coverage = models.JSONField(default=dict)
    harness_version = models.CharField(max_length=20)
    manifest = models.JSONField(
        default=dict, blank=True,
        help_text="What produced its verdicts (`evaluator.manifest`), as the workers that "
        "evaluated it recorded it; empty for runs evaluated before manifests.",
    )
    reproduction_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="reproductions",
        help_text="The run this one re-evaluates to check its verdicts; such runs are kept "
        "out of lists and leaderboards (`webapp.runs.services.reproduce`).",
    )
    plus_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="plus_runs",
        help_text="The run whose stored samples this one evaluates on a plus test set "
        "(HumanEval+, HumanEval-X+), to show base beside plus (`webapp.runs.services.plus`).",
    )

    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(
        blank=True, help_text="Why it failed, or why it is paused (an infrastructure failure)."
    )
    canary_gaps = models.JSONField(
        default=list, blank=True,
        help_text="Where a chunk ran without a healthy canary of its language on its worker: "
        "[{worker, language, reason}]; empty when every chunk had one.",
    )
    samples_total = models.PositiveIntegerField(default=0)
    done_count = models.PositiveIntegerField(default=0)
    passed_count = models.PositiveIntegerField(default=0)
    failed_count = models.PositiveIntegerField(default=0)
    error_count = models.PositiveIntegerField(default=0)
    compile_error_count = models.PositiveIntegerField(default=0)
    timeout_count = models.PositiveIntegerField(default=0)
    memory_count = models.PositiveIntegerField(default=0)
    sandbox_error_count = models.PositiveIntegerField(default=0)
    cached_count = models.PositiveIntegerField(default=0)
    chunks_total = models.PositiveIntegerField(default=0)
    chunks_done = models.PositiveIntegerField(default=0)
    sandbox_backend = models.CharField(max_length=20, blank=True)
    event_seq = models.PositiveBigIntegerField(
        default=0, help_text="Sequence number of the run's last durable live event."
    )
    lease_until = models.DateTimeField(
        null=True, blank=True,
        help_text="While aggregating: the heartbeat lease of the process computing scores.",
    )
    watched_until = models.DateTimeField(
        null=True, blank=True,
        help_text="Someone has its live page open until at least then (renewed while they "
        "do): only then do its workers stream each test as it runs.",
    )
    dispatched_at = models.DateTimeField(
        null=True, blank=True,
        help_text="When its last task (fan-out or scores) was sent.",
    )
    recoveries = models.PositiveIntegerField(
        default=0, help_text="How many times lost work of this run was taken back and resumed."
    )
    recovered_at = models.DateTimeField(null=True, blank=True)
    retracted_at = models.DateTimeField(
        null=True, blank=True, help_text="When it was taken off the leaderboards; empty if on."
    )
    deleted_at = models.DateTimeField(
        null=True, blank=True, db_index=True,
        help_text="When it was deleted: hidden everywhere, restorable until it is purged.",
    )

    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["visibility", "status"])]

    def __str__(self) -> str:
        return f"Run {self.pk}: {self.name}"

    def get_absolute_url(self) -> str:
        return reverse("runs:detail", args=[self.pk])

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def counts_by_status(self) -> dict[str, int]:
        return {status: getattr(self, f"{status}_count") for status in STATUSES}

    @property
    def progress_fraction(self) -> float:
        return self.done_count / self.samples_total if self.samples_total else 0.0

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at is None:
            return None
        end = self.finished_at
        if end is None:
            return None
        return (end - self.started_at).total_seconds()

    @property
    def profile_name(self) -> str:
        """The harness profile that judged the run (`evaluator.profiles`). A run from before
        profiles has none recorded: the strict rules, which judged it then."""
        return str(self.options.get("profile") or LEGACY_PROFILE)

    @property
    def profile_recorded(self) -> bool:
        return bool(self.options.get("profile"))


class RunChange(models.Model):
    """One change made to a run after upload (`webapp.runs.services.lifecycle`): who, when, what
    from and to. The values are kept as text, as they were shown when the change was made."""

    class Field(models.TextChoices):
        VISIBILITY = "visibility", "Visibility"
        TEAM = "team", "Team"
        NAME = "name", "Name"
        MODEL_NAME = "model_name", "Model"
        MODEL_META = "model_meta", "Model metadata"
        LEADERBOARD = "leaderboard", "Leaderboards"
        DELETED = "deleted", "Deleted"
        STATUS = "status", "Status (cancel, resume)"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="changes")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    actor_name = models.CharField(
        max_length=150, help_text="The actor's username then, kept if the account goes."
    )
    field = models.CharField(max_length=20, choices=Field.choices)
    before = models.TextField(blank=True)
    after = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run_id", "-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.field} of run {self.run_id}: {self.before!r} -> {self.after!r}"


class Chunk(models.Model):
    """A slice of a run's samples (whole problems) that one task evaluates."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        CANCELLED = "cancelled", "Cancelled"
        FAILED = "failed", "Failed"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    language = models.CharField(max_length=20)
    sample_count = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    claim = models.CharField(
        max_length=32, blank=True, help_text="Token of the delivery that holds the chunk."
    )
    worker = models.CharField(max_length=200, blank=True, help_text="Host of that delivery.")
    lease_until = models.DateTimeField(
        null=True, blank=True,
        help_text="Renewed by its holder's heartbeat; once past, the chunk is taken back.",
    )
    dispatched_at = models.DateTimeField(
        null=True, blank=True, help_text="When its task was last sent to the broker."
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "index"], name="one_chunk_per_index"),
        ]

    def __str__(self) -> str:
        return f"chunk {self.index} of run {self.run_id}"


class Sample(models.Model):
    # Not indexed alone: the unique constraint and the indexes below all lead with `run`, and
    # every index is written again by each result (its status, number and finish are
    # indexed, so a result is a new row version in every index of the table).
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="samples",
                            db_index=False)
    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="samples")
    variant = models.ForeignKey(ProblemVariant, on_delete=models.PROTECT, related_name="samples")
    task_id = models.CharField(max_length=30, help_text="Aligned id, `HumanEval/N`.")
    source_task_id = models.TextField(
        help_text="The id as the uploaded file wrote it (`CPP/0`, a BabelCode qid), byte for "
        "byte: results and exports carry it as `task_id`."
    )
    index = models.PositiveIntegerField(help_text="completion_id within the task")
    position = models.PositiveIntegerField(help_text="Order in the uploaded file.")
    line = models.PositiveIntegerField()
    raw = models.TextField()
    completion = models.TextField()
    sanitized = models.BooleanField(default=False)
    notes = models.JSONField(default=list, blank=True)
    is_full_program = models.BooleanField(default=False)

    status = models.CharField(max_length=15, default="pending")  # indexed with `run`, below
    cached = models.BooleanField(default=False)
    program_hash = models.CharField(max_length=64, blank=True)
    error_type = models.CharField(max_length=100, blank=True)
    message = models.TextField(blank=True)
    duration_ms = models.FloatField(default=0.0)
    tests_passed = models.PositiveIntegerField(default=0)
    tests_total = models.PositiveIntegerField(default=0)
    result = models.JSONField(null=True, blank=True, help_text="SampleResult.to_dict()")
    finished_at = models.DateTimeField(null=True, blank=True)
    seq = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Sequence number of its `sample_finished` event."
    )

    class Meta:
        ordering = ["run_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "task_id", "index"], name="one_sample_per_id"),
        ]
        indexes = [
            models.Index(fields=["run", "status"]),
            models.Index(fields=["run", "finished_at"]),
            models.Index(fields=["run", "seq"]),
        ]

    def __str__(self) -> str:
        return f"{self.task_id} #{self.index} of run {self.run_id}"

    def get_absolute_url(self) -> str:
        return reverse("runs:sample", args=[self.run_id, self.pk])


class RunEvent(models.Model):
    """A durable run-level live event (status changes, recovery, the end), kept so that a
    viewer who reconnects gets exactly what it missed. `sample_finished` events are not
    stored here: they are rebuilt from `Sample` rows, which carry their sequence numbers."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveBigIntegerField()
    type = models.CharField(max_length=30)
    payload = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run_id", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="one_event_per_seq")]

    def __str__(self) -> str:
        return f"{self.type} #{self.seq} of run {self.run_id}"


class ProblemResult(models.Model):
    """A run's score on one problem, computed when the run finishes."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="problem_results")
    problem = models.ForeignKey(Problem, on_delete=models.PROTECT, related_name="results")
    task_id = models.CharField(max_length=30)
    n = models.PositiveIntegerField()
    c = models.PositiveIntegerField()
    base_c = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="On a plus test set, samples that passed every base test: EvalPlus's base "
                  "column (`metrics_plus.passed_base`). Null where the tests are not split "
                  "into base and plus, or the run was scored before these were kept.",
    )
    counts = models.JSONField(default=dict, help_text="Samples per status.")
    pass_at_k = models.JSONField(
        default=dict, help_text='{"k": value} for the reported k <= n (1, 10, 100); any other '
                                'k is computed from n and c'
    )
    intervals = models.JSONField(
        default=dict, help_text='{"k": [low, high]} for the reported k, by binomial bootstrap'
    )
    top_failure = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["run_id", "problem__number"]
        constraints = [
            models.UniqueConstraint(fields=["run", "problem"], name="one_result_per_problem"),
        ]

    def __str__(self) -> str:
        return f"{self.task_id}: {self.c}/{self.n}"

    def pass_at(self, k: int) -> float | None:
        """pass@k of this problem, stored or computed from (n, c); None where n < k."""
        value: Any = self.pass_at_k.get(str(k))
        if value is not None:
            return float(value)
        return problem_pass_at_k(n=self.n, c=self.c, k=k)


class RunMetric(models.Model):
    """pass@k over all problems, with its bootstrap interval, for one k."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="metrics")
    k = models.PositiveIntegerField()
    value = models.FloatField()
    low = models.FloatField()
    high = models.FloatField()
    problems = models.PositiveIntegerField()

    class Meta:
        ordering = ["run_id", "k"]
        constraints = [models.UniqueConstraint(fields=["run", "k"], name="one_metric_per_k")]

    def __str__(self) -> str:
        return f"pass@{self.k} = {self.value:.3f}"


class RunDigest(models.Model):
    """What a run's pages read besides pass@k, computed with its scores and stored beside
    them (in the same transaction, so never older than they are): reading it costs a row,
    where computing it again costs a bootstrap per k or a scan of every sample (issue 26).
    A run scored before it existed has none, and its readers compute the figures."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="digest")
    pass_hat_k = models.JSONField(
        default=list, help_text="[k, value, low, high] for k = 1..min n: pass^k with its "
                                "bootstrap interval")
    failures = models.JSONField(
        default=list, help_text="[status, error type, samples] of the samples that did not "
                                "pass, most frequent first")
    unstable = models.PositiveIntegerField(
        default=0, help_text="Samples whose two attempts disagreed (`SampleResult.unstable`).")
    compile_errors = models.PositiveIntegerField(
        default=0, help_text="Samples that did not compile, as the verified check counts them.")
    suspicious = models.PositiveIntegerField(
        default=0, help_text="Suspicious samples, as the verified check counts them "
                             "(`verified.SUSPICIOUS`).")

    def __str__(self) -> str:
        return f"digest of run {self.run_id}"


class CachedResult(models.Model):
    """An evaluated program, keyed by the evaluator's cache key (dataset version, problem,
    program hash, harness version, options), so an identical program is not run twice."""

    key = models.CharField(max_length=64, unique=True)
    result = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.key


class LeasedJob(models.Model):
    """A job about a run that a person asks for and one worker computes, claimed and held
    under a heartbeat lease (`webapp.runs.worker.jobs`). A subclass adds `status`, whose values
    are queued, running, done and failed."""

    error = models.TextField(blank=True)
    claim = models.CharField(
        max_length=32, blank=True, help_text="Token of the delivery that computes it."
    )
    lease_until = models.DateTimeField(
        null=True, blank=True, help_text="Renewed by its holder's heartbeat while it runs."
    )
    dispatched_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    queued_patience: timedelta | None = None
    """How long a sent job may wait for a worker before it may be asked for again; None
    for as long as it takes (the sweeper sends it again)."""

    class Meta:
        abstract = True

    @property
    def in_progress(self) -> bool:
        """Sent and not yet taken, or held by a worker whose lease is still renewed. One
        whose worker died (its lease has passed) may be asked for again."""
        status = getattr(self, "status", "")
        if status == "queued":
            if self.dispatched_at is None:
                return False
            return (self.queued_patience is None
                    or self.dispatched_at > timezone.now() - self.queued_patience)
        if status == "running":
            return self.lease_until is not None and self.lease_until > timezone.now()
        return False


class ProfileComparison(LeasedJob):
    """A run re-scored under every harness profile: asked for by a person, computed by one
    task (`rescoring.profile_comparison_run`), held by a heartbeat lease while it runs."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Comparing"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="profile_comparison")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    baseline = models.CharField(
        max_length=30, help_text="The run's own profile: the one its headline numbers use."
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    profiles_total = models.PositiveIntegerField(default=0)
    profiles_done = models.PositiveIntegerField(default=0)
    dependent = models.JSONField(
        default=list, blank=True,
        help_text='Problems whose verdict depends on the profile: [{"task_id", "n", '
                  '"passed": {profile: c}, "reason"}], in task order.',
    )
    def __str__(self) -> str:
        return f"profile comparison of run {self.run_id}: {self.status}"


class ProfileScore(models.Model):
    """A run's pass@k under one harness profile, and what re-scoring it took."""

    comparison = models.ForeignKey(
        ProfileComparison, on_delete=models.CASCADE, related_name="scores"
    )
    profile = models.CharField(max_length=30)
    version = models.CharField(max_length=20)
    pass_at_k = models.JSONField(
        default=list, help_text='[{"k", "value", "low", "high"}] for the k that n allows.'
    )
    changed = models.PositiveIntegerField(
        default=0, help_text="Problems whose verdict differs from the run's own profile's."
    )
    rejudged = models.PositiveIntegerField(
        default=0, help_text="Samples judged again from their recorded facts."
    )
    executed = models.PositiveIntegerField(default=0, help_text="Samples run again.")
    reasons = models.JSONField(default=dict, blank=True,
                               help_text="Why samples were run again, with their counts.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["comparison_id", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["comparison", "profile"],
                                    name="one_score_per_profile"),
        ]

    def __str__(self) -> str:
        return f"{self.profile} {self.version} on run comparison {self.comparison_id}"


class LanguageCheckPart(models.Model):
    """One language's share of an upload's language check: the sources a worker of that
    language parses in its sandbox (`webapp.runs.upload_checks.language_checks`), and its answers.
    The web request that made it waits for the answers and then deletes it."""

    language = models.CharField(max_length=30)
    sources = models.JSONField(default=list, help_text="The texts to parse, in order.")
    answers = models.JSONField(
        null=True, blank=True,
        help_text="Whether each source parses (null: could not decide); null until answered.")
    error = models.TextField(blank=True, help_text="Why the worker could not parse them.")
    worker = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["created_at"], name="language_check_part_age")]

    def __str__(self) -> str:
        return f"{self.language} language check part {self.pk}"
