"""Synthetic grey-scale faces, 92x112 (width x height), deterministic from a seed.

Each identity draws a face shape (ellipse axes), skin tone, hair (tone, hairline,
length, fringe), brows (height, slope, thickness), eyes (spacing, size, iris tone),
nose (length, width) and mouth (height, width, lip tone, resting smile). Each image of
it then varies the pose (shift, rotation, scale), the expression (smile, eyes
open/closed, raised brows), the background, a lighting gradient, the exposure and the
sensor noise. Pure numpy + PIL; `ssgallery.images.face_drawing` draws the faces.

``variation`` scales every per-image variation around its middle, with the same
random draws (1: the default set, the same pixels as before the option; 0: every image
of a person alike but for closed eyes). For eigenfaces the default set is deliberately
harder than AT&T; the committed ``sample_data/`` is seed 0 at `SAMPLE_VARIATION`, chosen
as the variation whose sets came nearest AT&T (benchmarks/sample_difficulty.py prints
the one its rule picks now beside it).

``ssgallery synth OUT --identities 20 --images 10 --seed 0 --probes 2`` (the command
line) writes ``OUT/faces/c01..c20/01.png..10.png`` (the layout ``ssgallery enroll`` reads),
``OUT/probes/`` (new images of c01..c03, ``c03_genuine_1.png``..., and of two identities
that are not enrolled, ``unknown1_1.png``...) and ``OUT/README.txt``.
"""

import io
import shutil
from pathlib import Path

import numpy as np

from ssgallery.checks import jobs_int, non_negative
from ssgallery.errors import InputError, SsgalleryError, option
from ssgallery.formats.atomic import check_writable, has_prefix, output_lock, write_text_atomic
from ssgallery.images.face_drawing import HEIGHT, WIDTH, render_face  # noqa: F401  (public here too)
from ssgallery.progress import as_progress
from ssgallery.safeio import file_name

DEFAULT_SEED = 0
DEFAULT_VARIATION = 1.0
# sample_data/ (make demo): chosen by benchmarks/sample_difficulty.py on seeds 1-10
# (never seed 0, the committed set's) as the variation nearest AT&T for eigenfaces
SAMPLE_VARIATION = 0.55
N_PROBE_CLIENTS = 3   # probes/c01..c03_genuine_<k>.png
N_UNKNOWN = 2         # probes/unknown1_<k>.png, unknown2_<k>.png
_UNKNOWN_BASE = 100_000  # identity indices of the never-enrolled probe identities
_PROBE_BASE = 1_000      # image indices of probe images (never used by faces/)


# ----------------------------------------------------------------- identities
def identity_params(seed, identity):
    """Facial parameters of one identity (dict of floats), a pure function of the seeds."""
    r = np.random.default_rng(np.random.SeedSequence([seed, identity, 0]))
    u = r.uniform
    a = u(27, 35)                     # face half-width
    b = a * u(1.2, 1.45)              # face half-height
    return {
        "a": a, "b": b, "skin": u(115, 200), "jaw": u(0.0, 0.25),
        "hair": u(15, 110), "hairline": u(0.22, 0.5), "hair_curve": u(-0.15, 0.25),
        "hair_len": u(-0.3, 0.9), "hair_puff": u(1, 6), "fringe": u(0, 1),
        "eye_dx": u(10, 15), "eye_y": u(-0.2, -0.05), "eye_rx": u(4, 6.5),
        "eye_ry": u(2, 3.4), "iris": u(20, 90), "iris_r": u(1.8, 2.8),
        "brow_dy": u(5, 9), "brow_slope": u(-0.25, 0.2), "brow_w": u(1.2, 3.0),
        "brow_len": u(6, 11), "brow_tone": u(0.25, 0.6),
        "nose_len": u(0.22, 0.38), "nose_w": u(3.5, 7), "nose_dark": u(0.12, 0.3),
        "mouth_y": u(0.42, 0.58), "mouth_w": u(7, 13), "lip_w": u(1.6, 3.4),
        "lip_tone": u(0.45, 0.8), "smile": u(-0.5, 0.8),
    }


def _image_params(seed, identity, image, p, variation=DEFAULT_VARIATION):
    """Pose, expression and capture conditions of one image of an identity; every
    deviation from its middle times ``variation`` (the same random draws at any value;
    closed eyes stay closed; at 1 the values are drawn exactly as they always were)."""
    r = np.random.default_rng(np.random.SeedSequence([seed, identity, 1, image]))
    u = r.uniform
    v = float(variation)
    # The magnitudes (at variation 1) make separable identities, but not trivially.
    pose = (r.normal(0, 0.9), r.normal(0, 0.9), r.normal(0, np.radians(2.4)),
            r.normal(0, 0.024))
    smile = p["smile"] + v * r.normal(0, 0.3)
    eyes = 0.12 if u() < 0.12 else 0.9 + v * (u(0.7, 1.1) - 0.9)
    return {
        "dx": v * pose[0], "dy": v * pose[1], "rot": v * pose[2],
        "scale": float(np.exp(v * pose[3])), "smile": float(np.clip(smile, -1.2, 1.5)),
        "eyes": eyes, "brow_up": v * r.normal(0, 0.6),
        "bg": 70 + v * (u(49, 91) - 70), "bg_grad": v * r.normal(0, 6),
        "light_dir": u(0, 2 * np.pi), "light": v * u(0.0, 0.21),
        "gain": float(np.exp(v * r.normal(0, 0.042))),
        "noise": v * u(1.5, 3.6), "noise_seed": int(r.integers(2**32)),
    }


# ----------------------------------------------------------------- ground truth
AGE_RANGE = (20.0, 70.0)  # apparent age, in "years", of the aged faces


def apparent_age(seed, identity, image):
    """Apparent age of one image (uniform on AGE_RANGE), from its own random stream, so
    that drawing it changes none of the other parameters."""
    r = np.random.default_rng(np.random.SeedSequence([seed, identity, 2, image]))
    return float(r.uniform(*AGE_RANGE))


def aged_params(p, age):
    """Identity parameters ``p`` as they look at ``age``: with t = 0 at the youngest and
    1 at the oldest apparent age, the hair greys and the hairline recedes, the jaw
    widens, lids droop, lips thin and the brows lighten (the renderer is unchanged)."""
    t = (age - AGE_RANGE[0]) / (AGE_RANGE[1] - AGE_RANGE[0])
    q = dict(p)
    q["hair"] = p["hair"] + t * (190.0 - p["hair"]) * 0.85
    q["hairline"] = p["hairline"] + 0.22 * t
    q["jaw"] = p["jaw"] - 0.2 * t
    q["eye_ry"] = p["eye_ry"] * (1.0 - 0.3 * t)
    q["lip_w"] = p["lip_w"] * (1.0 - 0.4 * t)
    q["brow_tone"] = p["brow_tone"] + 0.35 * t
    return q


def image_attributes(seed, identity, image, age=False, variation=DEFAULT_VARIATION):
    """The continuous ground truth of one image: what the renderer was given.

    Returns a dict: ``light_x``, ``light_y`` (lighting gradient across the face: strength
    times the cosine / sine of its direction; positive = brighter towards the image's
    right / bottom), ``light_dir`` (degrees), ``light`` (strength), ``gain`` (exposure),
    ``smile``, ``scale``; and ``age`` when ``age`` is true (`apparent_age`);
    ``variation``: see `face_image`.
    """
    p = identity_params(seed, identity)
    q = _image_params(seed, identity, image, p, variation)
    out = {"light_x": q["light"] * np.cos(q["light_dir"]),
           "light_y": q["light"] * np.sin(q["light_dir"]),
           "light_dir": float(np.degrees(q["light_dir"])), "light": q["light"],
           "gain": q["gain"], "smile": q["smile"], "scale": q["scale"]}
    if age:
        out["age"] = apparent_age(seed, identity, image)
    return {k: float(v) for k, v in out.items()}


def face_image(seed, identity, image, age=False, variation=DEFAULT_VARIATION):
    """One synthetic face as uint8 (112, 92): identity ``identity``, image ``image``;
    ``age``: rendered at its `apparent_age` (other parameters unchanged); ``variation``:
    its pose, expression and capture conditions this far from their middle (module doc)."""
    p = identity_params(seed, identity)
    q = _image_params(seed, identity, image, p, variation)
    if age:
        p = aged_params(p, apparent_age(seed, identity, image))
    return np.rint(render_face(p, q)).astype(np.uint8)


def generate(identities=20, images=10, seed=DEFAULT_SEED, age=False,
             variation=DEFAULT_VARIATION):
    """All gallery images in memory (``age``, ``variation``: see `face_image`).

    Returns
    -------
    images : ndarray, shape (identities * images, 112, 92), uint8
    labels : ndarray, shape (identities * images,), str ("c01", ...)
    """
    _check_counts(identities, images, 0)
    names = client_names(identities)
    imgs = [face_image(seed, i, k, age, variation) for i in range(identities)
            for k in range(images)]
    return np.stack(imgs), np.repeat(np.array(names), images)


def attributes(identities=20, images=10, seed=DEFAULT_SEED, age=False,
               variation=DEFAULT_VARIATION):
    """`image_attributes` of every gallery image, in `generate`'s order:
    a list of dicts, each with ``identity`` (client id) first."""
    names = client_names(identities)
    return [{"identity": names[i], **image_attributes(seed, i, k, age, variation)}
            for i in range(identities) for k in range(images)]


def client_names(identities):
    """Client ids c01, c02, ... (zero-padded to at least two digits)."""
    width = max(2, len(str(identities)))
    return [f"c{i + 1:0{width}d}" for i in range(identities)]


def probe_images(identities=20, seed=DEFAULT_SEED, probes=2, variation=DEFAULT_VARIATION):
    """Probe images as ``{file name: uint8 (112, 92)}``: new images of the first three
    clients (``c01_genuine_1.png``...) and of two never-enrolled identities
    (``unknown1_1.png``...), at ``variation`` (`face_image`)."""
    names = client_names(identities)
    out = {}
    for i in range(min(N_PROBE_CLIENTS, identities)):
        for k in range(probes):
            out[f"{names[i]}_genuine_{k + 1}.png"] = face_image(seed, i, _PROBE_BASE + k,
                                                                variation=variation)
    for j in range(N_UNKNOWN):
        for k in range(probes):
            out[f"unknown{j + 1}_{k + 1}.png"] = face_image(seed, _UNKNOWN_BASE + j,
                                                            _PROBE_BASE + k,
                                                            variation=variation)
    return out


# ----------------------------------------------------------------- writing
def _png_bytes(arr):
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(arr, mode="L").save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def _check_counts(identities, images, probes):
    if identities < 1 or images < 1 or probes < 0:
        raise SsgalleryError(f"synth: need identities >= 1 and images >= 1 and probes >= 0, "
                             f"got {identities}, {images}, {probes}")


README = """\
Synthetic faces generated by ssgallery (ssgallery.images.synth), not real people.

    {command}

faces/<client>/NN.png  {identities} identities x {images} images, 8-bit grey, 92x112 (WxH).
                       Per identity: face shape, skin tone, hair, brows, eyes, nose, mouth.
                       Per image: pose (shift, rotation, scale), expression (smile, eyes
                       open/closed, brows), background, lighting gradient, exposure, noise,
                       each this far from its middle: --variation {variation:g} (1: the default).
attributes.csv         per face image: path, identity, the lighting gradient it was rendered
                       with (light_x, light_y, light_dir in degrees, light), exposure (gain),
                       smile, scale (and age with --age)
probes/                images that are not in faces/:
  cNN_genuine_K.png    a new image of enrolled client cNN (a genuine claim for cNN,
                       an impostor claim for any other client)
  unknownJ_K.png       an identity that is not enrolled (an impostor claim for everyone)
"""


def _identities_pngs(seed, start, stop, images, age=False, variation=DEFAULT_VARIATION):
    """PNG bytes of every gallery image of identities start..stop-1 (one parallel job)."""
    return [[_png_bytes(face_image(seed, i, k, age, variation)) for k in range(images)]
            for i in range(start, stop)]


def _all_identity_pngs(seed, identities, images, jobs, age=False,
                       variation=DEFAULT_VARIATION):
    """Yield the PNG bytes of each identity in order; ``jobs`` > 1 renders them in that
    many processes (joblib), in blocks of identities."""
    block = 25
    starts = range(0, identities, block)
    if jobs == 1 or identities <= block:
        for start in starts:
            yield from _identities_pngs(seed, start, min(start + block, identities), images,
                                        age, variation)
        return
    from joblib import Parallel, delayed

    run = Parallel(n_jobs=jobs, return_as="generator", pre_dispatch="2*n_jobs")
    for out in run(delayed(_identities_pngs)(seed, s, min(s + block, identities), images, age,
                                             variation)
                   for s in starts):
        yield from out


def attributes_csv(identities, images, seed, age=False, variation=DEFAULT_VARIATION):
    """``attributes.csv`` text: path (relative to the set), identity, then every
    `image_attributes` column, one row per gallery image."""
    rows = attributes(identities, images, seed, age, variation)
    cols = [k for k in rows[0] if k != "identity"]
    lines = [",".join(["path", "identity", *cols])]
    for k, row in enumerate(rows):
        path = f"faces/{row['identity']}/{k % images + 1:02d}.png"
        lines.append(",".join([path, row["identity"], *(f"{row[c]:.6g}" for c in cols)]))
    return "\n".join(lines) + "\n"


def write_sample_data(out, identities=20, images=10, seed=DEFAULT_SEED, probes=2,
                      force=False, jobs=1, age=False, progress=None,
                      variation=DEFAULT_VARIATION):
    """Write ``out/faces``, ``out/probes``, ``out/attributes.csv`` (the continuous ground
    truth of every face image, `image_attributes`) and ``out/README.txt``.

    ``age``: faces rendered at their apparent age (`face_image`), recorded in the
    ``age`` column; the default set is not aged. ``progress``
    (`ssgallery.progress.Progress`): one step per identity rendered. ``variation``
    (a finite number >= 0): every image's pose, expression and capture conditions this
    far from their middle (`face_image`).

    The two folders are built beside their final place and renamed into it, so a crash
    never leaves a half-written set. An existing non-empty set is replaced only when
    ``force``; an existing ``attributes.csv`` or ``README.txt`` only when synth wrote it
    (`TEXT_KINDS`), or with ``force``, never a store or a gallery. The run holds the
    output lock of ``out`` and of each text file (`ssgallery.formats.atomic.output_lock`):
    another writer waits. Returns the list of written files (Paths).
    """
    _check_counts(identities, images, probes)
    jobs_int("jobs", jobs)
    variation = non_negative("variation", variation)
    out = Path(file_name(out))  # a NUL character: one line, not pathlib's ValueError
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder", path=out)
    out.mkdir(parents=True, exist_ok=True)
    with output_lock(out):  # one writer of the set: another synth waits, then checks
        _check_set(out, force)
        written = _write_folders(out, identities, images, seed, probes, jobs, age,
                                 progress, variation)
        command = (f"ssgallery synth {out.name} --identities {identities} "
                   f"--images {images} --seed {seed} --probes {probes}" + " --age" * bool(age)
                   + (f" --variation {variation:g}" if variation != DEFAULT_VARIATION else ""))
        texts = {"attributes.csv": attributes_csv(identities, images, seed, age, variation),
                 "README.txt": README.format(command=command, identities=identities,
                                             images=images, variation=variation)}
        for name, text in texts.items():
            write_text_atomic(out / name, text, TEXT_KINDS[name], force, lock=True)
            written.append(out / name)
    return written


# what synth writes beside the folders, told by their first bytes: an existing file is
# replaced when it is one of them, any other only with force (never a store or gallery)
TEXT_KINDS = {"attributes.csv": has_prefix(b"path,identity,"),
              "README.txt": has_prefix(README.split("\n", 1)[0].encode())}


def _check_set(out, force):
    """Refuse, before anything is rendered, a non-empty ``faces/`` or ``probes/`` of
    ``out`` (unless ``force``) and an ``attributes.csv`` or ``README.txt`` that synth
    may not replace (`TEXT_KINDS`; `ssgallery.formats.atomic.check_writable`)."""
    for t in (out / "faces", out / "probes"):
        if t.exists() and any(t.iterdir()) and not force:
            raise InputError(f"already exists and is not empty (use {option('force')} to "
                             "replace it)", path=t)
    for name, kind in TEXT_KINDS.items():
        check_writable(out / name, kind, force)


def _write_folders(out, identities, images, seed, probes, jobs, age, progress, variation):
    """``out/faces`` and ``out/probes``, built beside their final place and renamed into
    it; the list of written files."""
    targets = [out / "faces", out / "probes"]
    tmp = {t: out / f".{t.name}.tmp" for t in targets}
    for d in tmp.values():
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
    written = []
    try:
        pngs = _all_identity_pngs(seed, identities, images, jobs, age, variation)
        with as_progress(progress).phase("rendering faces", identities, "identities") as step:
            for name, data in zip(client_names(identities), pngs, strict=True):
                written += _write_client(tmp[out / "faces"] / name, out / "faces" / name, data)
                step.advance()
        for fname, arr in probe_images(identities, seed, probes, variation).items():
            (tmp[out / "probes"] / fname).write_bytes(_png_bytes(arr))
            written.append(out / "probes" / fname)
        for final, d in tmp.items():
            if final.exists():
                shutil.rmtree(final)
            d.rename(final)
    finally:
        for d in tmp.values():
            shutil.rmtree(d, ignore_errors=True)
    return written


def _write_client(folder, final, pngs):
    """Write one client's PNGs ``01.png``... into ``folder``; their paths under ``final``."""
    folder.mkdir()
    for k, png in enumerate(pngs):
        (folder / f"{k + 1:02d}.png").write_bytes(png)
    return [final / f"{k + 1:02d}.png" for k in range(len(pngs))]


# ----------------------------------------------------------------- self-check
