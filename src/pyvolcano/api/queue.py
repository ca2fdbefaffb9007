"""QueueInfo: the scheduler's view of a Queue (upstream pkg/scheduler/api/queue_info.go)."""

from __future__ import annotations

from pyvolcano.api.names import HIERARCHY_KEY, HIERARCHY_WEIGHTS_KEY
from pyvolcano.api.objects import Queue
from pyvolcano.api.resource import Resource

__all__ = ["QueueInfo"]


class QueueInfo:
    __slots__ = ("hierarchy", "name", "queue", "uid", "weight", "weights")

    def __init__(self, queue: Queue):
        self.queue = queue
        self.uid = queue.name
        self.name = queue.name
        self.weight = queue.weight
        self.hierarchy = queue.annotations.get(HIERARCHY_KEY, "")
        self.weights = queue.annotations.get(HIERARCHY_WEIGHTS_KEY, "")

    @property
    def reclaimable(self) -> bool:
        return self.queue.reclaimable

    @property
    def state(self) -> str:
        return self.queue.state or "Open"

    @property
    def is_open(self) -> bool:
        return self.state == "Open"

    @property
    def priority(self) -> int:
        return self.queue.priority

    @property
    def parent(self) -> str:
        return self.queue.parent

    @property
    def creation_timestamp(self) -> float:
        return self.queue.creation_timestamp

    def capability(self) -> Resource | None:
        return None if self.queue.capability is None else Resource.from_list(self.queue.capability)

    def deserved(self) -> Resource | None:
        return None if self.queue.deserved is None else Resource.from_list(self.queue.deserved)

    def guarantee(self) -> Resource | None:
        return None if self.queue.guarantee is None else Resource.from_list(self.queue.guarantee)

    def __repr__(self) -> str:
        return f"Queue<{self.name}>"
