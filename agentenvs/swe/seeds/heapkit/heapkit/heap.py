"""Binary min-heap operations on plain lists, and a small :class:`MinHeap` wrapper.

The smallest item is at index 0 and ``heap[i] <= heap[2*i + 1]``, ``heap[i] <= heap[2*i + 2]``.
"""


def sift_up(heap, index):
    """Move ``heap[index]`` up until its parent is not larger."""
    item = heap[index]
    for _ in range(len(heap)):
        if index <= 0:
            break
        parent = (index - 1) // 2
        if heap[parent] <= item:
            break
        heap[index] = heap[parent]
        index = parent
    heap[index] = item


def sift_down(heap, index, size=None):
    """Move ``heap[index]`` down within the first ``size`` items until no child is smaller."""
    size = len(heap) if size is None else size
    item = heap[index]
    for _ in range(size):
        child = 2 * index + 1
        if child >= size:
            break
        right = child + 1
        if right < size and heap[right] < heap[child]:
            child = right
        if item <= heap[child]:
            break
        heap[index] = heap[child]
        index = child
    heap[index] = item


def heapify(items):
    """Rearrange ``items`` in place into heap order and return it."""
    for index in range(len(items) // 2 - 1, -1, -1):
        sift_down(items, index)
    return items


def is_heap(items):
    """True if ``items`` satisfies the min-heap property."""
    for index in range(1, len(items)):
        if items[(index - 1) // 2] > items[index]:
            return False
    return True


def heap_push(heap, item):
    """Add ``item`` to ``heap``."""
    heap.append(item)
    sift_up(heap, len(heap) - 1)


def heap_pop(heap):
    """Remove and return the smallest item; IndexError if the heap is empty."""
    if not heap:
        raise IndexError("pop from an empty heap")
    last = heap.pop()
    if not heap:
        return last
    smallest = heap[0]
    heap[0] = last
    sift_down(heap, 0)
    return smallest


def heap_replace(heap, item):
    """Pop the smallest item, then push ``item`` (the result may be larger than ``item``)."""
    if not heap:
        raise IndexError("replace on an empty heap")
    smallest = heap[0]
    heap[0] = item
    sift_down(heap, 0)
    return smallest


def heap_pushpop(heap, item):
    """Push ``item``, then pop and return the smallest item (faster than two calls)."""
    if heap and heap[0] < item:
        item, heap[0] = heap[0], item
        sift_down(heap, 0)
    return item


def heap_sort(items):
    """A new ascending list with the items of ``items``."""
    heap = heapify(list(items))
    return [heap_pop(heap) for _ in range(len(heap))]


class MinHeap:
    """Object wrapper around the list functions."""

    def __init__(self, items=()):
        self._items = heapify(list(items))

    def __len__(self):
        return len(self._items)

    def __bool__(self):
        return len(self._items) > 0

    def peek(self):
        """The smallest item, without removing it."""
        if not self._items:
            raise IndexError("peek at an empty heap")
        return self._items[0]

    def push(self, item):
        heap_push(self._items, item)

    def pop(self):
        return heap_pop(self._items)

    def replace(self, item):
        return heap_replace(self._items, item)

    def pushpop(self, item):
        return heap_pushpop(self._items, item)

    def as_list(self):
        """A copy of the underlying list, in heap order."""
        return list(self._items)
