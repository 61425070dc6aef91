"""Rules for the whole test suite, whichever directories a run collects.

* Markers by directory: tests under ``tests/`` are ``unit``, under
  ``interop_tests/`` ``interop``, under ``spark_tests/`` ``spark``, so
  ``-m unit`` or ``-m "not spark"`` picks a part without a mark on every file.
* Work units for pytest-xdist (``--dist loadgroup``): a test that uses a
  fixture of the project's with a wider scope than the function runs on the
  worker that has that fixture already, so each is started once: the tests
  sharing a module's broker, ZooKeeper or Java driver form one unit per
  module; the tests sharing a session's fixture (the Spark session) one unit
  in all. A test's own ``xdist_group`` mark wins. Every other test is a unit
  of its own, handed to whichever worker is free.
* The units likely to take longest are collected first, so they start first
  (xdist hands units out in collection order, ``--no-loadscope-reorder``) and
  the many short tests fill the workers at the end: those holding ``slow``
  tests, then the groups, the larger first.
* A run that selects no test (``-m spark tests``) passes instead of exiting 5.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
DIRECTORY_MARKERS = {"tests": "unit", "interop_tests": "interop", "spark_tests": "spark"}
PROJECT_PACKAGES = tuple(DIRECTORY_MARKERS)


def _directory_marker(item: pytest.Item) -> str | None:
    try:
        top = item.path.resolve().relative_to(ROOT).parts[0]
    except ValueError:
        return None
    return DIRECTORY_MARKERS.get(top)


def _shared_fixture_group(item: pytest.Item) -> str | None:
    """The xdist group of a test that uses a shared fixture of the project's, or None."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    module_wide = False
    for name in item.fixturenames:  # type: ignore[attr-defined]
        for fixture in info.name2fixturedefs.get(name, ()):
            if not fixture.func.__module__.startswith(PROJECT_PACKAGES):
                continue  # pytest's own (tmp_path_factory is session-wide, and cheap)
            if fixture.scope == "session":
                return f"session-{name}"
            if fixture.scope != "function":
                module_wide = True
    if module_wide:
        return item.nodeid.split("::", 1)[0]
    return None


def _group(item: pytest.Item) -> str | None:
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return None
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        marker = _directory_marker(item)
        if marker is not None:
            item.add_marker(marker)
        if item.get_closest_marker("xdist_group") is None:
            group = _shared_fixture_group(item)
            if group is not None:
                item.add_marker(pytest.mark.xdist_group(group))
    # The longest units first, as far as can be told before running them: by the slow
    # tests they hold, then groups before single tests, the larger first; a stable sort
    # keeps the collection's order within a unit and among equals.
    slow_in: dict[str, int] = {}
    size_of: dict[str, int] = {}
    for item in items:
        unit = _group(item) or item.nodeid
        slow_in[unit] = slow_in.get(unit, 0) + (item.get_closest_marker("slow") is not None)
        size_of[unit] = size_of.get(unit, 0) + 1

    def rank(item: pytest.Item) -> tuple[int, int]:
        unit = _group(item) or item.nodeid
        return -slow_in[unit], -size_of[unit]

    items.sort(key=rank)
    if getattr(config.option, "loadgroup", False):  # an xdist worker, --dist loadgroup
        _put_groups_in_node_ids(items)


def _put_groups_in_node_ids(items: list[pytest.Item]) -> None:
    """xdist's scheduler reads a test's group from its node id (``...::test@group``),
    which xdist 3.8 writes into ``item._nodeid``; pytest 9.2 keeps the id in
    ``item._id`` and no longer reads ``_nodeid``, so every test was a unit of its own
    (four Spark sessions, a module's broker on every worker). The suffix goes where
    this pytest reads it; xdist's own attempt after this changes nothing."""
    for item in items:
        group = _group(item)
        if group is None or "@" in item.nodeid.rsplit("]", 1)[-1]:
            continue
        grouped = f"{item.nodeid}@{group}"
        node_id = getattr(item, "_id", None)
        if node_id is not None and hasattr(type(node_id), "parse"):
            item._id = type(node_id).parse(grouped)
        else:
            item._nodeid = grouped  # type: ignore[attr-defined]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK
