"""A sweep pass: what it did (its result) and where it stands (a position row per stage, locked
for the pass so two passes never read or group the same rows)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from apps.knowledge.gaps.models import KnowledgeGapSweep


@dataclass
class SweepResult:
    steps: int = 0
    occurrences: int = 0
    retrievals: int = 0
    grouped: int = 0
    new_groups: int = 0
    reopened: int = 0
    pruned: int = 0
    busy: bool = False

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def _sweep_row(name: str) -> KnowledgeGapSweep | None:
    """The sweep's position, locked for this transaction; None when another pass holds it."""
    KnowledgeGapSweep.objects.get_or_create(name=name, defaults={"updated_at": timezone.now()})
    return KnowledgeGapSweep.objects.select_for_update(skip_locked=True).filter(name=name).first()
