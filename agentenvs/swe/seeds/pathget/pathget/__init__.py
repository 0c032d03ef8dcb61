"""pathget: path-based access to nested dicts and lists."""

from .access import delete_path, get, get_all, has_path, set_path
from .flat import flatten, unflatten
from .paths import WILDCARD, PathError, format_path, parse_path

__all__ = [
    "WILDCARD",
    "PathError",
    "delete_path",
    "flatten",
    "format_path",
    "get",
    "get_all",
    "has_path",
    "parse_path",
    "set_path",
    "unflatten",
]
