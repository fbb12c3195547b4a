"""Test tiers, assigned at collection (never by a mark a test author must remember).

``make test`` runs every test. ``make test-fast`` (the edit loop) runs the unit tier:
``-m "not (slow or hardening or bench or process or heavy)"``. The markers come

from what a test *is* (static rules):
- ``slow``: it uses real data (the ``att_faces`` / ``lfw_faces`` fixtures, or a mark);
- ``hardening``: it lives in ``tests/hardening/`` (generated hostile corpora; that
  folder's conftest.py marks them);
- ``bench``: it lives in ``tests/test_benchmarks_smoke.py`` (a benchmark run as a program);

from what it *costs*, measured and committed in ``tests/tiers.json`` (test id -> its
measured markers, for every test the static rules leave in the fast tier; refreshed by
``make test-tiers``, which runs only those), so that a fresh clone's first ``make
test-fast`` is already the unit tier:
- ``process``: it, or a fixture it uses, started or used a process: the CLI as a program,
  a matcher program (the ``subprocess.Popen``, ``os.posix_spawn`` and ``os.fork`` audit
  events), a joblib/loky pool or a Dask worker (no audit event: a new process in
  ``multiprocessing``'s children, a live one that ran, or a child reaped meanwhile);
- ``heavy``: it costs more than `HEAVY_CPU_S` CPU-seconds (its own, its reaped children's
  and its live worker processes'), counting the set-up of every fixture it uses, whoever
  paid for it (a module fixture that trains a gallery makes every test that uses it heavy).

Every run also measures what it runs (kept in ``.pytest_cache``, per checkout) and says at
its end which tests ``tests/tiers.json`` lacks and which of its fast tests measured
``process`` or clearly ``heavy`` (run ``make test-tiers``, or ``pytest --write-tiers
FILE...`` for a few files). A test that tiers.json lacks is placed by its last local
measurement, or runs in the fast tier until it has one. Nothing here changes what a test
does: the audit hook and the readings of ``/proc`` only count.
"""

import json
import os
import resource
import sys
import time
from pathlib import Path

import pytest

HEAVY_CPU_S = 1.0
WARN_CPU_S = 2 * HEAVY_CPU_S  # a fast test measured above this is reported (noise below)
TIERS_FILE = Path(__file__).with_name("tiers.json")
CACHE_KEY = "ssgallery/test-cost"
SPAWN_EVENTS = frozenset({"subprocess.Popen", "os.posix_spawn", "os.fork", "os.forkpty"})
REAL_DATA = frozenset({"att_faces", "lfw_faces"})
MEASURED = ("process", "heavy")
STATIC = ("slow", "hardening", "bench")  # placed by what a test is: tiers.json omits them
USED_CPU_S = 0.01  # a live worker process that ran this much during a phase was used

_spawns = [0]  # processes started in this interpreter so far (audit events)


def _count_spawns(event, _args):
    if event in SPAWN_EVENTS:
        _spawns[0] += 1


sys.addaudithook(_count_spawns)  # cannot be removed; it only counts

try:
    _TICK = os.sysconf("SC_CLK_TCK")
except (AttributeError, ValueError, OSError):
    _TICK = 100


def _workers():
    """CPU-seconds of each live process this one started through ``multiprocessing``
    (loky and Dask workers start there, with no audit event): {pid: cpu}; Linux only."""
    process = sys.modules.get("multiprocessing.process")
    found = {}
    for child in list(getattr(process, "_children", ())):
        pid = getattr(child, "pid", None)
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            found[pid] = (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime
        except (OSError, ValueError, IndexError, TypeError):
            continue
    return found


class _Meter:
    """CPU-seconds (this process, its reaped children and its live workers) and whether
    a process was started or used, between `start` and `stop`."""

    def start(self):
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.own = time.process_time()
        self.reaped = children.ru_utime + children.ru_stime
        self.faults = children.ru_minflt  # grows when any child is reaped
        self.spawns, self.workers = _spawns[0], _workers()
        return self

    def stop(self):
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        workers = _workers()
        ran = {pid: cpu - self.workers.get(pid, 0.0) for pid, cpu in workers.items()}
        gone = set(self.workers) - set(workers)  # a pool's idle worker that exited
        cpu = (time.process_time() - self.own + children.ru_utime + children.ru_stime
               - self.reaped + sum(ran.values())
               - sum(self.workers[pid] for pid in gone))
        processes = (_spawns[0] - self.spawns + len(set(workers) - set(self.workers))
                     + sum(1 for c in ran.values() if c >= USED_CPU_S)
                     + (children.ru_minflt > self.faults and not gone))
        return round(max(0.0, cpu), 3), processes


def _fixture_key(fixturedef):
    return f"{fixturedef.baseid}::{fixturedef.argname}"


def _closure_fixture_keys(item):
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return [_fixture_key(defs[-1]) for name, defs in info.name2fixturedefs.items() if defs]


# -------------------------------------------------------------------------- measuring
# In the process that runs the test (an xdist worker, or the only process): each phase's
# cost is an attribute of its report (``tier_cost``), which xdist sends to the controller.

_fixture_costs = []  # (key, cpu, processes) of the fixtures set up in the current phase
_nested = []  # per fixture being set up: [cpu, processes] of the fixtures set up inside it


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    meter = _Meter().start()
    _nested.append([0.0, 0])
    active = getattr(request, "_fixture_defs", {})  # the test's fixtures so far (pytest's)
    before = set(active)
    try:
        return (yield)
    finally:
        cpu, processes = meter.stop()
        inner_cpu, inner_processes = _nested.pop()
        if _nested:  # a fixture set up by another one (getfixturevalue): not twice
            _nested[-1][0] += cpu
            _nested[-1][1] += processes
        # the fixtures this one asked for, built now or earlier (request.getfixturevalue
        # included): a test that uses this one uses them too, whoever built them
        uses = sorted(_fixture_key(active[name]) for name in set(active) - before
                      if name != fixturedef.argname and hasattr(active[name], "baseid"))
        _fixture_costs.append((_fixture_key(fixturedef), round(max(0.0, cpu - inner_cpu), 3),
                               max(0, processes - inner_processes), uses))


def _measured(item, when):
    """Wrap one phase of ``item``: its own cost (fixture set-ups apart) and each fixture's."""
    meter = _Meter().start()
    _fixture_costs.clear()
    try:
        return (yield)
    finally:
        cpu, processes = meter.stop()
        fixtures = list(_fixture_costs)
        _fixture_costs.clear()
        item.stash.setdefault(_COSTS, {})[when] = {
            "cpu": max(0.0, cpu - sum(f[1] for f in fixtures)),
            "processes": max(0, processes - sum(f[2] for f in fixtures)),
            "fixtures": fixtures, "closure": _closure_fixture_keys(item)}


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
    report.tier_static = is_static(item)
    return report


def is_static(item):
    """Whether a static rule places ``item`` (``slow``, ``hardening`` or ``bench``)."""
    return any(item.get_closest_marker(name) for name in STATIC)


# -------------------------------------------------------------------------- recording
# In the controller (or the only process): each report's own phase; saved at the end.

_seen = {"tests": {}, "fixtures": {}}


def pytest_runtest_logreport(report):
    cost = getattr(report, "tier_cost", None)
    if not cost:
        return
    if report.when == "setup" or report.nodeid not in _seen["tests"]:
        _seen["tests"][report.nodeid] = {"cpu": 0.0, "processes": 0, "fixtures": []}
    test = _seen["tests"][report.nodeid]
    if getattr(report, "tier_static", False):
        test["static"] = True
    test["cpu"] = round(test["cpu"] + cost["cpu"], 3)
    test["processes"] += cost["processes"]
    for key, cpu, processes, *uses in cost["fixtures"]:
        # the most it cost in this run: a worker that waited for another's build paid 0
        was = _seen["fixtures"].get(key, {"cpu": 0.0, "processes": 0})
        _seen["fixtures"][key] = {"cpu": max(cpu, was["cpu"]),
                                  "processes": max(processes, was["processes"]),
                                  "uses": sorted(set(was.get("uses", []))
                                                 | set(uses[0] if uses else []))}
    for key in [f[0] for f in cost["fixtures"]] + cost.get("closure", []):
        if key not in test["fixtures"]:
            test["fixtures"].append(key)


def _used(test, fixtures):
    """The records of every fixture a test uses: its own keys and, through each
    fixture's ``uses`` (what it asked for, getfixturevalue included), theirs."""
    seen, todo = set(), list(test.get("fixtures", ()))
    while todo:
        key = todo.pop()
        if key in seen or key not in fixtures:
            continue
        seen.add(key)
        todo.extend(fixtures[key].get("uses", ()))
    return [fixtures[k] for k in sorted(seen)]


def measured_markers(test, fixtures):
    """``process`` / ``heavy`` of one test's record (its own cost and the keys of every
    fixture it uses), with the fixtures' costs ``fixtures`` (key -> record, with
    ``uses``: the fixtures that one asked for)."""
    used = _used(test, fixtures)
    cpu = test.get("cpu", 0.0) + sum(f["cpu"] for f in used)
    processes = test.get("processes", 0) + sum(f["processes"] for f in used)
    return (["process"] if processes else []) + (["heavy"] if cpu > HEAVY_CPU_S else [])


def _cost(test, fixtures):
    used = _used(test, fixtures)
    return round(test.get("cpu", 0.0) + sum(f["cpu"] for f in used), 1)


def pytest_sessionfinish(session):
    config = session.config
    if hasattr(config, "workerinput") or not _seen["tests"]:
        return  # an xdist worker: its reports went to the controller
    if getattr(config, "cache", None) is not None:
        record = _cached(config)
        for part in ("tests", "fixtures"):
            record[part].update(_seen[part])
        config.cache.set(CACHE_KEY, record)
    if config.getoption("write_tiers", False) \
            and session.exitstatus != pytest.ExitCode.INTERRUPTED:
        here = config.invocation_params.dir
        partial = {str((here / a.split("::")[0]).resolve()) for a in config.args if "::" in a}
        # stopped early (-x, --maxfail): the tests it did not reach keep their entries
        write_tiers(_run_tiers(), partial, complete=not session.shouldstop)


def _cached(config):
    """This checkout's measurements (.pytest_cache); empty in an older layout."""
    record = config.cache.get(CACHE_KEY, None) if getattr(config, "cache", None) else None
    if not record or "tests" not in record \
            or any("spawns" in t for t in record["tests"].values()):
        return {"tests": {}, "fixtures": {}}
    return record


def _run_tiers():
    """This run's tests -> their measured markers (statically placed ones apart)."""
    return {nodeid: measured_markers(test, _seen["fixtures"])
            for nodeid, test in _seen["tests"].items() if not test.get("static")}


# -------------------------------------------------------------------------- tiers.json

def read_tiers(path=TIERS_FILE):
    """Test id -> its measured markers (a list), from ``tests/tiers.json``; {} without it."""
    try:
        with open(path, encoding="utf-8") as handle:
            return {k: [m for m in v.split() if m != "fast"]
                    for k, v in json.load(handle)["tests"].items()}
    except FileNotFoundError:
        return {}


def function_id(nodeid):
    """The id of the test function a (parametrized) test id belongs to."""
    return nodeid.split("[", 1)[0]


def placed(nodeid, tiers):
    """The measured markers ``tiers`` (tests/tiers.json) gives a test: its own entry, else,
    for a new parameter of a parametrized test (e.g. an example read from the docs), every
    marker of the function's other parameters; None when neither is there."""
    if nodeid in tiers:
        return tiers[nodeid]
    function = function_id(nodeid)
    siblings = [m for k, m in tiers.items() if k.startswith(function + "[")]
    if not siblings or function == nodeid:
        return None
    return [name for name in MEASURED if any(name in m for m in siblings)]


def merged_tiers(old, run, root, partial=(), complete=True):
    """``old`` (test id -> markers) updated with this run's tiers ``run``. A test file
    that ran whole keeps only the tests that ran (when the run was ``complete``); a file
    of which only some tests were asked for (``partial``: absolute paths) keeps its other
    entries; a test whose file is gone (``root``: the folder that holds ``tests/``) is
    dropped."""
    files = {k.split("::")[0] for k in run}
    whole = {f for f in files if complete and str((root / f).resolve()) not in partial}
    kept = {k: v for k, v in old.items()
            if k.split("::")[0] not in whole and (root / k.split("::")[0]).is_file()}
    return dict(sorted({**kept, **run}.items()))


def write_tiers(run, partial=(), complete=True, path=TIERS_FILE):
    """Merge this run's measured tiers into ``tests/tiers.json`` (one test per line)."""
    tiers = merged_tiers(read_tiers(path), run, path.parent.parent, partial, complete)
    lines = [f"    {json.dumps(k)}: {json.dumps(' '.join(v) or 'fast')}"
             for k, v in tiers.items()]
    text = ("{\n"
            '  "about": "test id -> the markers its cost gave it (process, heavy) or fast; '
            'written by make test-tiers (tests/tiers.py)",\n'
            f'  "heavy_cpu_s": {HEAVY_CPU_S},\n'
            '  "tests": {\n' + ",\n".join(lines) + "\n  }\n}\n")
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# -------------------------------------------------------------------------- assigning

def add_options(parser):
    """``--write-tiers``: measure the tests run and record them in tests/tiers.json."""
    parser.addoption("--write-tiers", action="store_true", default=False,
                     help="record the measured tier of every test run in tests/tiers.json "
                          "(make test-tiers runs them all)")


def pytest_configure(config):
    if config.getoption("write_tiers", False) and (config.getoption("markexpr", "")
                                                   or config.getoption("keyword", "")):
        raise pytest.UsageError("--write-tiers measures every test it collects: "
                                "no -m or -k with it")


def _local_markers(item, record):
    test = record["tests"].get(item.nodeid)
    if test is None:
        return []
    keys = set(_closure_fixture_keys(item)) | set(test.get("fixtures", []))
    return measured_markers({**test, "fixtures": sorted(keys)}, record["fixtures"])


def pytest_report_header(config):
    tiers = read_tiers()
    return (f"test tiers: {len(tiers)} tests placed by tests/tiers.json (tests/tiers.py)"
            if tiers else "test tiers: no tests/tiers.json; 'process' and 'heavy' come from "
            "this checkout's last run (make test-tiers writes it)")


@pytest.hookimpl(wrapper=True)  # marks before -m deselects by marker (and any other hook)
def pytest_collection_modifyitems(config, items):
    tiers, record = read_tiers(), _cached(config)
    for item in items:
        path = str(item.fspath).replace(os.sep, "/")
        names = set(getattr(item, "fixturenames", ()))
        static = {"slow": bool(names & REAL_DATA),
                  "bench": path.endswith("/tests/test_benchmarks_smoke.py")}
        measured = placed(item.nodeid, tiers)
        if measured is None:
            measured = _local_markers(item, record)
        for name in [n for n, yes in static.items() if yes] + measured:
            item.add_marker(getattr(pytest.mark, name))
    result = yield
    if config.getoption("write_tiers", False):  # every marker is on now (hardening's too)
        fixed = [item for item in items if is_static(item)]
        if fixed:  # their tier does not depend on a measurement: not run to write tiers
            items[:] = [item for item in items if not is_static(item)]
            config.hook.pytest_deselected(items=fixed)
    return result


# -------------------------------------------------------------------------- checking

def tier_warnings(tiers, seen, limit=8):
    """Lines that say which tests of this run ``tiers`` (tests/tiers.json) lacks and which
    of its fast tests measured ``process`` or more than `WARN_CPU_S` CPU-seconds."""
    lines = []
    measured = {k: t for k, t in seen["tests"].items() if not t.get("static")}
    missing = sorted(k for k in measured if k not in tiers)
    if missing:
        lines.append(f"{len(missing)} test(s) not in tests/tiers.json (placed by this "
                     f"checkout's measurement): " + ", ".join(missing[:limit])
                     + (", ..." if len(missing) > limit else ""))
    moved = []
    for nodeid in sorted(k for k in measured if tiers.get(k) == []):
        test = measured[nodeid]
        markers = measured_markers(test, seen["fixtures"])
        cpu = _cost(test, seen["fixtures"])
        if "process" in markers or cpu > WARN_CPU_S:
            moved.append(f"{nodeid} ({' '.join(markers)}, {cpu:g} CPU-s)")
    if moved:
        lines.append(f"{len(moved)} test(s) of the fast tier in tests/tiers.json measured "
                     f"slower: " + ", ".join(moved[:limit])
                     + (", ..." if len(moved) > limit else ""))
    if lines:
        lines.append("refresh: make test-tiers (every test), or pytest -n 2 --write-tiers "
                     "FILE... for the files you changed; commit tests/tiers.json")
    return lines


def pytest_terminal_summary(terminalreporter, config):
    if hasattr(config, "workerinput") or config.getoption("write_tiers", False) \
            or not _seen["tests"]:
        return
    lines = tier_warnings(read_tiers(), _seen)
    if lines:
        terminalreporter.write_sep("-", "test tiers (tests/tiers.py)", yellow=True)
        for line in lines:
            terminalreporter.write_line(f"warning: {line}")
