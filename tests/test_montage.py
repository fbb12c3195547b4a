"""Prototype montage (the `show` figure): layout, colours, captions, atomic save."""

import numpy as np
import pytest
from PIL import Image

from ssgallery.errors import InputError
from ssgallery.images.montage import GENUINE, IMPOSTOR, beta_label, prototype_montage, save_montage


def protos(m=3, h=28, w=23):
    rng = np.random.default_rng(0)
    return rng.uniform(0, 255, size=(m, h, w))


def test_beta_labels():
    assert beta_label(0.834) == ("beta = +0.8340", "genuine-like")
    assert beta_label(-2.5) == ("beta = -2.5000", "impostor-like")
    assert beta_label(0.0)[1] == "unused"


def _caption_w(*labels):
    """The widest caption in pixels, + 2: a tile is at least that wide."""
    from PIL import ImageDraw

    from ssgallery.images.montage import _font

    draw = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    return max(int(np.ceil(draw.textlength(t, font=_font(14)))) for t in labels) + 2


def test_montage_layout_colours_and_pixels():
    imgs = protos()
    img = prototype_montage(imgs, [0.8, -0.3, 0.1], title="client c03", scale=2)
    assert img.mode == "RGB"
    a = np.asarray(img)
    border, pad, top = 5, 10, 30
    tile_w = _caption_w("z1: beta = +0.8000", "z2: beta = -0.3000", "z3: beta = +0.1000")
    assert tile_w > 23 * 2 + 2 * border  # the captions are wider than the frames here
    # border colour of each tile follows the sign of beta
    for j, colour in enumerate([GENUINE, IMPOSTOR, GENUINE]):
        x0 = pad + j * (tile_w + pad)
        assert tuple(a[top + 1, x0 + 1]) == colour
    # the face is pasted unchanged (nearest-neighbour x2)
    x0 = pad + 1 * (tile_w + pad) + border
    face = a[top + border: top + border + 56: 2, x0: x0 + 46: 2, 0]
    np.testing.assert_array_equal(face, np.rint(imgs[1]).astype(np.uint8))
    # captions and title are drawn (dark pixels below the tiles and above them)
    caption = a[top + 28 * 2 + 2 * border + 2: top + 28 * 2 + 2 * border + 40, pad: pad + tile_w]
    assert (caption.min(-1) < 100).sum() > 30
    assert (a[5:25, pad:120].min(-1) < 100).sum() > 30


def test_montage_wraps_into_rows():
    one_row = prototype_montage(protos(3), [1, 1, 1], columns=6, scale=4)
    two_rows = prototype_montage(protos(8), np.ones(8), columns=4, scale=4)
    assert two_rows.height > one_row.height
    assert two_rows.width == 4 * (max(23 * 4 + 10, _caption_w("z8: beta = +1.0000")) + 10) + 10


def test_montage_title_is_never_cut():
    # an LFW name and one prototype: the title is wider than the tiles and than 360 px
    title = "client George_Walker_Bush_Junior: b = -0.861, threshold = +0.212, m = 1"
    img = np.asarray(prototype_montage(protos(1, 112, 92), [1.0], title=title, scale=2))
    ink = np.nonzero((img[5:25].min(-1) < 100).any(0))[0]
    assert img.shape[1] > 360 and ink.max() < img.shape[1] - 5  # white margin on the right
    # a short title keeps the width of the tiles
    assert prototype_montage(protos(4), np.ones(4), title="c03", scale=4).width == 4 * (
        max(23 * 4 + 10, _caption_w("z4: beta = +1.0000")) + 10) + 10


def test_montage_clips_out_of_range_rendering():
    imgs = protos(2)
    imgs[0, 0, 0], imgs[1, 0, 0] = -40, 400
    clipped = np.asarray(prototype_montage(np.clip(imgs, 0, 255), [1, -1]))
    # the same picture as clipping first (not a uint8 wrap-around: -40 -> 216)
    np.testing.assert_array_equal(np.asarray(prototype_montage(imgs, [1, -1])), clipped)


@pytest.mark.parametrize("images, beta, word", [
    (np.zeros((2, 5, 5)), [1.0], "2 images but 1 weights"),
    (np.zeros((0, 5, 5)), [], "m >= 1"),
    (np.zeros((1, 5, 5)), [np.nan], "NaN"),
    (np.zeros((2, 2, 5, 5)), [1, 1], "shape"),
])
def test_montage_bad_inputs(images, beta, word):
    with pytest.raises(InputError, match=word):
        prototype_montage(images, beta)


def test_save_montage_writes_atomically(tmp_path):
    out = save_montage(tmp_path / "p.png", protos(2), [0.5, -0.5], title="t")
    with Image.open(out) as img:
        assert img.format == "PNG" and img.mode == "RGB"
    save_montage(tmp_path / "p.jpg", protos(1), [0.5])
    assert Image.open(tmp_path / "p.jpg").format == "JPEG"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".p.jpg.lock", ".p.png.lock",
                                                          "p.jpg", "p.png"]  # no temporary


def test_save_montage_errors(tmp_path):
    with pytest.raises(InputError, match="unknown image extension '.xyz'"):
        save_montage(tmp_path / "p.xyz", protos(1), [1])
    with pytest.raises(InputError, match="folder does not exist"):
        save_montage(tmp_path / "no" / "p.png", protos(1), [1])
    with pytest.raises(InputError, match="weights"):
        save_montage(tmp_path / "p.png", protos(2), [1])
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_captions_never_overlap_at_scale_1():
    """At --scale 1 a 92-pixel AT&T prototype is narrower than its caption ('z1: beta =
    +5.5259'): the next tile starts after the caption (it was drawn over it)."""
    from PIL import Image, ImageDraw

    from ssgallery.images.montage import _font

    img = np.asarray(prototype_montage(np.full((2, 112, 92), 128.0), [5.5259, -2.7131],
                                       title="t", scale=1))
    red = np.flatnonzero((img[40] == IMPOSTOR).all(axis=1))  # a row through both frames
    caption = ImageDraw.Draw(Image.new("RGB", (1, 1))).textlength("z1: beta = +5.5259",
                                                                  font=_font(14))
    assert red.size and red[0] > 10 + caption, (red[:1], caption)
