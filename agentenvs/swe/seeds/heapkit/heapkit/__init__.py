"""heapkit: binary heaps, a stable priority queue and heap-based algorithms."""

from .algorithms import k_largest, k_smallest, merge_sorted, running_median
from .heap import (
    MinHeap,
    heap_pop,
    heap_push,
    heap_pushpop,
    heap_replace,
    heap_sort,
    heapify,
    is_heap,
    sift_down,
    sift_up,
)
from .pqueue import PriorityQueue

__all__ = [
    "MinHeap",
    "PriorityQueue",
    "heap_pop",
    "heap_push",
    "heap_pushpop",
    "heap_replace",
    "heap_sort",
    "heapify",
    "is_heap",
    "k_largest",
    "k_smallest",
    "merge_sorted",
    "running_median",
    "sift_down",
    "sift_up",
]
