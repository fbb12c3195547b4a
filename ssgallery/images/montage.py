"""Montage of a client's virtual prototypes with their weights β (the paper's
interpretability figure, Fig. 5): prototypes with β > 0 pull the score up (they look
like the client: "genuine-like"), prototypes with β < 0 pull it down ("impostor-like").

PIL only (default font), no matplotlib.
"""

import re
from pathlib import Path

import numpy as np

from ssgallery.errors import InputError
from ssgallery.formats.atomic import PNG_SIGNATURE, atomic_path, check_writable, has_prefix
from ssgallery.tables import signed

GENUINE = (30, 150, 60)     # green border: beta > 0
IMPOSTOR = (200, 40, 40)    # red border: beta < 0
NEUTRAL = (128, 128, 128)   # beta == 0


def _font(size):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except (TypeError, ValueError, OSError, ImportError):  # PIL without FreeType
        return ImageFont.load_default()


def beta_label(beta):
    """Caption of one prototype, e.g. ``('beta = +0.8300', 'genuine-like')``."""
    kind = "genuine-like" if beta > 0 else "impostor-like" if beta < 0 else "unused"
    return f"beta = {signed(beta)}", kind


def prototype_montage(images, beta, title=None, scale=2, columns=6, names=None):
    """Grid of prototype images, each with a coloured border and its β below.

    Parameters
    ----------
    images : array, shape (m, H, W)
        Prototype images, grey on [0, 255] (values outside are clipped).
    beta : array, shape (m,)
        Prototype weights; β > 0 green "genuine-like", β < 0 red "impostor-like".
    title : str or None
        Line printed above the grid (e.g. the client id, bias and threshold).
    scale : int
        Integer up-scaling of each image (nearest neighbour keeps pixels honest).
    columns : int
        Maximum prototypes per row.
    names : list of str or None
        Per-prototype names shown above each tile (default ``z1``, ``z2``...).

    Returns
    -------
    PIL.Image.Image, mode "RGB"
    """
    from PIL import Image, ImageDraw

    images, beta = _checked(images, beta)
    m, h, w = images.shape
    scale, columns = max(1, int(scale)), max(1, int(columns))
    names = list(names) if names is not None else [f"z{j + 1}" for j in range(m)]
    font, small = _font(14), _font(12)
    border, pad, caption = 5, 10, 54
    labels = [f"{name}: {beta_label(b)[0]}" for name, b in zip(names, beta)]
    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    frame_w = w * scale + 2 * border
    # a tile is as wide as its frame or its widest caption: captions never overlap
    tile_w = max(frame_w, *(int(np.ceil(measure.textlength(t, font=font))) + 2 for t in labels))
    tile_h = h * scale + 2 * border + caption
    cols = min(columns, m)
    rows = -(-m // cols)
    top = 30 if title else pad
    legend = "green: beta > 0 (genuine-like)   red: beta < 0 (impostor-like)"
    texts = [(str(title) if title else "", font), (legend, _font(10))]
    width = max(cols * (tile_w + pad) + pad, 360,  # the title and legend are never cut
                *(int(np.ceil(measure.textlength(t, font=f))) + 2 * pad for t, f in texts))
    canvas = Image.new("RGB", (width, top + rows * (tile_h + pad) + 16), "white")
    draw = ImageDraw.Draw(canvas)
    if title:
        draw.text((pad, 8), str(title), fill="black", font=font)
    for j in range(m):
        r, c = divmod(j, cols)
        x0 = pad + c * (tile_w + pad)
        y0 = top + r * (tile_h + pad)
        _draw_tile(canvas, draw, (x0, y0), images[j], beta[j], labels[j], scale, border,
                   (font, small))
    draw.text((pad, canvas.height - 15), legend, fill=(90, 90, 90), font=_font(10))
    return canvas


def _checked(images, beta):
    """``images`` as float (m, H, W) (one (H, W) image: m = 1) and ``beta`` as float
    (m,); raises `InputError` on other shapes, a count mismatch or a non-finite value."""
    images = np.asarray(images, dtype=float)
    beta = np.asarray(beta, dtype=float).ravel()
    if images.ndim == 2:
        images = images[None]
    if images.ndim != 3 or len(images) == 0:
        raise InputError(f"montage: images must have shape (m, H, W) with m >= 1, "
                         f"got {images.shape}")
    if len(beta) != len(images):
        raise InputError(f"montage: {len(images)} images but {len(beta)} weights")
    if not (np.all(np.isfinite(beta)) and np.all(np.isfinite(images))):
        raise InputError("montage: images or weights contain NaN or infinite values")
    return images, beta


def _draw_tile(canvas, draw, corner, image, b, label, scale, border, fonts):
    """One prototype's tile at ``corner`` (x0, y0): the image up-scaled in a frame of
    its β's colour, its caption ``label`` and its kind below."""
    from PIL import Image

    (x0, y0), (h, w), (font, small) = corner, image.shape, fonts
    frame_w = w * scale + 2 * border
    colour = GENUINE if b > 0 else IMPOSTOR if b < 0 else NEUTRAL
    draw.rectangle([x0, y0, x0 + frame_w - 1, y0 + h * scale + 2 * border - 1], fill=colour)
    face = Image.fromarray(np.clip(np.rint(image), 0, 255).astype(np.uint8), mode="L")
    face = face.resize((w * scale, h * scale), Image.NEAREST).convert("RGB")
    canvas.paste(face, (x0 + border, y0 + border))
    kind = beta_label(b)[1]
    ty = y0 + h * scale + 2 * border + 3
    draw.text((x0 + 1, ty), label, fill="black", font=font)
    draw.text((x0 + 1, ty + 19), kind, fill=colour, font=small)


# How a file of each format begins: an existing file that does not is not a montage of
# that format, and is replaced only when forced (`ssgallery.formats.atomic`).
# BMP: "BM", then its DIB header's size at byte 14 (one of the header versions), so that
# a text beginning "BM" is none; WebP: a RIFF container of form WEBP (a WAV file is RIFF).
SIGNATURES = {"PNG": (PNG_SIGNATURE,), "JPEG": (b"\xff\xd8\xff",),
              "GIF": (b"GIF87a", b"GIF89a"),
              "BMP": (re.compile(rb"BM.{12}[\x0c\x28\x34\x38\x40\x6c\x7c]\x00\x00\x00",
                                 re.DOTALL),),
              "TIFF": (b"II*\x00", b"MM\x00*"),
              "WEBP": (re.compile(rb"RIFF.{4}WEBP", re.DOTALL),)}


def _not_replaceable(existing):
    return False  # a format without a known signature: an existing file only forced


def save_montage(path, images, beta, title=None, force=False, **kwargs):
    """Write `prototype_montage` to ``path`` atomically; the format follows the
    extension (.png, .jpg, .gif, .bmp, .tif, .webp...). An existing file is replaced
    when it is an image of that format (`SIGNATURES`), any other only with ``force``.
    Returns the Path."""
    from PIL import Image

    path = Path(path)
    ext = path.suffix.lower()
    fmt = Image.registered_extensions().get(ext)
    if fmt is None:
        raise InputError(f"unknown image extension '{ext or '(none)'}' (use .png)", path=path)
    if not path.parent.is_dir():
        raise InputError("folder does not exist", path=path.parent)
    kind = has_prefix(*SIGNATURES[fmt]) if fmt in SIGNATURES else _not_replaceable
    check_writable(path, kind, force)  # before drawing
    img = prototype_montage(images, beta, title=title, **kwargs)
    with atomic_path(path, kind, force, lock=True) as tmp:  # another writer waits
        img.save(tmp, format=fmt)
    return path
