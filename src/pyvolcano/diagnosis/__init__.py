"""Structured pending diagnosis: why a job did not get what it needs, and what would unblock it.

:mod:`pyvolcano.diagnosis.model` holds the typed result (:class:`Diagnosis` and its parts,
the :class:`Reason` codes and :class:`Stage` names, documented in docs/reasons.md);
:mod:`pyvolcano.diagnosis.diagnose` computes it at session close.
"""

from pyvolcano.diagnosis.model import (
    STAGE_OF,
    Diagnosis,
    PreemptionInfo,
    QueueQuota,
    Reason,
    ResourceFigure,
    Stage,
    TaskCounts,
)

__all__ = [
    "STAGE_OF",
    "Diagnosis",
    "PreemptionInfo",
    "QueueQuota",
    "Reason",
    "ResourceFigure",
    "Stage",
    "TaskCounts",
]
