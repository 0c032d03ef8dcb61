import pytest
from heapkit import (
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


def test_heapify_layout():
    assert heapify([5, 3, 8, 1, 9, 2]) == [1, 3, 2, 5, 9, 8]
    assert heapify([9, 8, 7, 6, 5, 4, 3, 2, 1]) == [1, 2, 3, 6, 5, 4, 7, 8, 9]


def test_heapify_small_inputs():
    assert heapify([]) == []
    assert heapify([4]) == [4]
    assert heapify([2, 1]) == [1, 2]


def test_is_heap():
    assert is_heap([1, 3, 2, 5, 9, 8]) is True
    assert is_heap([1, 3, 2, 0]) is False
    assert is_heap([2, 2, 2]) is True
    assert is_heap([]) is True


def test_sift_up_and_down():
    items = [3, 1, 2]
    sift_up(items, 2)
    assert items == [2, 1, 3]
    items = [9, 1, 2, 0]
    sift_down(items, 0)
    assert items == [1, 0, 2, 9]


def test_sift_down_respects_size():
    items = [9, 5, 1]
    sift_down(items, 0, size=2)
    assert items == [5, 9, 1]


def test_push_layout():
    heap = []
    for x in [4, 7, 1, 9, 3]:
        heap_push(heap, x)
    assert heap == [1, 3, 4, 9, 7]


def test_pop_layout_and_order():
    heap = [1, 3, 2, 5, 9, 8]
    assert heap_pop(heap) == 1
    assert heap == [2, 3, 8, 5, 9]
    assert [heap_pop(heap) for _ in range(5)] == [2, 3, 5, 8, 9]
    with pytest.raises(IndexError):
        heap_pop(heap)


def test_pop_single_item():
    heap = [7]
    assert heap_pop(heap) == 7
    assert heap == []


def test_replace():
    heap = [1, 3, 2, 5, 9, 8]
    assert heap_replace(heap, 7) == 1
    assert heap == [2, 3, 7, 5, 9, 8]
    assert heap_replace([4], 0) == 4
    with pytest.raises(IndexError):
        heap_replace([], 1)


def test_pushpop():
    heap = [1, 3, 2, 5, 9, 8]
    assert heap_pushpop(heap, 4) == 1
    assert heap == [2, 3, 4, 5, 9, 8]
    assert heap_pushpop([2, 3], 1) == 1
    assert heap_pushpop([2, 3], 2) == 2
    assert heap_pushpop([1, 5], 3) == 1
    assert heap_pushpop([], 5) == 5


def test_heap_sort():
    assert heap_sort([5, 1, 4, 1, 3, 9, 2]) == [1, 1, 2, 3, 4, 5, 9]
    assert heap_sort([]) == []
    assert heap_sort(["b", "c", "a"]) == ["a", "b", "c"]


def test_min_heap_class():
    heap = MinHeap([5, 3, 8])
    assert len(heap) == 3
    assert heap.peek() == 3
    heap.push(1)
    assert heap.as_list() == [1, 3, 8, 5]
    assert heap.pop() == 1
    assert heap.replace(10) == 3
    assert heap.pushpop(4) == 4
    assert heap.as_list() == [5, 10, 8]


def test_min_heap_empty():
    heap = MinHeap()
    assert bool(heap) is False
    assert len(heap) == 0
    with pytest.raises(IndexError):
        heap.peek()
    heap.push(2)
    assert bool(heap) is True
