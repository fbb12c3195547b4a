"""The FRR half of benchmarks/strangers.py (its second table).

Does compress's expected FRR hold for the clients' own images that no model saw?
`compress` records the FRR of its held-out genuine scores at the stored thresholds
(the threshold CV's fold models scoring the images each fold held out) with two 95 %
intervals: the Clopper-Pearson interval counting every held-out genuine score as an
independent trial (``expected_frr_ci``, what `info` printed before) and the one `info`
prints, by client (``frr_by_client``, `ssgallery.biometrics.intervals.clustered_interval`:
one client's images are rejected together when its model is poor). Here each client's
fresh genuine images (never enrolled, never held out: AT&T's 5 images a client did not
train on, 10 new synthetic images of each client) are claimed against it at the
gallery's thresholds, and the rejected share is set beside both intervals.
"""

import numpy as np

from ssgallery.images.synth import client_names, face_image


def write_fresh(probes, identities, seed, images, fresh):
    """``probes/<client>/fresh_<k>.png``: ``fresh`` new images of every synthetic client
    of ``seed`` (image indices ``images``.. , after the ``images`` enrolled ones: never
    enrolled, never held out)."""
    from PIL import Image

    for i, name in enumerate(client_names(identities)):
        (probes / name).mkdir()
        for k in range(fresh):
            Image.fromarray(face_image(seed, i, images + k), mode="L").save(
                probes / name / f"fresh_{k + 1:02d}.png")


def measure_frr(table, clients, thresholds, calibration):
    """Fresh genuine claims rejected at per-client ``thresholds`` (NaN, a failure to
    acquire: rejected), the bootstrap interval over clients (2000 resamples, seed 0), and
    compress's recorded expected FRR with its two intervals (``calibration``: the
    gallery's record, `ssgallery.app.thresholds.frr_record`)."""
    rejected, claims = [], []
    for c, t in zip(clients, thresholds):
        mine = table.score[(table.claimed == c) & (table.real == c)]
        rejected.append(int(np.sum(~(mine >= t))))
        claims.append(int(mine.size))
    k, n = np.array(rejected, float), np.array(claims, float)
    rng = np.random.default_rng(0)
    boot = [k[i].sum() / max(n[i].sum(), 1) for i in
            (rng.integers(0, k.size, k.size) for _ in range(2000))]
    by_client = calibration["frr_by_client"]
    return {"rejected": int(k.sum()), "claims": int(n.sum()),
            "clients": int(np.sum(n > 0)),
            "interval": [float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))],
            "expected": calibration["expected_frr"],
            "expected_ci": calibration["expected_frr_ci"],
            "held_out": calibration["genuine"],
            "client_ci": by_client["ci"], "design_effect": by_client["design_effect"]}


def _side(m, key):
    """Where the measured fresh FRR lies against the run's interval ``key``."""
    lo, hi = m[key]
    frr = m["rejected"] / m["claims"]
    return "below" if frr < lo else "above" if frr > hi else "inside"


def frr_row(r, pct):
    """One page row of a run's ``frr`` (`measure_frr`)."""
    m = r["frr"]
    lo, hi = m["expected_ci"]
    clo, chi = m["client_ci"]
    return [r["dataset"], str(r["run"]),
            f"{pct(m['expected'])} [{pct(lo)}, {pct(hi)}] ({m['held_out']} scores)",
            f"[{pct(clo)}, {pct(chi)}] ({m['design_effect']:.2f})",
            f"{m['rejected']} / {m['claims']} ({m['clients']} clients)",
            (f"{pct(m['rejected'] / m['claims'])} [{pct(m['interval'][0])}, "
             f"{pct(m['interval'][1])}]"),
            _side(m, "expected_ci"), _side(m, "client_ci")]


FRR_HEAD = ["data set", "run", "expected FRR % [95 % claims as independent] (held out)",
            "[95 % by client] (design effect; info)", "fresh genuine claims rejected",
            "measured FRR % [95 % over clients]", "vs the claims' interval",
            "vs the clients' interval"]


def frr_coverage(runs):
    """Lines: per data set, how many runs' fresh FRR lies inside each interval (and
    below it)."""
    out = {}
    for r in runs:
        c = out.setdefault(r["dataset"], {"claims": [], "clients": []})
        c["claims"].append(_side(r["frr"], "expected_ci"))
        c["clients"].append(_side(r["frr"], "client_ci"))
    return "\n".join(
        f"- {d}: the fresh genuine FRR inside the interval counting claims in "
        f"{c['claims'].count('inside')} of {len(c['claims'])} runs "
        f"({c['claims'].count('below')} below it), inside the interval by client in "
        f"{c['clients'].count('inside')} of {len(c['clients'])} "
        f"({c['clients'].count('below')} below it)" for d, c in out.items())
