"""How pytest runs this suite (tests/conftest.py, tests/tiers.py)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

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
