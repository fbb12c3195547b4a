"""Small data builders shared by several test modules."""

import numpy as np


def synthetic_images(n_subjects=8, per=7, shape=(12, 10), noise=30.0, seed=0):
    """Identities = blocky random patterns; images = pattern + brightness shift + noise.

    Returns images (n_subjects * per, H, W) float32 on [0, 255] and labels ``id<s>``.
    """
    rng = np.random.default_rng(seed)
    h, w = shape
    base = rng.uniform(60, 200, size=(n_subjects, 3, 3))
    images, labels = [], []
    for s in range(n_subjects):
        big = np.kron(base[s], np.ones((h // 3 + 1, w // 3 + 1)))[:h, :w]
        for _ in range(per):
            images.append(np.clip(big + rng.normal(0, noise, (h, w)) + rng.normal(0, 10), 0, 255))
            labels.append(f"id{s}")
    return np.array(images, dtype=np.float32), np.array(labels)
