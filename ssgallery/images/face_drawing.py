"""Drawing of the synthetic faces of `ssgallery.images.synth`: one grey-scale image,
92x112 (width x height), from an identity's facial parameters and one image's pose,
expression and capture conditions. Shapes are signed distances (`_ellipse`, `_curve`)
turned into anti-aliased coverage (`_soft`) and painted in order, back to front. Pure
numpy.
"""

import numpy as np

WIDTH, HEIGHT = 92, 112


def _soft(d, width=0.7):
    """Coverage of a shape with signed distance ``d`` (negative inside), anti-aliased."""
    return 0.5 * (1.0 - np.tanh(d / (2.0 * width)))


def _ellipse(u, v, cx, cy, a, b):
    return (np.sqrt(((u - cx) / a) ** 2 + ((v - cy) / b) ** 2) - 1.0) * np.minimum(a, b)


_REACH = 15.0  # canonical pixels: beyond this a stroke's coverage is < 1e-5 (no grey level)


def _curve(u, v, xs, ys, half_width):
    """Signed distance to a thick polyline through points (xs, ys) (dense sampling).

    Computed only near the polyline (within `_REACH` of its bounding box, where
    the anti-aliased coverage is not ~0); +inf elsewhere (coverage 0)."""
    xs, ys = np.asarray(xs, dtype=float), np.broadcast_to(np.asarray(ys, dtype=float),
                                                          np.shape(xs))
    reach = _REACH + half_width
    near = ((u > xs.min() - reach) & (u < xs.max() + reach)
            & (v > ys.min() - reach) & (v < ys.max() + reach))
    out = np.full(u.shape, np.inf)
    un, vn = u[near], v[near]
    d2 = (un[:, None] - xs) ** 2 + (vn[:, None] - ys) ** 2
    out[near] = np.sqrt(d2.min(-1)) - half_width
    return out


def _paint(img, alpha, tone):
    img *= 1.0 - alpha
    img += alpha * tone


def render_face(p, q):
    """Render one face image, float (112, 92) on [0, 255] before quantisation.

    Parameters
    ----------
    p : dict, `ssgallery.images.synth.identity_params`
    q : dict, per-image conditions from ``ssgallery.images.synth._image_params``
    """
    y, u, v = _pose(q)
    img = q["bg"] + q["bg_grad"] * (y / HEIGHT)
    img = np.array(img, dtype=float)
    layers = _Layers(img)
    _paint_head(layers.paint, u, v, p)
    _paint_eyes(layers.paint, u, v, p, q)
    _paint_nose_mouth(layers.paint, u, v, p, q)
    # lighting gradient across the subject, exposure, noise
    a = p["a"]
    light = 1.0 + q["light"] * (np.cos(q["light_dir"]) * u + np.sin(q["light_dir"]) * v) / a
    img = img * (1 - layers.cover) + layers.fg * light
    img = img * q["gain"]
    img += np.random.default_rng(q["noise_seed"]).normal(0, q["noise"], img.shape)
    return np.clip(img, 0, 255)


def _pose(q):
    """Pixel rows ``y`` (centred) and the canonical coordinates ``(u, v)`` of every pixel:
    the face centred at the origin, shifted, rotated and scaled by the pose of ``q``."""
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH].astype(float)
    x = x - (WIDTH / 2 - 0.5 + q["dx"])
    y = y - (HEIGHT / 2 + 4 + q["dy"])
    c, s = np.cos(q["rot"]), np.sin(q["rot"])
    u = (c * x + s * y) / q["scale"]
    v = (-s * x + c * y) / q["scale"]
    return y, u, v


class _Layers:
    """The foreground layers of a face (``fg``) and their coverage (``cover``), painted
    in order and lit together over the background."""

    def __init__(self, img):
        self.fg = np.zeros_like(img)
        self.cover = np.zeros_like(img)

    def paint(self, alpha, tone):
        """Paint ``tone`` with coverage ``alpha`` over what is painted so far."""
        _paint(self.fg, alpha, tone)
        np.maximum(self.cover, alpha, out=self.cover)


def _paint_head(paint, u, v, p):
    """Hair behind the face, neck, face, hair on the forehead."""
    a, b = p["a"], p["b"]
    hair, skin = p["hair"], p["skin"]
    # hair behind the face, down to hair_len * b
    hb = _soft(_ellipse(u, v, 0, -p["hair_puff"], a + p["hair_puff"], b + p["hair_puff"]))
    paint(hb * _soft(v - p["hair_len"] * b, 1.5), hair)
    # neck, then the face (narrower jaw at the bottom)
    paint(_soft(np.abs(u) - a * 0.45) * _soft(-(v - b * 0.5)), skin * 0.8)
    width = a * (1.0 - p["jaw"] * np.clip(v / b, 0, 1) ** 2)
    face = _soft(_ellipse(u, v, 0, 0, width, b))
    shade = 1.0 - 0.18 * np.clip((u / a) ** 2 + (v / b) ** 2, 0, 1)
    paint(face, skin * shade)
    # hair on the forehead above a curved hairline, with an optional fringe
    line = -b + p["hairline"] * b + p["hair_curve"] * b * (u / a) ** 2
    line = line + p["fringe"] * 6.0 * np.cos(np.clip(u / a, -1, 1) * np.pi / 2) ** 4
    paint(hb * _soft(v - line, 1.0), hair)


def _paint_eyes(paint, u, v, p, q):
    """Brows (raised by the expression), then the eyes: sclera, iris, and the lid when
    (half) closed."""
    hair, skin = p["hair"], p["skin"]
    ey = p["eye_y"] * p["b"]
    for side in (-1, 1):
        cx = side * p["eye_dx"]
        t = np.linspace(-0.5, 0.5, 12) * p["brow_len"]
        xs = cx + t
        ys = ey - p["brow_dy"] - q["brow_up"] - side * p["brow_slope"] * t - 0.08 * t ** 2 / 4
        paint(_soft(_curve(u, v, xs, ys, p["brow_w"] / 2)), hair * p["brow_tone"] + 10)
    ry = p["eye_ry"] * q["eyes"]
    for side in (-1, 1):
        cx = side * p["eye_dx"]
        sclera = _soft(_ellipse(u, v, cx, ey, p["eye_rx"], max(ry, 1.0)))
        sclera *= np.clip((q["eyes"] - 0.1) / 0.5, 0, 1)  # closed eyes: lid only
        paint(sclera, min(skin + 45, 235))
        iris = _soft(_ellipse(u, v, cx, ey, p["iris_r"], p["iris_r"])) * sclera
        paint(iris, p["iris"])
        lid = _soft(_curve(u, v, cx + np.linspace(-1, 1, 12) * p["eye_rx"],
                           np.full(12, ey - ry), 0.6))
        paint(lid * 0.8, skin * 0.45)


def _paint_nose_mouth(paint, u, v, p, q):
    """Nose (shaded side, nostrils, bright ridge), then the mouth: a thick curve whose
    curvature is the smile."""
    b, skin = p["b"], p["skin"]
    ey = p["eye_y"] * b
    nl = p["nose_len"] * b
    t = np.linspace(0, 1, 12)
    paint(0.5 * _soft(_curve(u, v, p["nose_w"] * 0.5 * t, ey + 3 + nl * t, 1.0), 1.2),
          skin * (1 - p["nose_dark"]))
    for side in (-1, 1):
        paint(_soft(_ellipse(u, v, side * p["nose_w"] * 0.45, ey + 3 + nl, 1.6, 1.0)),
              skin * (1 - 2.2 * p["nose_dark"]))
    paint(0.35 * _soft(_ellipse(u, v, -1.0, ey + 3 + nl * 0.5, 1.2, nl * 0.45)),
          min(skin + 25, 240))
    my, mw = p["mouth_y"] * b, p["mouth_w"]
    t = np.linspace(-1, 1, 25)
    paint(_soft(_curve(u, v, t * mw, my - q["smile"] * 3.0 * (t ** 2 - 0.3), p["lip_w"] / 2)),
          skin * p["lip_tone"])
