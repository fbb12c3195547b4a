"""dlib's face-recognition ResNet evaluated in NumPy on float images.

dlib's Python API computes a descriptor from an 8-bit RGB chip only, so a prototype (a
float image) would have to be rounded before dlib could describe it, and a small step of
the learner would then change nothing. This module reads the weights of
``dlib_face_recognition_resnet_model_v1.dat`` (dlib's own serialisation) and evaluates
the same network on float chips: on an 8-bit chip it gives dlib's descriptor to float32
rounding (tested).

The network (dlib's ``dnn_face_recognition_ex.cpp``): input ``(rgb - mean) / 256``;
conv 7x7/2, affine, relu, max-pool 3x3/2; 15 residual blocks (conv 3x3, affine, relu,
conv 3x3, affine, plus the block's input; the first block of a level has stride 2 and
adds its input average-pooled 2x2/2, zero-padded to the larger shape); global average;
a 256 x 128 linear map without bias. The layer list is read from the file, and a file
with any other layer is refused.
"""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

INPUT_NAME = b"\x01\x15input_rgb_image_sized"
CHIP = 150  # pixels: the network's input side


class ModelError(Exception):
    """The weight file is not the network this module evaluates."""


class _Reader:
    """dlib's serialisation: integers as a control byte (bit 7 sign, low bits the byte
    count) + little-endian bytes; floats as (mantissa, exponent) integers; strings as a
    length + bytes; tensors as version, 4 dimensions and raw float32 (version 2) or the
    dimensions only (version 1, an alias)."""

    def __init__(self, data):
        self.data, self.pos = data, 0

    def int(self):
        control = self.data[self.pos]
        n = control & 0x0F
        value = int.from_bytes(self.data[self.pos + 1:self.pos + 1 + n], "little")
        self.pos += 1 + n
        return -value if control & 0x80 else value

    def float(self):
        mantissa = self.int()
        return mantissa * 2.0 ** self.int()

    def str(self):
        n = self.int()
        text = self.data[self.pos:self.pos + n].decode("ascii", "replace")
        self.pos += n
        return text

    def tensor(self):
        version = self.int()
        dims = [self.int() for _ in range(4)]
        if version != 2:
            return dims
        n = int(np.prod(dims))
        out = np.frombuffer(self.data, "<f4", n, self.pos).copy()
        self.pos += 4 * n
        return out

    def trailer(self):
        """What dlib writes after every layer: three flags and three empty tensors."""
        self.pos += 3
        for _ in range(3):
            self.tensor()


def _layer(reader, name):
    """One layer's parameters: a tuple (kind, ...)."""
    if name == "con_4":
        params = reader.tensor()
        nf, nr, nc, stride, _, pad, _ = (reader.int() for _ in range(7))
        k = reader.tensor()[1]
        reader.tensor()
        for _ in range(4):
            reader.float()
        w = params[: nf * k * nr * nc].reshape(nf, k, nr, nc)
        return ("conv", w, params[nf * k * nr * nc:], stride, pad)
    if name == "affine_":
        params = reader.tensor()
        reader.tensor()
        reader.tensor()
        reader.int()
        half = len(params) // 2
        return ("affine", params[:half][None, :, None, None], params[half:][None, :, None, None])
    if name in ("max_pool_2", "avg_pool_2"):
        nr, _, stride, _, pad, _ = (reader.int() for _ in range(6))
        return (name[:3], nr, stride, pad)
    if name in ("relu_", "add_prev_"):
        return (name.rstrip("_"),)
    if name == "fc_2":
        n_out, n_in = reader.int(), reader.int()
        w = reader.tensor().reshape(n_in, n_out)
        reader.tensor()
        reader.tensor()
        for _ in range(4):
            reader.float()
        reader.int()
        return ("fc", w)
    raise ModelError(f"unexpected layer {name!r}")


def load_network(path):
    """(input means (3,), layers) from a ``dlib_face_recognition_resnet_model_v1.dat``."""
    with open(path, "rb") as handle:
        data = handle.read()
    reader = _Reader(data)
    try:
        reader.int()
        if reader.str() != "loss_metric_2":
            raise ModelError("not a dlib metric-learning network")
        reader.float()
        reader.float()
        start = data.index(INPUT_NAME)
        while reader.pos < start:  # the nested layers' versions, outermost first
            reader.int()
        reader.str()
        means = np.array([reader.float() for _ in range(3)], dtype=np.float32)
        if (reader.int(), reader.int()) != (CHIP, CHIP):
            raise ModelError(f"the network's input is not {CHIP} x {CHIP}")
        layers = []
        while reader.pos < len(data):
            layers.append(_layer(reader, reader.str()))
            reader.trailer()
            if len(layers) == 1:
                reader.int()  # the input layer's sample expansion factor
    except (IndexError, ValueError) as exc:
        raise ModelError(f"cannot read the network: {exc}") from None
    return means, _grey_input(means, layers)


def _grey_input(means, layers):
    """Fold the grey-to-RGB replication and the input normalisation into the first
    convolution (it has no padding, so this is exact): one input channel."""
    kind, w, b, stride, pad = layers[0]
    if kind != "conv" or pad != 0 or w.shape[1] != 3:
        raise ModelError("the first layer is not an unpadded RGB convolution")
    w1 = w.sum(axis=1, keepdims=True) / 256.0
    b1 = b - np.einsum("ocij,c->o", w, means) / 256.0
    return [("conv", w1.astype(np.float32), b1.astype(np.float32), stride, pad)] + layers[1:]


def _conv(x, w, b, stride, pad):
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    nf, k, kh, kw = w.shape
    win = sliding_window_view(x, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    n, _, oh, ow = win.shape[:4]
    cols = win.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, k * kh * kw)
    out = cols @ w.reshape(nf, -1).T
    out += b
    return out.reshape(n, oh, ow, nf).transpose(0, 3, 1, 2)


def _pool(x, kind, size, stride, pad):
    if size == 0:  # over everything
        return x.mean(axis=(2, 3), keepdims=True)
    if pad:
        raise ModelError("padded pooling is not supported")
    win = sliding_window_view(x, (size, size), axis=(2, 3))[:, :, ::stride, ::stride]
    return win.max(axis=(4, 5)) if kind == "max" else win.mean(axis=(4, 5))


def _add(a, b):
    """dlib's add_prev: the sum over the larger shape, missing values taken as 0."""
    out = np.zeros(np.maximum(a.shape, b.shape), dtype=np.float32)
    out[tuple(slice(0, d) for d in a.shape)] += a
    out[tuple(slice(0, d) for d in b.shape)] += b
    return out


def forward(layers, chips):
    """Descriptors of grey chips (n, 150, 150) on [0, 255]: (n, 128) float64."""
    x = np.asarray(chips, dtype=np.float32)[:, None]
    shortcut, block_start = None, True
    prev = None
    for layer in layers:
        kind = layer[0]
        if kind == "conv":
            if block_start:
                shortcut, block_start = x, False
            x = _conv(x, *layer[1:])
        elif kind == "affine":
            x = x * layer[1] + layer[2]
        elif kind == "relu":
            x = np.maximum(x, 0)
            block_start = block_start or prev == "add_prev"
        elif kind == "avg" and layer[1] != 0:  # the shortcut of a down-sampling block
            shortcut = _pool(shortcut, *layer)
        elif kind in ("max", "avg"):
            x = _pool(x, *layer)
            block_start = True
        elif kind == "add_prev":
            x = _add(x, shortcut)
        elif kind == "fc":
            x = x.reshape(len(x), -1) @ layer[1]
        prev = kind
    return np.asarray(x, dtype=np.float64)
