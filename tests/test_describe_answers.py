"""An external matcher program's ``--describe`` answer is data: each field the contract
reads has the contract's JSON type (``symmetric``, ``quality`` and ``serve`` booleans,
``range`` two numbers), and an answer of another type is refused with one line naming
the program, exit 2, no store written; never read as what it is not (main read
``"serve": "yes"`` with bool() in ``_offers`` and as false in ``_ask_describe``,
``"symmetric": "no"`` as true, ``"range": ["0", "255"]`` with float(); a range end of
10**400 was an internal error). A real program (tests/matchers/described.py) prints the
answer the test chooses."""

import json
import os
import sys

import h5py
import pytest
from click.testing import CliRunner
from helpers import make_faces

from ssgallery.cli import main

PROGRAM = os.path.join(os.path.dirname(__file__), "matchers", "described.py")
CMD = f"{sys.executable} {PROGRAM}"


@pytest.fixture(scope="module")
def faces(tmp_path_factory):
    return make_faces(str(tmp_path_factory.mktemp("described") / "faces"), n_clients=2,
                      n_images=3, shape=(16, 12))


def _enroll(faces, store, answer):
    """``enroll`` with the program answering ``--describe`` with its description
    updated by ``answer`` (JSON text)."""
    return CliRunner().invoke(main, ["enroll", faces, "--store", str(store), "-q",
                                     "--matcher-cmd", CMD], env={"DESCRIBED_JSON": answer})


@pytest.mark.parametrize("answer, needle", [
    ('{"serve": "yes"}', "serve must be true or false, got 'yes'"),
    ('{"serve": 1}', "serve must be true or false, got 1"),
    ('{"symmetric": "no"}', "symmetric must be true or false, got 'no'"),
    ('{"symmetric": 0}', "symmetric must be true or false, got 0"),
    ('{"quality": "yes"}', "quality must be true or false, got 'yes'"),
    ('{"range": ["0", "255"]}', "got [\"0\", \"255\"]"),
    ('{"range": [false, true]}', "got [false, true]"),
    ('{"range": {"0": 1, "255": 2}}', "got {\"0\": 1, \"255\": 2}"),
    ('{"range": "09"}', "got '09'"),
    ('{"range": null}', "got null"),
    ('{"range": [0, ' + "9" * 400 + "]}", "got [0, 99999"),
], ids=["serve-yes", "serve-1", "symmetric-no", "symmetric-0", "quality-yes", "range-strings",
        "range-bools", "range-object", "range-string", "range-null", "range-10**400"])
def test_a_describe_field_of_another_type_is_refused(faces, tmp_path, answer, needle):
    store = tmp_path / "e.h5"
    r = _enroll(faces, store, answer)
    assert r.exit_code == 2, (r.exit_code, r.output)
    err = r.stderr
    assert err.count("\n") == 1 and "Traceback" not in err, err
    field = next(iter(json.loads(answer)))
    assert err.startswith(f"ssgallery: error: matcher {CMD} --describe: {field} must be"), err
    assert needle in err, err
    assert not store.exists()


def test_the_contract_types_are_accepted(faces, tmp_path):
    """JSON booleans and a range with an open end (Infinity, which Python's json reads)
    are the contract's: the store records what the program said."""
    store = tmp_path / "e.h5"
    r = _enroll(faces, store, '{"serve": false, "quality": false, "symmetric": false, '
                              '"range": [0, Infinity]}')
    assert r.exit_code == 0, r.output
    with h5py.File(store, "r") as f:
        state = f["matcher"].attrs
        assert int(state["serve_offered"]) == 0 and int(state["symmetric"]) == 0
        assert list(f["matcher/range"][()]) == [0.0, float("inf")]


@pytest.mark.parametrize("reply, needle", [
    ('{"ok": "yes"}', "ok must be true or false, got 'yes'"),
    ('{"ok": 1}', "ok must be true or false, got 1"),
    ('{"ok": "false"}', "ok must be true or false, got 'false'"),
], ids=["ok-yes", "ok-1", "ok-false-string"])
def test_a_served_reply_whose_ok_is_no_boolean_is_refused(faces, tmp_path, reply, needle):
    """The persistent mode's reply is an answer too: ``{"ok": true}`` (the matrix is
    written) or ``{"error": ...}``; an ``ok`` of another type is one line naming the
    program, exit 2 (main took any truthy ``ok`` for true: enroll exit 0)."""
    err = _served_enroll_fails(faces, tmp_path / "e.h5", reply)
    assert f"matcher {CMD} --serve: {needle}" in err, err


def _served_enroll_fails(faces, store, reply):
    """``enroll`` with the program served and each request answered with the line
    ``reply``: one line on stderr (returned), exit 2, no store."""
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(store), "-q",
                                  "--matcher-cmd", CMD],
                           env={"DESCRIBED_JSON": '{"serve": true}', "DESCRIBED_REPLY": reply})
    assert r.exit_code == 2, (r.exit_code, r.output)
    err = r.stderr
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert not store.exists()
    return err


def test_a_served_reply_of_ok_true_is_used(faces, tmp_path):
    store = tmp_path / "e.h5"
    r = CliRunner().invoke(main, ["enroll", faces, "--store", str(store), "-q",
                                  "--matcher-cmd", CMD], env={"DESCRIBED_JSON": '{"serve": true}'})
    assert r.exit_code == 0, r.output
    with h5py.File(store, "r") as f:
        assert int(f["matcher"].attrs["serve_offered"]) == 1


@pytest.mark.parametrize("reply, needle", [
    ('{"ok": false}', ('--serve answered {"ok": false}: neither {"ok": true} nor '
                      '{"error": "..."} (the request failed, no reason given)')),
    ("{}", "--serve answered {}: neither"),
    ('{"ok": false, "error": ""}', '--serve answered {"ok": false, "error": ""}: neither'),
    ("[1]", ("--serve answered '[1]', not a JSON object (its stdout holds only reply lines: "
            "log to stderr)")),
    ("Loading model...", "--serve answered 'Loading model...', not a JSON object"),
    ('{"error": "GPU out of memory"}', "failed: GPU out of memory"),
], ids=["ok-false", "empty-object", "empty-error", "list", "banner", "error"])
def test_a_served_reply_without_ok_or_error_says_what_it_was(faces, tmp_path, reply, needle):
    """A served reply that is not ``{"ok": true}`` says what the program answered: main
    said 'matcher PROG failed: None' for ``{"ok": false}``, ``{}`` and ``[1]``, and
    'failed: ' for an empty error. One line naming the program, exit 2, no store."""
    from ssgallery.matchers.external.serve import close_shared

    close_shared(CMD.split())  # a reply that is a request's failure keeps it running
    err = _served_enroll_fails(faces, tmp_path / "e.h5", reply)
    assert err.startswith(f"ssgallery: error: matcher {CMD} "), err
    assert needle in err and "None" not in err, err
