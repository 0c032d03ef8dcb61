import pytest
from heapkit import PriorityQueue


def make():
    queue = PriorityQueue()
    for item, priority in [("write", 2), ("read", 1), ("sleep", 3), ("eat", 1)]:
        queue.push(item, priority)
    return queue


def test_pop_order_is_stable():
    assert make().drain() == [("read", 1), ("eat", 1), ("write", 2), ("sleep", 3)]


def test_default_priority_is_zero():
    queue = make()
    queue.push("urgent")
    assert queue.pop() == ("urgent", 0)


def test_len_and_contains():
    queue = make()
    assert len(queue) == 4
    assert "eat" in queue
    queue.pop()
    assert "read" not in queue
    assert len(queue) == 3


def test_push_duplicate_raises():
    with pytest.raises(KeyError):
        make().push("read", 5)


def test_peek_does_not_remove():
    queue = make()
    assert queue.peek() == ("read", 1)
    assert len(queue) == 4


def test_update_changes_order():
    queue = make()
    queue.update("sleep", 0)
    queue.update("read", 1)
    assert queue.drain() == [("sleep", 0), ("eat", 1), ("read", 1), ("write", 2)]


def test_remove():
    queue = make()
    assert queue.remove("read") == 1
    assert queue.peek() == ("eat", 1)
    assert queue.priority("sleep") == 3
    with pytest.raises(KeyError):
        queue.remove("read")


def test_remove_all_then_empty():
    queue = make()
    for item in ["read", "eat", "write", "sleep"]:
        queue.remove(item)
    assert len(queue) == 0
    with pytest.raises(IndexError):
        queue.pop()


def test_reverse_queue():
    queue = PriorityQueue(reverse=True)
    for item, priority in [("a", 1), ("b", 5), ("c", 3), ("d", 5)]:
        queue.push(item, priority)
    assert queue.priority("b") == 5
    assert queue.drain() == [("b", 5), ("d", 5), ("c", 3), ("a", 1)]
