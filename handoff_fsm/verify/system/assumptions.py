"""What the world of ``check --system`` assumes about everything the project does not control.

Rule kept here: every choice the world makes about the workers, the network, time and
the client lives in one record, :class:`SystemAssumptions`, and nowhere else; every
report (the text header, ``--json``, the review, the counterexample files, the
inspector page) prints :meth:`SystemAssumptions.items`, so a verdict is never read
without what it rests on. What can be varied is a field whose default is the weaker,
realistic choice; what cannot is a *limit*, printed all the same. This module names
and words them; the world (:mod:`~handoff_fsm.verify.system.world`) and the search
(:mod:`~handoff_fsm.verify.system.search`) obey them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from itertools import product
from typing import Final, NamedTuple


class Answers(StrEnum):
    """How a worker answers an action delivered to it again (a network duplicate, or a
    cleanup action the policy re-sends after its acknowledgement timer fired)."""

    BY_STATE = "by-state"
    """From what it holds when the copy arrives: the action names the request, not the
    coordinator's action id (the reference's ``CancelSource { handoff_id }``), so a real
    worker cannot recall its earlier answer. A repeated cancel of what it already freed
    is ``Noop``; a repeated ``SubmitPrefill`` of a request it holds is refused as a busy
    worker refuses one. The default: what a real worker does."""
    BY_ID = "by-id"
    """Exactly as it answered the first copy, changing nothing: an idempotent worker that
    remembers every action id it answered. Stronger than any worker this project
    drives: a verdict that holds only under it is no promise about real workers."""


class Workers(StrEnum):
    """What an honest worker does with work on a request it was already told to cancel.

    A cancel can reach a worker before the action it cancels: the network reorders,
    and the policy's deadline may cancel an action whose acknowledgement has not come.
    """

    REMEMBERING = "remembering"
    """It remembers the cancel and refuses the later work (``Failed``), as a worker
    does whose cancel stops the request's own context (Dynamo cancels a request by
    stopping its context, so a request canceled before it starts never runs). The
    default: the realistic reading of the workers this project drives."""
    FORGETFUL = "forgetful"
    """It answers the cancel of nothing ``Noop``, forgets it, and takes the later
    work: the literal reading of DESIGN §10, under which a cancel that overtakes its
    action leaves the worker holding the KV."""


class Assumption(NamedTuple):
    """One assumption, as every report prints it."""

    key: str
    """Its name in ``--json``'s ``assumptions`` object."""
    value: str | int | bool
    text: str
    """What it means, in words."""
    varied: bool
    """It is a setting (``--answers``, ``--workers``, ``--losses``, ``--duplicates``);
    otherwise a limit of the model, printed so that it is not hidden."""

    @property
    def role(self) -> str:
        """``setting`` or ``limit``, as every report names it."""
        return "setting" if self.varied else "limit"

    @property
    def shown(self) -> str:
        """The value as every text report prints it (``true``, not ``True``)."""
        return str(self.value).lower() if isinstance(self.value, bool) else str(self.value)


WORKER_FAILURES: Final = 1
"""How many times each worker may fail in a run (it frees what it holds, sends ``Failed``)."""
CLIENT_CANCELS: Final = 1
"""How many times the client may cancel in a run (at any moment, also after Success)."""
HANDOFFS: Final = 1
"""Handoffs in one world."""


@dataclass(frozen=True, slots=True)
class SystemAssumptions:
    """Every choice the world makes about what the project does not control.

    The fields are what ``check --system`` can vary, each defaulting to the weaker,
    realistic choice; :meth:`items` adds the limits of the model, which it cannot.
    """

    answers: Answers = Answers.BY_STATE
    """How a worker answers an action delivered again (``--answers``)."""
    workers: Workers = Workers.REMEMBERING
    """What a worker does with work on a request it was told to cancel (``--workers``)."""
    losses: int = 0
    """Messages the network may lose in a run, at most (``--losses``)."""
    duplicates: int = 0
    """Messages the network may duplicate in a run, at most (``--duplicates``)."""

    def items(self) -> tuple[Assumption, ...]:
        """Every assumption, settings and limits, in the order every report prints them."""
        answers = (
            "a worker answers an action delivered again from what it holds when it arrives "
            "(a repeated cancel of what it freed is Noop, a repeated SubmitPrefill of a request "
            "it holds is refused as busy)"
            if self.answers is Answers.BY_STATE
            else "a worker answers an action delivered again exactly as it answered it the "
            "first time, changing nothing (an idempotent worker: stronger than real workers)"
        )
        workers = (
            "a worker told to cancel a request refuses later work on it"
            if self.workers is Workers.REMEMBERING
            else "a worker told to cancel a request it does not hold forgets it, and takes "
            "later work on it"
        )
        return (
            Assumption("answers", self.answers.value, answers, varied=True),
            Assumption("workers", self.workers.value, workers, varied=True),
            Assumption(
                "worker_failures",
                WORKER_FAILURES,
                f"each worker may fail {_times(WORKER_FAILURES)} in a run, at any moment it "
                "holds the request (it frees what it holds and sends Failed); not more often",
                varied=False,
            ),
            Assumption(
                "client_cancels",
                CLIENT_CANCELS,
                f"the client may cancel {_times(CLIENT_CANCELS)}, at any moment, also after "
                "Success while the destination decodes; its Canceled reaches the session as "
                "it is sent",
                varied=False,
            ),
            Assumption(
                "reordering",
                True,
                "the network may deliver any message in flight next: every order is explored",
                varied=False,
            ),
            Assumption(
                "losses",
                self.losses,
                f"the network may lose up to {_count(self.losses, 'message')} in a run",
                varied=True,
            ),
            Assumption(
                "duplicates",
                self.duplicates,
                f"the network may duplicate up to {_count(self.duplicates, 'message')} in a run",
                varied=True,
            ),
            Assumption(
                "time",
                "abstract",
                "an armed timer of the policy may fire at any moment until it is disarmed: an "
                "over-approximation of every timing, so a property that holds holds for all "
                "of them, and a counterexample may need a timing that a given deployment "
                "never sees",
                varied=False,
            ),
            Assumption(
                "handoffs",
                HANDOFFS,
                "one handoff per world: interference between handoffs that share a worker "
                "is not explored",
                varied=False,
            ),
        )

    def to_json(self) -> dict[str, str | int | bool]:
        """``--json``'s ``assumptions`` object: one key per assumption, with its value."""
        return {item.key: item.value for item in self.items()}

    def header(self) -> list[str]:
        """The assumptions as the lines a text report opens with (settings marked as
        such, limits as limits)."""
        return [f"{item.key} = {item.shown} ({item.role}): {item.text}" for item in self.items()]

    def label(self) -> str:
        """The settings in a few words (a column of the matrix)."""
        return f"{self.answers.value}, {self.workers.value}"


def matrix(given: SystemAssumptions) -> tuple[SystemAssumptions, ...]:
    """Every combination of the assumptions that can be varied but the budgets, with the
    budgets of ``given``: ``check --system --matrix``'s columns, the default first."""
    return tuple(
        replace(given, answers=answers, workers=workers)
        for answers, workers in product(Answers, Workers)
    )


def _times(number: int) -> str:
    return "once" if number == 1 else f"{number} times"


def _count(number: int, noun: str) -> str:
    return f"1 {noun}" if number == 1 else f"{number} {noun}s"
