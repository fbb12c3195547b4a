"""How pytest runs this suite: the test tiers (tests/tiers.py, tests/tiers.json), what is
measured, how tiers.json is merged and checked, and --dist (tests/conftest.py)."""

import json
import multiprocessing
import subprocess
import sys
import time
from pathlib import Path

import tiers

ROOT = Path(__file__).resolve().parent.parent


def test_a_loky_pool_and_a_spawned_process_count_as_processes_and_cpu():
    from joblib import Parallel, delayed

    meter = tiers._Meter().start()
    assert meter.stop()[1] == 0
    meter = tiers._Meter().start()
    total = Parallel(n_jobs=2, backend="loky")(delayed(sum)(range(3_000_000)) for _ in range(4))
    cpu, processes = meter.stop()
    assert total == [sum(range(3_000_000))] * 4
    assert processes >= 1 and cpu > 0.1  # the workers' share: no audit event sees them
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor().shutdown(wait=True)  # no worker left behind
    # a spawned process started and joined in the phase: reaped, so counted by its rusage
    meter = tiers._Meter().start()
    child = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(0,))
    child.start()
    child.join()
    assert child.exitcode == 0 and meter.stop()[1] >= 1


def test_markers_count_every_fixture_a_test_uses():
    fixtures = {"m::gallery": {"cpu": 3.0, "processes": 0},
                "m::program": {"cpu": 0.1, "processes": 1}}
    assert tiers.measured_markers({"cpu": 0.2, "processes": 0, "fixtures": []}, fixtures) == []
    assert tiers.measured_markers({"cpu": 0.2, "processes": 0, "fixtures": ["m::gallery"]},
                                  fixtures) == ["heavy"]
    assert tiers.measured_markers({"cpu": 0.0, "processes": 0, "fixtures": ["m::program"]},
                                  fixtures) == ["process"]
    assert tiers.measured_markers({"cpu": 1.5, "processes": 2, "fixtures": []},
                                  fixtures) == ["process", "heavy"]
    # a module fixture that asked for a trained gallery with request.getfixturevalue
    fixtures["m::data"] = {"cpu": 0.1, "processes": 0, "uses": ["m::gallery"]}
    assert tiers.measured_markers({"cpu": 0.2, "processes": 0, "fixtures": ["m::data"]},
                                  fixtures) == ["heavy"]


def test_a_fixture_that_asks_for_another_makes_its_tests_pay_for_it(tmp_path):
    """The set-up that request.getfixturevalue triggers counts for every test that uses
    the fixture that asked, also once it is built (module scope: the second test)."""
    (tmp_path / "conftest.py").write_text(CONFTEST.format(tests=str(ROOT / "tests")))
    (tmp_path / "test_x.py").write_text(TEST_X)
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-p", "no:xdist", "test_x.py"], cwd=tmp_path, capture_output=True,
                         text=True, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "3 passed" in res.stdout


CONFTEST = """
import sys
sys.path.insert(0, {tests!r})
import pytest
import tiers


def pytest_configure(config):
    config.pluginmanager.register(tiers, "ssgallery-tiers")


@pytest.fixture(scope="session")
def expensive():
    return sum(i * i for i in range(15_000_000))


@pytest.fixture(scope="module")
def data(request):
    return request.getfixturevalue("expensive")
"""

TEST_X = """
import tiers


def test_first(data):
    assert data


def test_second(data):
    assert data


def test_seen():
    fixtures = tiers._seen["fixtures"]
    key = [k for k in fixtures if k.endswith("::data")][0]
    assert [k.split("::")[-1] for k in fixtures[key]["uses"]] == ["expensive"]
    first, second = (tiers._seen["tests"][f"test_x.py::test_{n}"] for n in ("first", "second"))
    # the second test pays for the same set-ups as the first: the same records, exactly
    # (not their rounded CPU sums: the tests' own milliseconds differ from run to run)
    paid = tiers._used(first, fixtures)
    assert tiers._used(second, fixtures) == paid
    cost = sum(f["cpu"] for f in paid)
    assert cost > 0.3
    # and so gets the same markers: with the threshold at half the set-up's measured cost,
    # both are heavy whatever the machine's speed or load (expensive alone costs about
    # HEAVY_CPU_S here, so at the real threshold a few ms could tip one test over it)
    tiers.HEAVY_CPU_S = cost / 2
    assert tiers.measured_markers(second, fixtures) == tiers.measured_markers(first, fixtures)
    assert "heavy" in tiers.measured_markers(second, fixtures)
"""


def test_a_run_replaces_the_files_it_ran_whole_and_keeps_the_rest(tmp_path):
    for name in ("a", "b", "c"):
        (tmp_path / "tests").mkdir(exist_ok=True)
        (tmp_path / "tests" / f"test_{name}.py").write_text("")
    old = {"tests/test_a.py::gone": [], "tests/test_a.py::t": [],
           "tests/test_b.py::t1": ["heavy"], "tests/test_b.py::t2": [],
           "tests/test_c.py::t": ["process"], "tests/test_deleted.py::t": []}
    run = {"tests/test_a.py::t": ["heavy"], "tests/test_b.py::t1": [],
           "tests/test_new.py::t": []}
    (tmp_path / "tests" / "test_new.py").write_text("")
    partial = {str((tmp_path / "tests" / "test_b.py").resolve())}  # test_b.py::t1 asked for
    merged = tiers.merged_tiers(old, run, tmp_path, partial)
    assert merged == {"tests/test_a.py::t": ["heavy"], "tests/test_b.py::t1": [],
                      "tests/test_b.py::t2": [], "tests/test_c.py::t": ["process"],
                      "tests/test_new.py::t": []}
    assert list(merged) == sorted(merged)
    # a run stopped early (-x) drops nothing it did not reach
    stopped = tiers.merged_tiers(old, run, tmp_path, partial, complete=False)
    assert stopped["tests/test_a.py::gone"] == [] and "tests/test_deleted.py::t" not in stopped


def test_a_new_parameter_is_placed_like_its_siblings():
    committed = {"t.py::f[a]": [], "t.py::f[b]": ["heavy"], "t.py::g": ["process"],
                 "t.py::fx[a]": ["process"]}
    assert tiers.placed("t.py::f[a]", committed) == []
    assert tiers.placed("t.py::f[new]", committed) == ["heavy"]
    assert tiers.placed("t.py::g", committed) == ["process"]
    assert tiers.placed("t.py::h", committed) is None
    assert tiers.placed("t.py::h[x]", committed) is None
    assert tiers.placed("t.py::fx[b]", committed) == ["process"]
    assert tiers.function_id("t.py::f[a-b[c]]") == "t.py::f"


def test_tiers_json_is_written_one_test_a_line_and_read_back(tmp_path):
    path = tmp_path / "tests" / "tiers.json"
    path.parent.mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("")
    run = {"tests/test_x.py::b[1-2]": ["process", "heavy"], "tests/test_x.py::a": []}
    tiers.write_tiers(run, path=path)
    assert tiers.read_tiers(path) == run
    text = path.read_text()
    assert '    "tests/test_x.py::a": "fast",\n' in text
    assert '    "tests/test_x.py::b[1-2]": "process heavy"\n' in text
    assert json.loads(text)["heavy_cpu_s"] == tiers.HEAVY_CPU_S


def test_a_run_warns_about_missing_and_misplaced_tests():
    seen = {"tests": {"t::fast": {"cpu": 0.1, "processes": 0, "fixtures": []},
                      "t::new": {"cpu": 0.1, "processes": 0, "fixtures": []},
                      "t::now_heavy": {"cpu": 0.5, "processes": 0, "fixtures": ["f::g"]},
                      "t::now_process": {"cpu": 0.1, "processes": 1, "fixtures": []},
                      "t::noise": {"cpu": 1.5, "processes": 0, "fixtures": []},
                      "t::known_heavy": {"cpu": 9.0, "processes": 0, "fixtures": []},
                      "t::hardening": {"cpu": 9.0, "processes": 1, "fixtures": [],
                                       "static": True}},
            "fixtures": {"f::g": {"cpu": 4.0, "processes": 0}}}
    committed = {"t::fast": [], "t::now_heavy": [], "t::now_process": [], "t::noise": [],
                 "t::known_heavy": ["heavy"]}
    lines = tiers.tier_warnings(committed, seen)
    assert lines[0] == ("1 test(s) not in tests/tiers.json (placed by this checkout's "
                        "measurement): t::new")
    assert lines[1] == ("2 test(s) of the fast tier in tests/tiers.json measured slower: "
                        "t::now_heavy (heavy, 4.5 CPU-s), t::now_process (process, 0.1 CPU-s)")
    assert lines[2].startswith("refresh: make test-tiers")
    assert tiers.tier_warnings({k: [] for k in seen["tests"]} | committed
                               | {"t::now_heavy": ["heavy"], "t::now_process": ["process"]},
                               seen) == []


def test_the_committed_tiers_place_every_test_of_the_suite_and_no_other():
    """tests/tiers.json is current: every test that no static rule places has its entry
    (a fresh clone's make test-fast needs no measurement of its own; a new parameter of a
    parametrized test is placed like its siblings), every entry belongs to a test function
    that exists, and it was written with today's threshold. After adding or renaming tests:
    ``pytest -n 2 --write-tiers tests/test_x.py`` (or make test-tiers), commit the file."""
    res = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                          "-p", "no:cacheprovider", "-p", "no:xdist",
                          "-m", "not (slow or hardening or bench)", "tests"],
                         cwd=ROOT, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    collected = {line for line in res.stdout.splitlines() if "::" in line}
    committed = tiers.read_tiers()
    assert len(collected) > 400
    # a new parameter of a parametrized test (an example read from the docs) is placed
    # like its siblings; an entry is stale when its test function is gone
    missing = sorted(k for k in collected if tiers.placed(k, committed) is None)
    functions = {tiers.function_id(k) for k in collected}
    stale = sorted(k for k in committed if tiers.function_id(k) not in functions)
    assert not missing, (f"{len(missing)} test(s) not in tests/tiers.json: {missing[:10]}; "
                         f"run pytest -n 2 --write-tiers on their files and commit it")
    assert not stale, f"{len(stale)} entries of tests/tiers.json name no test: {stale[:10]}"
    assert {m for markers in committed.values() for m in markers} <= set(tiers.MEASURED)
    written = json.loads(tiers.TIERS_FILE.read_text(encoding="utf-8"))
    assert written["heavy_cpu_s"] == tiers.HEAVY_CPU_S

# pytest run as a program with a plugin that records the --dist the session will use,
# after every pytest_configure (tests/conftest.py's included); collects, runs nothing
PROBE = """
import json, sys, pytest
class Probe:
    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config):
        self.dist = getattr(config.option, "dist", None)
probe = Probe()
code = pytest.main(["-q", "-p", "no:cacheprovider", "--collect-only", *sys.argv[1:],
                    "tests/test_tables.py"], plugins=[probe])
print(json.dumps({"code": int(code), "dist": probe.dist}))
"""


def _dist(*args):
    res = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True,
                         text=True, check=False)
    answer = json.loads(res.stdout.strip().splitlines()[-1])
    assert answer["code"] == 0, res.stdout + res.stderr
    return answer["dist"]


def test_pytest_runs_without_xdist_and_xdist_runs_a_file_in_one_worker():
    """--dist is chosen in conftest.py, not in pyproject's addopts: -p no:xdist works,
    and -n alone means loadfile (a module fixture built once)."""
    assert _dist("-p", "no:xdist") is None
    assert _dist("-n", "2") == "loadfile"
    assert _dist("-n", "2", "--dist", "load") == "load"
    assert _dist("-n", "2", "--dist=worksteal") == "worksteal"
    assert _dist() == "no"
