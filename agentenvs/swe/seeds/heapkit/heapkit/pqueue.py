"""A stable priority queue with update and remove (lazy deletion)."""

from .heap import heap_pop, heap_push

_PRIORITY, _SEQ, _ITEM, _ALIVE = 0, 1, 2, 3


class PriorityQueue:
    """Queue of unique hashable items ordered by priority.

    Lowest priority first (highest first when ``reverse`` is True); ties pop in insertion order.
    """

    def __init__(self, reverse=False):
        self._heap = []
        self._entries = {}
        self._counter = 0
        self._reverse = reverse

    def __len__(self):
        return len(self._entries)

    def __contains__(self, item):
        return item in self._entries

    def push(self, item, priority=0):
        """Add ``item``; KeyError if it is already queued."""
        if item in self._entries:
            raise KeyError(f"{item!r} is already queued")
        key = -priority if self._reverse else priority
        entry = [key, self._counter, item, True]
        self._counter += 1
        self._entries[item] = entry
        heap_push(self._heap, entry)

    def priority(self, item):
        """Current priority of ``item``; KeyError if absent."""
        return self._entries[item][_PRIORITY] * (-1 if self._reverse else 1)

    def remove(self, item):
        """Remove ``item`` and return its priority; KeyError if absent."""
        priority = self.priority(item)
        entry = self._entries.pop(item)
        entry[_ALIVE] = False
        return priority

    def update(self, item, priority):
        """Change the priority of a queued item (it moves behind items of equal priority)."""
        self.remove(item)
        self.push(item, priority)

    def _discard_removed(self):
        for _ in range(len(self._heap)):
            if self._heap[0][_ALIVE]:
                break
            heap_pop(self._heap)

    def peek(self):
        """``(item, priority)`` of the next item, without removing it."""
        if not self._entries:
            raise IndexError("peek at an empty queue")
        self._discard_removed()
        entry = self._heap[0]
        return entry[_ITEM], self.priority(entry[_ITEM])

    def pop(self):
        """Remove and return ``(item, priority)`` of the next item."""
        item, priority = self.peek()
        self.remove(item)
        return item, priority

    def drain(self):
        """Pop everything; returns the ``(item, priority)`` pairs in order."""
        return [self.pop() for _ in range(len(self))]
