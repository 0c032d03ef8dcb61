"""Get, set and delete values in nested dicts and lists by path."""

from .paths import WILDCARD, PathError, parse_path

_MISSING = object()


def _is_index(key):
    return isinstance(key, int) and not isinstance(key, bool)


def _step(current, key):
    """One lookup step; raises LookupError or TypeError when the key is absent."""
    if isinstance(current, dict):
        return current[key]
    if isinstance(current, (list, tuple)) and _is_index(key):
        return current[key]
    raise TypeError(f"cannot index {type(current).__name__} with {key!r}")


def _concrete(path):
    segments = parse_path(path)
    if WILDCARD in segments:
        raise PathError(f"wildcards are not allowed here: {path!r}")
    return segments


def get(obj, path, default=None):
    """Value at ``path`` in ``obj``, or ``default`` if any step is missing."""
    current = obj
    for key in _concrete(path):
        try:
            current = _step(current, key)
        except (LookupError, TypeError):
            return default
    return current


def has_path(obj, path):
    """True if ``path`` exists in ``obj`` (even when the value there is None)."""
    return get(obj, path, _MISSING) is not _MISSING


def get_all(obj, path):
    """All values matching ``path``, where ``*`` / ``[*]`` matches every dict value or list item."""
    matches = [obj]
    for key in parse_path(path):
        found = []
        for item in matches:
            if key is WILDCARD:
                if isinstance(item, dict):
                    found.extend(item.values())
                elif isinstance(item, list):
                    found.extend(item)
                continue
            try:
                found.append(_step(item, key))
            except (LookupError, TypeError):
                continue
        matches = found
    return matches


def _list_index(items, key, path):
    if not _is_index(key):
        raise PathError(f"list index must be an int, got {key!r} in {path!r}")
    if key < -len(items) or key >= len(items):
        raise IndexError(f"index {key} out of range in {path!r}")
    return key if key >= 0 else key + len(items)


def set_path(obj, path, value, create=True):
    """Set the value at ``path``, creating missing dicts/lists when ``create`` is True.

    Setting index ``len(list)`` appends. Returns ``obj``.
    """
    segments = _concrete(path)
    if not segments:
        raise PathError("cannot set the empty path")
    current = obj
    for position, key in enumerate(segments[:-1]):
        following = segments[position + 1]
        if isinstance(current, list):
            if create and key == len(current):
                current.append([] if _is_index(following) else {})
            current = current[_list_index(current, key, path)]
            continue
        if not isinstance(current, dict):
            raise PathError(f"cannot descend into {type(current).__name__} in {path!r}")
        if key not in current:
            if not create:
                raise KeyError(key)
            current[key] = [] if _is_index(following) else {}
        current = current[key]
    last = segments[-1]
    if isinstance(current, list):
        if last == len(current):
            current.append(value)
        else:
            current[_list_index(current, last, path)] = value
    elif isinstance(current, dict):
        current[last] = value
    else:
        raise PathError(f"cannot set a key on {type(current).__name__} in {path!r}")
    return obj


def delete_path(obj, path, missing_ok=False):
    """Delete the value at ``path``; returns True if something was deleted."""
    segments = _concrete(path)
    if not segments:
        raise PathError("cannot delete the empty path")
    parent = get(obj, segments[:-1], _MISSING)
    last = segments[-1]
    present = parent is not _MISSING and has_path(parent, [last])
    if not present:
        if missing_ok:
            return False
        raise KeyError(f"path not found: {path!r}")
    del parent[last]
    return True
