"""Gabor jets in the frequency domain (Wiskott et al. 1997; CSU EBGM, Bolme 2003).

A bank of 5 scales x 8 orientations, wavelengths 4, 4*sqrt(2), ..., 16 px, sigma = 2*pi,
DC-free. The kernel of wave vector k is given directly by its Fourier transform

    G_k(w) = exp(-sigma^2 |w - k|^2 / (2 |k|^2)) - exp(-sigma^2 (|w|^2 + |k|^2) / (2 |k|^2))

(the second term removes the DC response), so one forward FFT of the image and 40
inverse FFTs give the complex response of every kernel at every pixel.
"""

import numpy as np

SIGMA = 2.0 * np.pi
N_SCALES = 5
N_ORIENT = 8
WAVELENGTHS = 4.0 * np.sqrt(2.0) ** np.arange(N_SCALES)  # 4 .. 16 px


def wave_vectors():
    """Wave vectors k_j = (kx, ky) of the 40 kernels, shape (40, 2), scale-major."""
    k = 2.0 * np.pi / WAVELENGTHS
    theta = np.pi * np.arange(N_ORIENT) / N_ORIENT
    kx = (k[:, None] * np.cos(theta)[None, :]).ravel()
    ky = (k[:, None] * np.sin(theta)[None, :]).ravel()
    return np.stack([kx, ky], axis=1)


def scale_of_kernel():
    """Scale index (0 = finest) of each of the 40 kernels, shape (40,)."""
    return np.repeat(np.arange(N_SCALES), N_ORIENT)


_BANKS = {}
PAD = 8  # zero margin (px) that keeps the circular convolution from wrapping faces round


def _fast_len(n):
    """Smallest 2^a 3^b 5^c >= n (sizes the FFT is fast for)."""
    while True:
        m = n
        for p in (2, 3, 5):
            while m % p == 0:
                m //= p
        if m == 1:
            return n
        n += 1


def bank(shape):
    """Frequency responses of the 40 kernels on the padded FFT grid of images of ``shape``
    (H, W): (40, Hp, Wp), stored complex64 for a fast product."""
    shape = tuple(int(s) for s in shape)
    if shape not in _BANKS:
        H, W = (_fast_len(s + PAD) for s in shape)
        wy = 2.0 * np.pi * np.fft.fftfreq(H)[:, None]
        wx = 2.0 * np.pi * np.fft.fftfreq(W)[None, :]
        out = np.empty((N_SCALES * N_ORIENT, H, W), np.complex64)
        for j, (kx, ky) in enumerate(wave_vectors()):
            k2 = kx * kx + ky * ky
            c = SIGMA**2 / (2.0 * k2)
            out[j] = np.exp(-c * ((wx - kx) ** 2 + (wy - ky) ** 2)) - np.exp(
                -c * (wx * wx + wy * wy + k2)
            )
        _BANKS[shape] = out
    return _BANKS[shape]


def responses(image):
    """Complex Gabor responses of one image (H, W): (H*W, 40) complex64, pixel-major.

    The image minus its mean is zero-padded to a fast FFT size; one forward FFT, a
    product with each kernel's frequency response and one batched inverse FFT give
    the responses, cropped back to (H, W).
    """
    image = np.asarray(image, dtype=np.float32)
    H, W = image.shape
    G = bank(image.shape)
    F = np.fft.fft2(image - image.mean(), s=G.shape[1:])
    R = np.fft.ifft2(G * F, axes=(1, 2))[:, :H, :W]
    return R.transpose(1, 2, 0).reshape(H * W, -1).astype(np.complex64)
