"""The training code of chapter 11 (``dualarr.teach.digits``): the loss gradient the
loop uses agrees with finite differences and with the interpreted reverse pass (§6.4),
a few Adam steps lower the loss, and the loop reports every step and epoch in order."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dualarr as da
from dualarr.teach import digits as dg


def small_batch(seed: int = 0, n: int = 12) -> tuple[dg.Array, dg.Array]:
    """Random 8×8 images in [0, 1] and one-hot targets (no data set needed)."""
    rng = np.random.default_rng(seed)
    return rng.random((n, 8, 8)), dg.one_hot(rng.integers(0, 10, n))


def small_mlp(seed: int = 0) -> dg.Params:
    return dg.init_mlp(np.random.default_rng(seed), hidden=6)


def test_the_mlp_loss_gradient_matches_finite_differences() -> None:
    images, targets = small_batch()
    params = small_mlp()
    _, grads = dg.loss_and_gradient(dg.MLP)(params, images, targets)
    entries = [(0, (3, 2)), (0, (40, 5)), (1, (4,)), (2, (1, 7)), (3, (9,))]
    estimates = dg.finite_difference_gradient(dg.MLP, params, images, targets, entries)
    for (position, index), estimate in zip(entries, estimates, strict=True):
        assert grads[position][index] == pytest.approx(estimate, rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("model", [dg.MLP, dg.CONVNET], ids=lambda m: m.name)
def test_the_compiled_gradient_matches_the_interpreted_reverse_pass(model: dg.Model) -> None:
    images, targets = small_batch(1, n=4)
    params = (
        small_mlp(1) if model is dg.MLP else dg.init_convnet(np.random.default_rng(1), 3)
    )
    count = len(params)

    def loss(*arrays: Any) -> Any:
        return dg.cross_entropy(model.logits(arrays[:count], arrays[count]), arrays[count + 1])

    value, grads = dg.loss_and_gradient(model)(params, images, targets)
    slow_value, slow_grads = da.value_and_grad(
        loss, argnums=tuple(range(count)), mode="interpret"
    )(*params, images, targets)
    assert value == pytest.approx(float(slow_value), rel=1e-12)
    for fast, slow in zip(grads, slow_grads, strict=True):
        np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-12)


def test_jit_and_plain_value_and_grad_agree() -> None:
    images, targets = small_batch(2)
    params = small_mlp(2)
    value, grads = dg.loss_and_gradient(dg.MLP)(params, images, targets)
    plain_value, plain_grads = dg.loss_and_gradient(dg.MLP, compiled=False)(
        params, images, targets
    )
    assert value == pytest.approx(plain_value, rel=1e-12)
    for a, b in zip(grads, plain_grads, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_a_few_adam_steps_lower_the_loss() -> None:
    images, targets = small_batch(3, n=32)
    params = small_mlp(3)
    step, adam = dg.loss_and_gradient(dg.MLP), dg.Adam(learning_rate=0.05)
    state = adam.init(params)
    losses = []
    for _ in range(8):
        loss, grads = step(params, images, targets)
        params, state = adam.update(params, grads, state)
        losses.append(loss)
    assert state.step == 8
    assert losses[-1] < 0.75 * losses[0]


def test_the_loop_reports_each_step_then_each_epoch() -> None:
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 10, 40)
    images = rng.random((40, 8, 8))
    split = dg.Split(images[:32], labels[:32], images[32:], labels[32:])
    events: list[dg.Event] = []
    result = dg.train(
        dg.MLP, small_mlp(4), split, epochs=2, batch_size=10, on_event=events.append
    )
    lines = [dg.describe(e) for e in events]
    assert [line.split(":")[0] for line in lines] == [
        "step 1/6", "step 2/6", "step 3/6", "epoch 1/2",
        "step 4/6", "step 5/6", "step 6/6", "epoch 2/2",
    ]  # fmt: skip
    assert result.steps == 6 and result.epochs == tuple(
        e for e in events if isinstance(e, dg.EpochDone)
    )
    assert all(0.0 <= e.test_accuracy <= 1.0 for e in result.epochs)


def test_the_digits_split_is_fixed_and_stratified() -> None:
    first, again = dg.load_split(seed=0), dg.load_split(seed=0)
    assert first.train_images.shape == (1347, 8, 8) and first.test_images.shape == (450, 8, 8)
    np.testing.assert_array_equal(first.test_labels, again.test_labels)
    assert first.train_images.min() >= 0.0 and first.train_images.max() <= 1.0
    counts = np.bincount(first.test_labels, minlength=10)
    assert counts.min() >= 43 and counts.max() <= 47  # about a quarter of each digit
