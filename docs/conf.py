"""Sphinx configuration of the agentenvs docs site (built by scripts/build_docs.sh).

Why Sphinx and not MkDocs: the docstrings are reStructuredText and hold about 2,000 Sphinx roles
(:class:`...`, :func:`...`, :mod:`...`, :data:`...`). Sphinx's autodoc renders them natively and
resolves them into links across the API reference; mkdocstrings would show them as raw text unless
every docstring were rewritten. The Markdown pages under docs/ are read by myst-parser, so they
stay plain Markdown that also reads well on the repository page.

The build is strict: ``sphinx-build -W --keep-going`` turns every warning into a failure, a
relative link to a page or a repository file that does not exist included (myst's cross-reference
check). External links are not checked (the build machines are offline).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import pkgutil
import sys

# agentenvs must be installed (scripts/test.sh installs it editable): agentenvs.wrappers and
# agentenvs.learners exist only under the install's package-dir mapping, not on a bare sys.path.
project = "agentenvs"
author = "the agentenvs authors"
copyright = "the agentenvs authors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "**/_build"]
# Docstrings write ``code`` for literals and `x` for an interpreted name: both render as code.
default_role = "code"

# Markdown (myst-parser): GitHub-style heading anchors so that page.md#a-heading links resolve.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
# A relative link to a missing page, heading or file is a warning, and -W makes it fail.
myst_all_links_external = False

# API reference: one page per module, written by api_pages() below into docs/api/_generated.
API_PACKAGES = ("agentenvs", "agentenvs.wrappers", "agentenvs.learners")
autodoc_default_options = {
    "members": True,
    "show-inheritance": True,
    "member-order": "bysource",
}
autodoc_typehints = "signature"  # field-list types would resolve fuzzily (ambiguous short names)
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
# Optional frameworks that an adapter imports at module level: mocked only where not installed
# (the docs extra does not pull verl or TRL; their adapters' docstrings still render).
autodoc_mock_imports = [
    name
    for name in (
        "verl omegaconf transfer_queue trl datasets ray vllm stable_baselines3 skyrl_gym"
        " verifiers openenv fastapi fastmcp uvicorn pydantic"
    ).split()
    if importlib.util.find_spec(name) is None
]
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# "Attributes:" sections become fields, so that an attribute also documented by autodoc (a
# property, a dataclass field) is not described twice.
napoleon_use_ivar = True

html_theme = "furo"
html_title = "agentenvs"
html_static_path: list[str] = []
html_show_sourcelink = False
html_copy_source = False


def _modules(package: str) -> list[str]:
    """``package`` and its public submodules (no ``_private`` part, no ``__main__``), sorted."""
    mod = importlib.import_module(package)
    names = [package]
    for info in pkgutil.walk_packages(mod.__path__, package + "."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        names.append(info.name)
    return sorted(names)


#: id(object) -> (home module, name there), for every class and function of the reference.
HOMES: dict[int, tuple[str, str]] = {}


def api_pages(app: object) -> None:
    """Write docs/api/_generated/<module>.rst for every public module of API_PACKAGES.

    A class or function is described once, at its most public home: the shortest module path
    that defines it or lists it in ``__all__`` (``agentenvs.Trajectory`` rather than
    ``agentenvs.core.trajectory.Trajectory``). The other modules that export it link there, and
    autodoc's ``:canonical:`` keeps the defining module's full name resolvable in cross-references;
    any other name of the object resolves through :func:`_resolve_by_object`.
    """
    from sphinx.ext.autodoc.mock import mock

    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "api", "_generated")
    os.makedirs(out, exist_ok=True)
    with mock(autodoc_mock_imports):
        names = [m for package in API_PACKAGES for m in _modules(package)]
        names = sorted(set(names))
        modules = {name: importlib.import_module(name) for name in names}
    exported: dict[str, dict[str, object]] = {}  # module -> {name: object}, classes and functions
    homes: dict[int, str] = {}  # id(object) -> home module
    HOMES.clear()
    for name, mod in modules.items():
        public = getattr(mod, "__all__", None)
        members = {}
        for attr, value in vars(mod).items():
            if not (inspect.isclass(value) or inspect.isfunction(value)):
                continue
            defined_here = getattr(value, "__module__", None) == name
            if (public is not None and attr in public) or (public is None and defined_here):
                if not attr.startswith("_"):
                    members[attr] = value
        exported[name] = members
    for name in names:
        for value in exported[name].values():
            rank = (name.count("."), getattr(value, "__module__", None) != name, name)
            home = homes.get(id(value))
            if home is None or rank < (home.count("."), value.__module__ != home, home):
                homes[id(value)] = name
    for name in names:
        for attr, value in exported[name].items():
            if homes[id(value)] == name:
                HOMES[id(value)] = (name, attr)
    written = set()
    for name in names:
        elsewhere = sorted(
            (attr, homes[id(value)])
            for attr, value in exported[name].items()
            if homes[id(value)] != name
        )
        lines = [f"``{name}``", "=" * (len(name) + 4), "", f".. automodule:: {name}"]
        lines.append("   :members:")
        if elsewhere:
            lines.append("   :exclude-members: " + ", ".join(attr for attr, _ in elsewhere))
        lines.append("")
        if elsewhere:
            lines += ["Also exported here, described at their home:", ""]
            for attr, _ in elsewhere:
                value = exported[name][attr]
                role = "class" if inspect.isclass(value) else "func"
                lines.append(f"* :{role}:`{'.'.join(HOMES[id(value)])}`")
            lines.append("")
        children = [m for m in names if m.rpartition(".")[0] == name and m not in API_PACKAGES]
        if children:
            lines += ["Modules", "-------", "", ".. toctree::", "   :maxdepth: 1", ""]
            lines += [f"   {child}" for child in children]
            lines.append("")
        path = os.path.join(out, name + ".rst")
        text = "\n".join(lines)
        if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
            with open(path, "w", encoding="utf-8") as f:  # rewritten only when it changed
                f.write(text)
        written.add(name + ".rst")
    for stale in set(os.listdir(out)) - written:
        os.remove(os.path.join(out, stale))


def _lookup(path: str) -> object | None:
    """The object at the dotted ``path``, through modules already imported (none is imported)."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        obj = sys.modules.get(".".join(parts[:i]))
        if obj is None:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj
    return None


def _documented_name(path: str) -> str | None:
    """The name under which the reference describes the object at ``path`` (or the class that
    holds it, followed by the rest of the path)."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        home = HOMES.get(id(_lookup(".".join(parts[:i]))))
        if home is not None:
            return ".".join([*home, *parts[i:]])
    return None


def _resolve_by_object(app, env, node, contnode):  # noqa: ANN001, ANN202
    """A Python cross-reference that names an object by another of its names (a re-export such as
    ``agentenvs.core.Trajectory``, or a class imported into the module whose docstring names it)
    resolves to where the reference describes that object."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip(".")
    module, cls = node.get("py:module"), node.get("py:class")
    candidates = [f"{module}.{cls}.{target}"] if module and cls else []
    candidates += [f"{module}.{target}"] if module else []
    candidates.append(target)
    domain = env.get_domain("py")
    for path in candidates:
        name = _documented_name(path)
        if name is None or name == node["reftarget"]:
            continue
        retry = node.deepcopy()
        retry["reftarget"], retry["refspecific"] = name, False
        found = domain.resolve_xref(
            env, node["refdoc"], app.builder, node["reftype"], name, retry, contnode
        )
        if found is not None:
            return found
    return None


def _no_foreign_docstrings(app, what, name, obj, options, lines) -> None:  # noqa: ANN001
    """Drop a method's docstring inherited from another project's class (Gymnasium's ``Env.step``,
    say): it is theirs, in their markup; the class's own docs say what ours does."""
    if what not in ("method", "property") or lines == []:
        return
    func = getattr(obj, "fget", obj)
    if getattr(func, "__doc__", None) is not None:
        return  # its own docstring
    owner_path, _, attr = getattr(func, "__qualname__", "").rpartition(".")
    owner = sys.modules.get(getattr(func, "__module__", "") or "")
    for part in owner_path.split(".") if owner_path else []:
        owner = getattr(owner, part, None)
    if not inspect.isclass(owner):
        return
    for base in owner.__mro__[1:]:
        found = base.__dict__.get(attr)
        if found is not None and getattr(getattr(found, "fget", found), "__doc__", None):
            if not base.__module__.startswith("agentenvs"):
                lines[:] = []
            return


def setup(app: object) -> dict[str, bool]:
    app.connect("builder-inited", api_pages)
    app.connect("autodoc-process-docstring", _no_foreign_docstrings)
    app.connect("missing-reference", _resolve_by_object)
    return {"parallel_read_safe": True}
