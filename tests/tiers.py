"""Test tiers, assigned by rule at collection (never by a mark a test author must remember).

``make test`` runs every test. ``make test-fast`` (the edit loop) runs the unit tier:
``-m "not (slow or hardening or bench or process or heavy)"``. The markers come

from what a test *is* (static rules):
- ``slow``: it uses real data (the ``att_faces`` / ``lfw_faces`` fixtures, or a mark);
- ``hardening``: it lives in ``tests/hardening/`` (generated hostile corpora; that
  folder's conftest.py marks them);
- ``bench``: it lives in ``tests/test_benchmarks_smoke.py`` (a benchmark run as a program);

from what it *cost* the last time it ran (measured rules, kept in pytest's cache folder,
``.pytest_cache``, per checkout):
- ``process``: it, or a fixture it uses, started a process (the ``subprocess.Popen``,
  ``os.posix_spawn`` and ``os.fork`` audit events: the CLI as a program, a matcher program,
  a Dask worker);
- ``heavy``: it costs more than `HEAVY_CPU_S` CPU-seconds (its own and its children's),
  counting the set-up of every fixture it uses, whoever paid for it (a module fixture
  that trains a gallery makes every test that uses it heavy).

A new test runs in the fast tier until it has been measured once (by ``make test`` or
``make test-fast``); from then on it is placed by what it cost. Nothing here changes
what a test does: the audit hook only counts.
"""

import os
import resource
import sys
import time

import pytest

HEAVY_CPU_S = 1.0
CACHE_KEY = "ssgallery/test-cost"
SPAWN_EVENTS = frozenset({"subprocess.Popen", "os.posix_spawn", "os.fork", "os.forkpty"})
REAL_DATA = frozenset({"att_faces", "lfw_faces"})

_spawns = [0]  # processes started in this interpreter so far


def _count_spawns(event, _args):
    if event in SPAWN_EVENTS:
        _spawns[0] += 1


sys.addaudithook(_count_spawns)  # cannot be removed; it only counts


def _cpu():
    own = time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own + children.ru_utime + children.ru_stime


class _Meter:
    """CPU-seconds and processes started between `start` and `stop`."""

    def start(self):
        self.cpu, self.spawns = _cpu(), _spawns[0]
        return self

    def stop(self):
        return round(_cpu() - self.cpu, 3), _spawns[0] - self.spawns


def _fixture_key(fixturedef):
    return f"{fixturedef.baseid}::{fixturedef.argname}"


# -------------------------------------------------------------------------- measuring
# In the process that runs the test (an xdist worker, or the only process): each phase's
# cost is an attribute of its report (``tier_cost``), which xdist sends to the controller.

_fixture_costs = []  # (key, cpu, spawns) of the fixtures set up in the current phase
_nested = []  # per fixture being set up: [cpu, spawns] of the fixtures set up inside it


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    meter = _Meter().start()
    _nested.append([0.0, 0])
    try:
        return (yield)
    finally:
        cpu, spawns = meter.stop()
        inner_cpu, inner_spawns = _nested.pop()
        if _nested:  # a fixture set up by another one (getfixturevalue): not twice
            _nested[-1][0] += cpu
            _nested[-1][1] += spawns
        _fixture_costs.append((_fixture_key(fixturedef), round(max(0.0, cpu - inner_cpu), 3),
                               max(0, spawns - inner_spawns)))


def _measured(item, when):
    """Wrap one phase of ``item``: its own cost (fixture set-ups apart) and each fixture's."""
    meter = _Meter().start()
    _fixture_costs.clear()
    try:
        return (yield)
    finally:
        cpu, spawns = meter.stop()
        fixtures = list(_fixture_costs)
        _fixture_costs.clear()
        item.stash.setdefault(_COSTS, {})[when] = {
            "cpu": max(0.0, cpu - sum(c for _, c, _ in fixtures)),
            "spawns": max(0, spawns - sum(n for _, _, n in fixtures)), "fixtures": fixtures}


_COSTS = pytest.StashKey()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    return (yield from _measured(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from _measured(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item):
    return (yield from _measured(item, "teardown"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.tier_cost = item.stash.get(_COSTS, {}).get(call.when)
    return report


# -------------------------------------------------------------------------- recording
# In the controller (or the only process): each report's own phase, saved at the end.

_seen = {"tests": {}, "fixtures": {}}


def pytest_runtest_logreport(report):
    cost = getattr(report, "tier_cost", None)
    if not cost:
        return
    if report.when == "setup" or report.nodeid not in _seen["tests"]:
        _seen["tests"][report.nodeid] = {"cpu": 0.0, "spawns": 0, "fixtures": []}
    test = _seen["tests"][report.nodeid]
    test["cpu"] = round(test["cpu"] + cost["cpu"], 3)
    test["spawns"] += cost["spawns"]
    for key, cpu, spawns in cost["fixtures"]:
        # the most it cost in this run: a worker that waited for another's build paid 0
        was = _seen["fixtures"].get(key, {"cpu": 0.0, "spawns": 0})
        _seen["fixtures"][key] = {"cpu": max(cpu, was["cpu"]),
                                  "spawns": max(spawns, was["spawns"])}
        if key not in test["fixtures"]:
            test["fixtures"].append(key)


def pytest_sessionfinish(session):
    config = session.config
    if hasattr(config, "workerinput") or getattr(config, "cache", None) is None or not _seen["tests"]:
        return  # an xdist worker: its reports went to the controller
    record = config.cache.get(CACHE_KEY, None) or {"tests": {}, "fixtures": {}}
    for part in ("tests", "fixtures"):
        record[part].update(_seen[part])
    config.cache.set(CACHE_KEY, record)


# -------------------------------------------------------------------------- assigning

def _closure_fixture_keys(item):
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return [_fixture_key(defs[-1]) for name, defs in info.name2fixturedefs.items() if defs]


def _measured_markers(item, record):
    test = record["tests"].get(item.nodeid)
    keys = set(_closure_fixture_keys(item)) | set(test["fixtures"] if test else [])
    fixtures = [record["fixtures"][k] for k in keys if k in record["fixtures"]]
    cpu = (test["cpu"] if test else 0.0) + sum(f["cpu"] for f in fixtures)
    spawns = (test["spawns"] if test else 0) + sum(f["spawns"] for f in fixtures)
    return (["process"] if spawns else []) + (["heavy"] if cpu > HEAVY_CPU_S else [])


def pytest_report_header(config):
    record = config.cache.get(CACHE_KEY, None) if getattr(config, "cache", None) else None
    n = len(record["tests"]) if record else 0
    return (f"test tiers: costs of {n} tests measured in .pytest_cache (tests/tiers.py)"
            + ("" if n else "; none yet: 'process' and 'heavy' are unknown until a run"))


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    record = (config.cache.get(CACHE_KEY, None) if getattr(config, "cache", None) else None) \
        or {"tests": {}, "fixtures": {}}
    for item in items:
        path = str(item.fspath).replace(os.sep, "/")
        names = set(getattr(item, "fixturenames", ()))
        static = {"slow": bool(names & REAL_DATA),
                  "bench": path.endswith("/tests/test_benchmarks_smoke.py")}
        for name in [n for n, yes in static.items() if yes] + _measured_markers(item, record):
            item.add_marker(getattr(pytest.mark, name))
