"""Algorithms built on the heap functions."""

from .heap import heap_pop, heap_push, heap_replace, heapify


def k_smallest(items, k, key=None):
    """The ``k`` smallest items in ascending order (stable for equal keys)."""
    if k < 0:
        raise ValueError("k must be non-negative")
    decorated = [(item if key is None else key(item), i, item) for i, item in enumerate(items)]
    heapify(decorated)
    count = min(k, len(decorated))
    return [heap_pop(decorated)[2] for _ in range(count)]


def k_largest(items, k):
    """The ``k`` largest items in descending order, keeping a heap of at most ``k`` items."""
    if k < 0:
        raise ValueError("k must be non-negative")
    if k == 0:
        return []
    heap = []
    for item in items:
        if len(heap) < k:
            heap_push(heap, item)
        elif item > heap[0]:
            heap_replace(heap, item)
    result = [heap_pop(heap) for _ in range(len(heap))]
    result.reverse()
    return result


def merge_sorted(*lists):
    """Merge already-sorted lists into one sorted list; equal items keep list order."""
    heap = [(lst[0], i, 0) for i, lst in enumerate(lists) if lst]
    heapify(heap)
    merged = []
    total = sum(len(lst) for lst in lists)
    for _ in range(total):
        value, source, position = heap[0]
        merged.append(value)
        if position + 1 < len(lists[source]):
            heap_replace(heap, (lists[source][position + 1], source, position + 1))
        else:
            heap_pop(heap)
    return merged


def running_median(values):
    """Median after each value; the mean of the two middle values for even counts."""
    lower = []  # max-heap of the smaller half, stored negated
    upper = []  # min-heap of the larger half
    medians = []
    for value in values:
        if lower and value > -lower[0]:
            heap_push(upper, value)
        else:
            heap_push(lower, -value)
        if len(lower) > len(upper) + 1:
            heap_push(upper, -heap_pop(lower))
        elif len(upper) > len(lower):
            heap_push(lower, -heap_pop(upper))
        if len(lower) > len(upper):
            medians.append(-lower[0])
        else:
            medians.append((-lower[0] + upper[0]) / 2)
    return medians
