"""Background index jobs: ``POST .../index`` starts one and returns its id; ``GET .../jobs/{id}`` shows its
progress, then its report or its error; ``POST .../jobs/{id}/cancel`` asks it to stop.

A job runs :meth:`gemrag.memory.Memory.index` in its own thread with a progress factory (the same
``progress(description, total)`` protocol :func:`gemrag.progress.rich_progress` draws as bars,
:data:`gemrag.strategies.base.ProgressFactory`) that records each stage's counts instead of drawing them. One
job at a time per namespace (a second start gets :class:`JobConflictError` naming the running one); the last
:data:`KEEP_FINISHED` finished jobs are kept for polling.

Cancelling is cooperative (:meth:`JobManager.cancel`): the job is flagged, and its thread stops at the next
progress event of the build (a new stage, or an item of one: between LLM calls or batches, never inside one), or
before the build starts when it is still queued or planning. The build then unwinds as any interrupted build: what it
published before stays, the LLM answers it cached are reused by the next build, and no half-built generation is
ever read. The job ends ``cancelled``.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from gemrag.errors import GemragError
from gemrag.memory.indexing import IndexReport

KEEP_FINISHED = 200
"""Finished jobs kept (oldest dropped first)."""
KEEP_LOG = 500
"""Log lines kept per job (the oldest dropped first, the first line always kept)."""

JobStatus = Literal["queued", "running", "succeeded", "failed", "cancelled"]

FINISHED: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
"""The statuses of a job that has ended."""


class JobConflictError(GemragError):
    """An index job is already queued or running on the namespace."""


class JobCancelled(BaseException):  # noqa: N818 - a stop signal, like KeyboardInterrupt, not an error
    """Raised inside a job's thread, at its next progress event, once the job was asked to stop. A
    ``BaseException`` (as ``KeyboardInterrupt``, which builds are made to survive), so no ``except GemragError``
    or ``except Exception`` of the build records it as an item's failure instead of stopping."""


class UnknownJobError(GemragError):
    """No job has that id in that namespace (never started, or dropped after :data:`KEEP_FINISHED` others)."""


@dataclass
class Stage:
    """One progress stage of a job (one ``progress(description, total)`` call of the strategy).

    Attributes:
        description: what the stage does. total: items it will process. completed: items done so far.
        tokens: LLM completion tokens the stage made generate. note: the stage's last status text.
    """

    description: str
    total: int
    completed: int = 0
    tokens: int = 0
    note: str = ""


@dataclass
class LogLine:
    """One line of a job's log: ``time`` (Unix seconds) and ``text`` (for people: a stage started or ended, its
    status note, cancel asked, the outcome)."""

    time: float
    text: str


@dataclass
class Job:
    """An index job and what is known of it so far (read it through :meth:`JobManager.snapshot`).

    Attributes:
        id: hex id. namespace, strategy: what it indexes (strategy None: the configured one).
        status: ``queued`` / ``running`` / ``succeeded`` / ``failed`` / ``cancelled``. created, started,
            finished: Unix times (seconds; None until reached). stages: progress so far, in order. plan: the build's
            cost plan (:class:`gemrag.memory.index_plan.IndexPlan` as a dict) once made, before its first LLM call.
            report: the
            :class:`~gemrag.memory.indexing.IndexReport` as a dict once succeeded. error: ``{"type", "message"}`` once
            failed. cancel_requested: True once :meth:`JobManager.cancel` asked it to stop (it stops at its next
            progress event). log: what happened so far, one :class:`LogLine` each (at most :data:`KEEP_LOG`).
            failures: the items of the build that failed, in words (``{"document", "passage", "phase",
            "message"}``, :func:`gemrag.server.serialize.failures_since`), recorded by the job's ``run``.
    """

    id: str
    namespace: str
    strategy: str | None
    status: JobStatus = "queued"
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    stages: list[Stage] = field(default_factory=list)
    plan: dict[str, Any] | None = None
    report: dict[str, Any] | None = None
    error: dict[str, str] | None = None
    cancel_requested: bool = False
    log: list[LogLine] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)

    def say(self, text: str) -> None:
        """Append a log line now (the caller holds the manager's lock); beyond :data:`KEEP_LOG` lines the second
        oldest goes (the first says how the job began)."""
        self.log.append(LogLine(time.time(), text))
        if len(self.log) > KEEP_LOG:
            del self.log[1]


class JobManager:
    """Starts index jobs in threads and keeps their state for polling (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}
        self._threads: list[threading.Thread] = []

    def start(self, namespace: str, strategy: str | None, run: Callable[[JobProgress], IndexReport]) -> dict[str, Any]:
        """Start a job running ``run(progress)`` in a new thread.

        Args:
            namespace, strategy: recorded in the job (``run`` does the work).
            run: indexes with the given progress factory (a :class:`JobProgress`, whose ``plan`` records the cost
                plan) and returns the report; a
                :class:`~gemrag.errors.GemragError` or ``ValueError`` it raises fails the job with its message,
                any other exception fails it as an internal error.

        Returns:
            The new job's snapshot (see :meth:`snapshot`).

        Raises:
            JobConflictError: a job is queued or running on ``namespace``.
        """
        with self._lock:
            active = [j for j in self._jobs.values() if j.namespace == namespace and j.status not in FINISHED]
            if active:
                raise JobConflictError(
                    f"index job {active[0].id} is already {active[0].status} on namespace {namespace!r}; "
                    "poll it and start another when it has finished"
                )
            job = Job(uuid.uuid4().hex, namespace, strategy)
            job.say(f"queued: index {strategy or 'the configured strategy'}")
            self._jobs[job.id] = job
            self._forget_old()
            thread = threading.Thread(target=self._run, args=(job, run), name=f"gemrag-index-{job.id}", daemon=True)
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()
        return self.snapshot(namespace, job.id)

    def snapshot(self, namespace: str, job_id: str) -> dict[str, Any]:
        """A copy of the job's state as a dict (the fields of :class:`Job`).

        Raises:
            UnknownJobError: no job ``job_id`` in ``namespace`` (a job of another namespace is not shown).
        """
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.namespace != namespace:
                raise UnknownJobError(f"no index job {job_id!r} in namespace {namespace!r}")
            return asdict(job)

    def cancel(self, namespace: str, job_id: str) -> dict[str, Any]:
        """Ask a job to stop (cooperatively, see the module docstring) and return its snapshot. A job that has
        already ended is returned unchanged; asking twice is the same as asking once.

        Raises:
            UnknownJobError: no job ``job_id`` in ``namespace``.
        """
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.namespace != namespace:
                raise UnknownJobError(f"no index job {job_id!r} in namespace {namespace!r}")
            if job.status not in FINISHED and not job.cancel_requested:
                job.cancel_requested = True
                job.say("cancel asked: the job stops when the LLM call in flight has ended (never inside one)")
        return self.snapshot(namespace, job_id)

    def jobs(self, namespace: str) -> list[dict[str, Any]]:
        """Snapshots of the namespace's jobs, oldest first."""
        with self._lock:
            return [asdict(j) for j in self._jobs.values() if j.namespace == namespace]

    def wait(self, timeout: float | None = None) -> None:
        """Wait for the running jobs' threads to end (at most ``timeout`` seconds each)."""
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)

    def _forget_old(self) -> None:
        done = [j for j in self._jobs.values() if j.status in FINISHED]
        for job in done[: max(0, len(done) - KEEP_FINISHED)]:
            del self._jobs[job.id]

    def _run(self, job: Job, run: Callable[[JobProgress], IndexReport]) -> None:
        with self._lock:
            job.status, job.started = "running", time.time()
            job.say("running")
        try:
            progress = self._progress(job)
            progress.check()  # cancelled while queued
            report = run(progress)
        except JobCancelled:
            self._finish(job, cancelled=True)
        except (GemragError, ValueError) as exc:
            self._finish(job, error={"type": type(exc).__name__, "message": str(exc)})
        except Exception as exc:  # noqa: BLE001 - a job thread must record every failure, not die silently
            self._finish(job, error={"type": "InternalError", "message": f"{type(exc).__name__}: {exc}"})
        else:
            self._finish(job, report=asdict(report))

    def _finish(
        self,
        job: Job,
        *,
        report: dict[str, Any] | None = None,
        error: dict[str, str] | None = None,
        cancelled: bool = False,
    ) -> None:
        with self._lock:
            job.report, job.error = report, error
            job.status = "cancelled" if cancelled else "failed" if error is not None else "succeeded"
            job.finished = time.time()
            if error is not None:
                job.say(f"failed: {error['type']}: {error['message']}")
            elif cancelled:
                done = ", ".join(f"{s.description} {s.completed} of {s.total} done" for s in job.stages)
                job.say("cancelled" + (f" ({done})" if done else " before its first stage"))
            else:
                job.say("succeeded")

    def _progress(self, job: Job) -> JobProgress:
        return JobProgress(job, self._lock)


class JobProgress:
    """The progress factory a job's ``run`` gets (``progress(description, total)``, as
    :data:`gemrag.strategies.base.ProgressFactory`): each stage's counts go to the job instead of a bar, and
    :meth:`plan` records the build's cost plan. Each of them raises :class:`JobCancelled` once the job was asked
    to stop (:meth:`check`), which unwinds the build."""

    def __init__(self, job: Job, lock: threading.Lock) -> None:
        self._job, self._lock = job, lock

    def check(self) -> None:
        """Raise :class:`JobCancelled` when the job was asked to stop.

        Raises:
            JobCancelled: :meth:`JobManager.cancel` was called on the job.
        """
        with self._lock:
            if self._job.cancel_requested:
                raise JobCancelled(f"index job {self._job.id} was cancelled")

    def failures(self, failures: list[dict[str, Any]]) -> None:
        """Record the build's failed items in words (see :class:`Job`), one log line each."""
        with self._lock:
            self._job.failures = list(failures)
            for f in failures:
                where = f"{f['document']!r}, passage {f['passage']}" if f.get("document") else "a derived node"
                self._job.say(f"failed item ({where}): {f['message']}")

    def plan(self, plan: dict[str, Any]) -> None:
        """Record the build's cost plan (:meth:`gemrag.memory.index_plan.IndexPlan.model_dump`, JSON mode) in the job,
        then stop if the job was cancelled meanwhile (before the build's first LLM call)."""
        with self._lock:
            self._job.plan = plan
            calls, minutes = plan.get("calls"), plan.get("minutes")
            self._job.say(
                f"plan: {calls} LLM calls" + (f", about {minutes:.1f} minutes" if isinstance(minutes, float) else "")
            )
        self.check()

    @contextmanager
    def __call__(self, description: str, total: int) -> Iterator[Callable[..., None]]:
        """One stage of ``total`` items: yields ``advance(n=1, *, tokens=0, note=None)``.

        Raises:
            JobCancelled: at the stage's start or at an ``advance``, once the job was asked to stop.
        """
        self.check()
        stage = Stage(description, int(total))
        with self._lock:
            self._job.stages.append(stage)
            self._job.say(f"{description}: {stage.total} item{'' if stage.total == 1 else 's'}")

        def advance(n: int = 1, *, tokens: int = 0, note: str | None = None) -> None:
            with self._lock:
                stage.completed += n
                stage.tokens += tokens
                if note is not None and note != stage.note:
                    stage.note = note
                    self._job.say(f"{description}: {note}")
            self.check()

        yield advance
        with self._lock:
            self._job.say(f"{description}: {stage.completed} of {stage.total} done")
