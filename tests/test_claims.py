"""``verify --claims``: many (probe, claimed id) pairs in one process, one line per claim,
and ``identify --csv``."""

import csv
import io
import json
import shutil

import pytest
from click.testing import CliRunner
from helpers import copied, write_non_faces

from ssgallery.app import claims as claims_module
from ssgallery.app.claims import Claim, parse_claims, verify_claims
from ssgallery.cli import main
from ssgallery.datasets import sample_faces_path

PROBES = sample_faces_path().parent / "probes"
CLIENTS = "c01,c02,c03"


@pytest.fixture(scope="module")
def gallery(tmp_path_factory, sample_store, sample_gallery_3):
    """The sample data enrolled, clients c01-c03 compressed at m = 2 (once per run:
    conftest.py)."""
    folder = tmp_path_factory.mktemp("claims")
    for res in (sample_store["enrolled"], sample_gallery_3["compressed"]):
        assert res["exit_code"] == 0, res["output"]
    assert CLIENTS == "c01,c02,c03"  # the clients of sample_gallery_3
    return copied(sample_gallery_3["gallery"], folder, "g.h5")


def _probe(name):
    return str(PROBES / name)


def _verify(gallery, *args, **kwargs):
    return CliRunner().invoke(main, ["verify", "--gallery", gallery, *args], **kwargs)


def _single(gallery, probe, claim):
    """What plain ``verify PROBE --claim ID`` says of one claim."""
    res = _verify(gallery, probe, "--claim", claim, "--json")
    return json.loads(res.stdout)["results"][0]


def test_parse_claims_formats_header_comments_and_bad_lines():
    lines = ["# a comment", "probe claim", "a.png c01", "", "  b.png\tc02  ",
             "only-one", "x.png c01 extra"]
    claims, bad = parse_claims(lines)
    assert claims == [Claim(3, "a.png", "c01"), Claim(5, "b.png", "c02")]
    assert [(b.line, b.reason) for b in bad] == [
        (6, "expected a probe path and a claimed id (PROBE CLAIM), got 1 field(s)"),
        (7, "expected a probe path and a claimed id (PROBE CLAIM), got 3 field(s)")]
    # CSV: detected from the first claim line's comma; quoted paths keep their spaces
    claims, bad = parse_claims(["probe,claimed_id", '"my probes/a,b.png",c01', "c.png,",
                                "d.png c02"])
    assert claims == [Claim(2, "my probes/a,b.png", "c01")]
    assert [(b.line, b.reason) for b in bad] == [
        (3, "expected a probe path and a claimed id (PROBE,CLAIM), got an empty field"),
        (4, "expected a probe path and a claimed id (PROBE,CLAIM), got 1 field(s)")]
    # a header is only a header on the first claim line
    assert parse_claims(["a.png c01", "probe claim"])[0][1] == Claim(2, "probe", "claim")


def test_claims_of_several_clients_score_as_verify_does(gallery, tmp_path):
    pairs = [("c02_genuine_1.png", "c02"), ("c01_genuine_1.png", "c01"),
             ("c01_genuine_2.png", "c03"), ("c03_genuine_1.png", "c03"),
             ("unknown1_1.png", "c02"), ("c02_genuine_2.png", "c02")]
    listing = tmp_path / "claims.txt"
    listing.write_text("".join(f"{_probe(p)} {c}\n" for p, c in pairs))
    res = _verify(gallery, "--claims", str(listing), "--json")
    out = json.loads(res.stdout)
    got = out["results"]
    assert [(r["line"], r["claim"]) for r in got] == [(i + 1, c) for i, (_, c) in
                                                      enumerate(pairs)]
    for (probe, claim), r in zip(pairs, got):  # the same numbers as one verify per claim
        one = _single(gallery, _probe(probe), claim)
        assert r["score"] == pytest.approx(one["score"], rel=1e-9, abs=1e-12)
        assert (r["threshold"], r["status"]) == (one["threshold"], one["status"])
    statuses = [r["status"] for r in got]
    assert statuses[0] == statuses[5] == "accept" and statuses[2] == statuses[4] == "reject"
    assert res.exit_code == 1 and out["exit_status"] == 1  # some rejected: verify's rule
    assert out["counts"]["reject"] == statuses.count("reject") and out["bad_lines"] == []
    # text: one aligned line per claim in the file's order, then the counts
    res = _verify(gallery, "--claims", str(listing))
    lines = res.stdout.splitlines()
    assert len(lines) == len(pairs) + 1 and res.exit_code == 1
    assert lines[0].startswith(_probe("c02_genuine_1.png")) and lines[0].endswith("ACCEPT")
    assert " c03  score " in lines[2] and lines[2].endswith("REJECT")
    assert lines[-1].startswith(f"{len(pairs)} claims: ") and "rejected" in lines[-1]
    # every claim accepted: 0
    listing.write_text(f"{_probe('c02_genuine_1.png')} c02\n{_probe('c02_genuine_2.png')} c02\n")
    assert _verify(gallery, "--claims", str(listing)).exit_code == 0


def test_unknown_clients_unreadable_probes_and_bad_lines(gallery, tmp_path):
    listing = tmp_path / "claims.txt"
    listing.write_text(f"# probe claim\n{_probe('c02_genuine_1.png')} c02\n"
                       f"{_probe('c02_genuine_1.png')} c99\n"
                       f"{tmp_path / 'missing.png'} c01\n"
                       f"just-one-field\n"
                       f"{_probe('c03_genuine_2.png')} c03 extra\n")
    res = _verify(gallery, "--claims", str(listing))
    assert res.exit_code == 2  # a claim that could not be checked
    out = res.stdout.splitlines()
    assert len(out) == 4  # 3 claims + the counts
    assert out[0].endswith("ACCEPT")
    assert out[1].endswith("UNKNOWN-CLIENT  the gallery has no client 'c99'")
    assert out[2].endswith("ERROR  no such file")
    assert out[3] == "3 claims: 1 accepted, 1 unknown client, 1 unreadable probe, " \
        "2 bad line(s) skipped"
    assert res.stderr.splitlines() == [
        (f"ssgallery: error: {listing}: line 5: expected a probe path and a claimed id "
        "(PROBE CLAIM), got 1 field(s)"),
        (f"ssgallery: error: {listing}: line 6: expected a probe path and a claimed id "
        "(PROBE CLAIM), got 3 field(s)")]
    # CSV: one row per line of the file that is a claim or a bad line, in file order
    res = _verify(gallery, "--claims", str(listing), "--csv")
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [(r["line"], r["status"]) for r in rows] == [
        ("2", "accept"), ("3", "unknown-client"), ("4", "error"), ("5", "bad-line"),
        ("6", "bad-line")]
    assert rows[0]["score"] and not rows[1]["score"] and res.exit_code == 2
    # a failure to acquire with nothing rejected: 3, as verify
    junk = write_non_faces(str(tmp_path / "junk"))["black"]
    listing.write_text(f"{_probe('c02_genuine_1.png')} c02\n{junk} c02\n")
    res = _verify(gallery, "--claims", str(listing), "--json")
    assert res.exit_code == 3
    assert [r["status"] for r in json.loads(res.stdout)["results"]] == [
        "accept", "failure-to-acquire"]
    # several: counted in the plural ("16 unreadable probe" before)
    listing.write_text(f"{tmp_path / 'a.png'} c01\n{tmp_path / 'b.png'} c02\n"
                       f"{_probe('c02_genuine_1.png')} c98\n{_probe('c02_genuine_1.png')} c99\n")
    res = _verify(gallery, "--claims", str(listing))
    assert res.exit_code == 2
    assert res.stdout.splitlines()[-1] == "4 claims: 2 unknown clients, 2 unreadable probes"
    # an id close to one of the gallery's (another case): the reason names it
    listing.write_text(f"{_probe('c03_genuine_1.png')} C03\n")
    res = _verify(gallery, "--claims", str(listing))
    assert res.stdout.splitlines()[0].endswith(
        "UNKNOWN-CLIENT  the gallery has no client 'C03': did you mean 'c03'?")
    # one: in the singular ("1 claims" before)
    listing.write_text(f"{_probe('c02_genuine_1.png')} c99\n")
    res = _verify(gallery, "--claims", str(listing))
    assert res.exit_code == 2
    assert res.stdout.splitlines()[-1] == "1 claim: 1 unknown client"


def test_long_names_are_clipped_in_the_table(gallery, tmp_path):
    """A claims line of 100,000 characters (a probe path, a claimed id) was echoed whole
    in the table, the id twice (its column and UNKNOWN-CLIENT's reason): 300 KB of
    stdout for 3 claims. Each is shown as --list's missing path is (40dad81): its first
    200 characters and its length. --csv and --json keep the fields as read."""
    listing = tmp_path / "claims.txt"
    probe = _probe("c02_genuine_1.png")
    listing.write_text(f"{'a' * 100_000} c01\n{probe} {'c' * 100_000}\n{probe} c02\n")
    res = _verify(gallery, "--claims", str(listing))
    assert res.exit_code == 2, res.output
    out = res.stdout.splitlines()
    assert len(out) == 4 and max(len(line) for line in out) < 1000, \
        [len(line) for line in out]
    assert out[0].startswith(f"{'a' * 200}... (100000 characters)  c01 ") and "ERROR" in out[0]
    assert out[1].endswith(f"{'c' * 200}... (100000 characters)  UNKNOWN-CLIENT  the "
                           f"gallery has no client '{'c' * 200}... (100000 characters)'")
    assert out[2].endswith("ACCEPT")
    rows = list(csv.DictReader(io.StringIO(_verify(gallery, "--claims", str(listing),
                                                   "--csv").stdout)))
    assert [len(r["probe"]) for r in rows] == [100_000, len(probe), len(probe)]
    assert len(rows[1]["claim"]) == 100_000


def test_a_long_claimed_id_costs_no_more_than_a_short_one(gallery):
    """An unknown id of 1,000,000 characters: numpy's search of the client index widened
    every id to its length (a 100,000-character --claim made verify of a 10,000-client
    gallery allocate 1 GB), and the did-you-mean hint folded and matched it whole (a
    claims line of 30,000,000 characters: 21 s, 1.3 GB). No id is longer than 200 bytes:
    such a name is looked up in no index and given no hint; the read allocates what it
    allocates for a short unknown id (tracemalloc)."""
    import tracemalloc

    from ssgallery.errors import UnknownClientError
    from ssgallery.formats.gallery import read_client

    def peak(client_id):
        tracemalloc.start()
        try:
            with pytest.raises(UnknownClientError) as info:
                read_client(gallery, client_id, matcher=False)
            return tracemalloc.get_traced_memory()[1], str(info.value)
        finally:
            tracemalloc.stop()

    long = "a" * 1_000_000
    short, _ = peak("c99")
    most, message = peak(long)
    assert most < short + 100_000, (most, short)  # bytes; on main: + 3 MB and more
    assert f"unknown client '{'a' * 200}... (1000000 characters)'" in message, message[:400]


def test_claims_from_stdin_and_csv_with_spaces(gallery, tmp_path):
    folder = tmp_path / "my probes"
    folder.mkdir()
    shutil.copy(_probe("c02_genuine_1.png"), folder / "a, b.png")
    text = f'probe,claim\n"{folder / "a, b.png"}",c02\n{_probe("c01_genuine_1.png")},c02\n'
    res = _verify(gallery, "--claims", "-", "--csv", input=text)
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [(r["line"], r["probe"], r["status"]) for r in rows] == [
        ("2", str(folder / "a, b.png"), "accept"), ("3", _probe("c01_genuine_1.png"), "reject")]
    assert res.exit_code == 1
    res = _verify(gallery, "--claims", "-", input="# nothing\n\n")
    assert res.exit_code == 2 and "standard input: claims file has no claims" in res.stderr


def test_claims_usage_and_gallery_errors(gallery, tmp_path):
    listing = tmp_path / "claims.txt"
    listing.write_text(f"{_probe('c03_genuine_1.png')} c03\n")
    for args in (["--claims", str(listing), "--claim", "c03"],
                 ["--claims", str(listing), _probe("c03_genuine_1.png")],
                 [_probe("c03_genuine_1.png")],
                 ["--claims", str(listing), "--json", "--csv"]):
        res = _verify(gallery, *args)
        assert res.exit_code == 2 and res.stdout == "", args  # one line (usage error)
        assert res.stderr.count("\n") == 1, (args, res.stderr)
        assert res.stderr.endswith(" (see 'ssgallery verify --help')\n"), (args, res.stderr)
    res = _verify(gallery, "--claims", str(tmp_path / "none.txt"))
    assert res.exit_code == 2 and res.stderr == \
        f"ssgallery: error: {tmp_path / 'none.txt'}: no such claims file\n"
    # a gallery that fails its checks stops the run: nothing printed per claim
    res = _verify(str(tmp_path / "nothing.h5"), "--claims", str(listing))
    assert res.exit_code == 2 and res.stdout == "" and len(res.stderr.splitlines()) == 1


def test_claims_in_batches_give_the_same_results(gallery, monkeypatch):
    claims = [Claim(i + 1, _probe(p), c) for i, (p, c) in enumerate(
        [("c03_genuine_1.png", "c03"), ("c01_genuine_1.png", "c01"), ("c01_genuine_2.png", "c03"),
         ("c03_genuine_2.png", "c03"), ("unknown2_1.png", "c03"), ("c02_genuine_2.png", "c01")])]
    whole = verify_claims(gallery, claims)
    monkeypatch.setattr(claims_module, "BATCH", 2)
    steps = []

    class Count(claims_module.as_progress(None).__class__):
        def start(self, label, total, unit=""):
            steps.append((label, total, unit))

        def advance(self, n=1):
            steps.append(n)

    batched = verify_claims(gallery, claims, progress=Count())
    assert [(r.line, r.status) for r in batched] == [(r.line, r.status) for r in whole]
    # the same numbers up to the rounding of another batch size (BLAS)
    assert [r.score for r in batched] == pytest.approx([r.score for r in whole], rel=1e-12)
    # c03: 4 claims in batches of 2, c01: 2 claims
    assert steps == [("checking claims", 6, "claims"), 2, 2, 2]


def test_identify_csv_one_line_per_probe(gallery):
    probes = [_probe("c02_genuine_1.png"), _probe("unknown1_1.png")]
    res = CliRunner().invoke(main, ["identify", *probes, "--gallery", gallery, "--top", "2",
                                    "--csv", "--verification-thresholds"])
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    as_json = CliRunner().invoke(main, ["identify", *probes, "--gallery", gallery, "--top", "2",
                                        "--json", "--verification-thresholds"])
    found = json.loads(as_json.stdout)
    assert res.exit_code == as_json.exit_code
    assert [r["probe"] for r in rows] == probes
    for row, want in zip(rows, found["results"]):
        best = want["candidates"][0]
        assert row["status"] == ("identified" if want["identified"] else "unknown")
        assert (row["identified"] or None) == want["identified"]
        assert row["client"] == best["client"] and float(row["score"]) == best["score"]
        assert float(row["ranking_score"]) == best["ranking_score"]
        assert row["candidates"] == ";".join(c["client"] for c in want["candidates"])
        assert row["ranking"] == found["ranking"]
        assert row["operating_point"] == found["operating_point"]["kind"] == "verification"
    assert rows[0]["identified"] == "c02"


def _claims_with_a_swap(src, other, one, both, first_status):
    """verify --claims ``both`` on ``src``, with ``other`` swapped in at the path right
    after the opens a run of ``one`` (its first claim) makes; returns the run, checked
    refused as a gallery changed while read."""
    from helpers import opens_of

    with opens_of(src) as first:  # the opens of a run that reads the first client
        assert _verify(src, "--claims", str(one)).exit_code in first_status
    with opens_of(src, swap_in=other, after=first["opens"]) as seen:
        res = _verify(src, "--claims", str(both))
    assert seen["swapped"]
    assert res.exit_code == 2 and res.stdout == "", res.output
    assert res.stderr.startswith(f"ssgallery: error: {src}: changed while this command read "
                                 "it (digest "), res.stderr
    return res


def test_claims_read_every_client_from_the_gallery_they_began_with(gallery, sample_store,
                                                                  tmp_path):
    """verify --claims reads each claimed client's model as it first meets it, opening the
    gallery again each time, and scores every model with the matcher of the first read:
    another gallery of the same clients written at the path meanwhile had its models
    scored (and their thresholds applied) beside the first one's matcher, exit 0 or 1.
    Now each read is compared with the first one's digest: one line naming the gallery,
    exit 2. The file is replaced for real, between the first client's read and the
    second's (`helpers.opens_of`)."""

    other = tmp_path / "other.h5"  # the same clients at other prototypes
    made = CliRunner().invoke(main, ["compress", "--store", sample_store["store"], "-o",
                                     str(other), "--m", "2", "--clients", CLIENTS,
                                     "--seed", "1", "-q"])
    assert made.exit_code == 0, made.output
    src = tmp_path / "g.h5"
    shutil.copy(gallery, src)
    one = tmp_path / "one.txt"
    one.write_text(f"{_probe('c01_genuine_1.png')} c01\n")
    both = tmp_path / "both.txt"
    both.write_text(f"{_probe('c01_genuine_1.png')} c01\n{_probe('c02_genuine_1.png')} c02\n")
    res = _claims_with_a_swap(src, other, one, both, (0, 1))
    assert res.stderr.endswith("another gallery was written here meanwhile): run the "
                               "command again\n"), res.stderr


@pytest.mark.parametrize("order", ["unknown first", "unknown second"])
def test_an_unknown_client_is_unknown_in_the_gallery_the_claims_read(gallery, sample_store,
                                                                     tmp_path, order):
    """An unknown client id was not compared with the gallery the other claims were read
    from: read first, it did not even record the digest, so the next client came from
    whatever was at the path then; read second, from a gallery written meanwhile, it was
    reported unknown ('the gallery has no client') of a gallery that has it beside the
    scores of the one that does not. Now an unknown client's read is compared like any
    other: one line naming the gallery, exit 2. Galleries: c01-c03 (A) and c01-c04 (B);
    c04 claimed first from A then c01 from B, or c01 from B then c04 from A."""

    four = tmp_path / "four.h5"
    made = CliRunner().invoke(main, ["compress", "--store", sample_store["store"], "-o",
                                     str(four), "--m", "2", "--clients", CLIENTS + ",c04",
                                     "--seed", "1", "-q"])
    assert made.exit_code == 0, made.output
    src, claims = tmp_path / "g.h5", [f"{_probe('unknown1_1.png')} c04",
                                      f"{_probe('c01_genuine_1.png')} c01"]
    shutil.copy(gallery, src)
    other = four
    if order == "unknown second":
        claims.reverse()
        shutil.copy(four, src)
        other = tmp_path / "three.h5"
        shutil.copy(gallery, other)
    one, both = tmp_path / "one.txt", tmp_path / "both.txt"
    one.write_text(claims[0] + "\n")
    both.write_text("\n".join(claims) + "\n")
    res = _claims_with_a_swap(src, other, one, both, (0, 1, 2))
    assert len(res.stderr.splitlines()) == 1, res.stderr
