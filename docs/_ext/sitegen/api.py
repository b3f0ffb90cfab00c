"""The API reference and the command-line pages, generated from the package itself.

Every public module of ``transfertheory`` (no path component starting with ``_``) gets a page that
``automodule`` fills from its docstrings; every module with a ``build_parser()`` and a ``main()`` (the package's
``python -m`` commands) gets a page with its argparse ``--help``, so the site and ``--help`` cannot disagree.
"""
from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import pkgutil

import transfertheory

from .text import heading, literal_block

#: the API reference's sections: (title, what the modules under it are, module-name prefixes)
SECTIONS = (
    ("Closed forms: transfertheory.theory", "the papers' formulas and their exact finite-size versions",
     ("transfertheory.theory",)),
    ("Simulators: transfertheory.sim", "the training processes the papers analyse", ("transfertheory.sim",)),
    ("Claims registry: transfertheory.claims", "the papers' statements and their checks",
     ("transfertheory.claims", "transfertheory.audit_table", "transfertheory.audit_plugin")),
    ("Figures registry: transfertheory.figures", "the papers' figures and their builders",
     ("transfertheory.figures",)),
    ("Package: parameters, backends, command lines", "valid ranges, array backends, the CLIs' support",
     ("transfertheory",)),
)
#: the width argparse wraps ``--help`` to on the command-line pages
HELP_COLUMNS = "100"


def public_modules() -> list[str]:
    """Every importable public module of the package, sorted (``__main__`` modules are CLI pages instead)."""
    names = ["transfertheory"]
    for info in pkgutil.walk_packages(transfertheory.__path__, "transfertheory."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def section_of(module: str) -> int:
    """Index in :data:`SECTIONS` of the first section whose prefix owns ``module``."""
    for index, (_, _, prefixes) in enumerate(SECTIONS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return index
    raise ValueError(f"module {module!r} belongs to no section of the API reference")


def exported(module: str) -> list[str]:
    """The public names of a module: its ``__all__``, else the functions and classes it defines."""
    namespace = importlib.import_module(module)
    if hasattr(namespace, "__all__"):
        return list(namespace.__all__)
    return [name for name, value in vars(namespace).items()
            if not name.startswith("_") and (inspect.isclass(value) or inspect.isfunction(value))
            and value.__module__ == module]


def _is_public(module: str) -> bool:
    return not any(part.startswith("_") for part in module.split("."))


def _described_once(value) -> bool:
    """A class or a function (also one wrapped by a decorator such as ``functools.lru_cache``)."""
    return inspect.isclass(value) or inspect.isroutine(inspect.unwrap(value))


def homes(modules: list[str]) -> dict[int, str]:
    """``{id(object): module}``: where each exported function or class is documented — the module that defines
    it when that one is public and exports it, else the first module (fewest dots) that exports it. A class or
    function is described once; the other modules that export it link to that description."""
    found: dict[int, str] = {}
    for module in sorted(modules, key=lambda m: (m.count("."), m)):
        namespace = importlib.import_module(module)
        for name in exported(module):
            value = getattr(namespace, name)
            if not _described_once(value):
                continue
            defining = value.__module__
            if defining in modules and name in exported(defining) and _is_public(defining):
                found[id(value)] = defining
            else:
                found.setdefault(id(value), module)
    return found


def _directive(value) -> str:
    if inspect.isclass(value):
        return "autoclass"
    return "autofunction" if callable(value) else "autodata"


def module_page(module: str, home: dict[int, str]) -> str:
    """The page of one module: its docstring, then each public member described here or linked to its home."""
    namespace = importlib.import_module(module)
    described, linked = [], []
    for name in exported(module):
        value = getattr(namespace, name)
        where = home.get(id(value), module) if _described_once(value) else module
        if where == module:
            options = ["   :members:"] if inspect.isclass(value) else []
            described += [f".. {_directive(value)}:: {module}.{name}", *options, ""]
        else:
            role = "class" if inspect.isclass(value) else "func"
            linked.append(f":{role}:`~{where}.{name}`")
    lines = [*heading(f"``{module}``"), f".. automodule:: {module}", ""]
    if linked:
        lines += [f"Also exported here, described in the module that defines them: {', '.join(linked)}.", ""]
    return "\n".join([*lines, *described])


def home_name(target: str) -> str | None:
    """The documented name of the class or function that ``target`` (a dotted name, possibly through a package
    that re-exports it) refers to: ``transfertheory.sim.integrator.integrate_gradient_flow`` →
    ``transfertheory.sim.integrator.flow.integrate_gradient_flow``; None when ``target`` is not such an object or
    is already its own home."""
    module_name, _, attribute = target.rpartition(".")
    if not module_name or module_name.startswith("."):  # a relative name: Sphinx resolves those itself
        return None
    try:
        value = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError):
        return None
    if not _described_once(value):
        return None
    value = inspect.unwrap(value)
    home = f"{value.__module__}.{value.__qualname__}"
    return None if home == target else home


def api_index(modules: list[str]) -> str:
    """The API reference's entry page: one table of contents per section."""
    lines = [*heading("API reference"),
             "Generated at build time from the docstrings of every public module (the modules' own "
             "``__all__`` decides what is public); each entry links to its source.", ""]
    for index, (title, what, _) in enumerate(SECTIONS):
        members = [m for m in modules if section_of(m) == index]
        lines += [*heading(title, "-"), f"{what.capitalize()}.", "", ".. toctree::", "   :maxdepth: 1", "",
                  *(f"   {m}" for m in members), ""]
    return "\n".join(lines)


def api_pages() -> dict[str, str]:
    """``{path under docs/: text}`` of the API reference."""
    modules = public_modules()
    pages = {"api/index.rst": api_index(modules)}
    home = homes(modules)
    pages.update({f"api/{m}.rst": module_page(m, home) for m in modules})
    return pages


def command_modules() -> list[str]:
    """The modules ``python -m`` runs whose parser is ``build_parser()`` (a package's is in its ``__main__``)."""
    found = []
    for name in ["transfertheory", *(info.name for info in pkgutil.walk_packages(transfertheory.__path__,
                                                                                 "transfertheory."))]:
        if name.rsplit(".", 1)[-1].startswith("_") and not name.endswith(".__main__"):
            continue
        module = importlib.import_module(name)
        if callable(getattr(module, "build_parser", None)) and callable(getattr(module, "main", None)):
            found.append(name)
    return sorted(found)


def command_name(module: str) -> str:
    """``python -m`` target of a command module (``transfertheory.figures.__main__`` → ``transfertheory.figures``)."""
    return module.removesuffix(".__main__")


@contextlib.contextmanager
def _help_width():
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        yield
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def command_page(module: str) -> str:
    """A command's page: its ``--help`` (from its parser, with ``prog`` set to the ``python -m`` line)."""
    command = command_name(module)
    parser = importlib.import_module(module).build_parser()
    parser.prog = f"python -m {command}"
    with _help_width():
        help_text = parser.format_help()
    entry = f"``{module}.main``" if module.endswith(".__main__") else f":func:`{module}.main`"
    return "\n".join([*heading(f"``python -m {command}``"),
                      f"The output of ``python -m {command} --help``, generated from the command's parser; its "
                      f"entry point is {entry}.", "", *literal_block(help_text)])


def cli_pages() -> dict[str, str]:
    """``{path under docs/: text}`` of the command-line pages."""
    modules = command_modules()
    index = [*heading("Command lines"),
             "Every ``python -m transfertheory…`` command, with the ``--help`` of its own parser.", "",
             ".. toctree::", "   :maxdepth: 1", "", *(f"   {command_name(m)}" for m in modules), ""]
    pages = {"cli/index.rst": "\n".join(index)}
    pages.update({f"cli/{command_name(m)}.rst": command_page(m) for m in modules})
    return pages


__all__ = ["SECTIONS", "public_modules", "api_pages", "command_modules", "cli_pages"]
