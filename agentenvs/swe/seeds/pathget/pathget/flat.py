"""Flatten nested dicts/lists into single-level dicts and back."""


def _flatten_into(out, value, prefix, sep, depth, max_depth):
    if max_depth is not None and depth >= max_depth:
        out[prefix] = value
        return
    if isinstance(value, dict) and value:
        items = value.items()
    elif isinstance(value, list) and value:
        items = enumerate(value)
    else:
        out[prefix] = value
        return
    for key, child in items:
        key = str(key)
        if sep in key:
            raise ValueError(f"key {key!r} contains the separator {sep!r}")
        child_prefix = f"{prefix}{sep}{key}" if depth > 0 else key
        _flatten_into(out, child, child_prefix, sep, depth + 1, max_depth)


def flatten(obj, sep=".", max_depth=None):
    """Flatten ``obj`` to ``{"a.b": 1, "a.c.0": 2}``; list items use their index as key.

    Empty dicts and lists are kept as leaf values. With ``max_depth``, nesting below that many
    levels is kept as is.
    """
    if not isinstance(obj, dict):
        raise TypeError("flatten expects a dict")
    if not obj:
        return {}
    out = {}
    _flatten_into(out, obj, "", sep, 0, max_depth)
    return out


def _restore_lists(node):
    """Turn dicts whose keys are exactly "0".."n-1" back into lists, recursively."""
    if not isinstance(node, dict):
        return node
    converted = {key: _restore_lists(child) for key, child in node.items()}
    keys = list(converted)
    if not keys or not all(key.isdigit() for key in keys):
        return converted
    if sorted(int(key) for key in keys) != list(range(len(keys))):
        return converted
    return [converted[str(index)] for index in range(len(keys))]


def unflatten(flat, sep=".", lists=True):
    """Inverse of :func:`flatten`; ``lists=False`` keeps digit keys as dict keys."""
    root = {}
    for flat_key, value in flat.items():
        parts = flat_key.split(sep)
        current = root
        for part in parts[:-1]:
            child = current.setdefault(part, {})
            if not isinstance(child, dict):
                raise ValueError(f"conflicting keys at {flat_key!r}")
            current = child
        if parts[-1] in current:
            raise ValueError(f"conflicting keys at {flat_key!r}")
        current[parts[-1]] = value
    if lists:
        return _restore_lists(root)
    return root
