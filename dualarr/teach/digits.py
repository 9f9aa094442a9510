"""Training a classifier with dualarr's compiled gradients (chapter 11).

The UCI 8×8 handwritten digits (shipped with the package, no download), split
once with a fixed seed; two models written over traced values — a multilayer
perceptron and a small convolution network whose 3×3 windows are one ``gather``
(Fig. 7) — the softmax cross-entropy loss, Adam in plain NumPy, and a minibatch
training loop that reports through a callback (progress bars and live plots live in the
notebook, not here).  The gradient of the loss is the compiled program of §7, generated
once for the batch shape and reused on every step.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias, assert_never

import numpy as np
import numpy.typing as npt

from .. import numpy as dnp
from ..api import jit, value_and_grad
from ..lang.functions import gather, logsumexp, relu

__all__ = [
    "CONVNET",
    "MLP",
    "Adam",
    "AdamState",
    "EpochDone",
    "Event",
    "Model",
    "Split",
    "StepDone",
    "Training",
    "accuracy",
    "convnet_logits",
    "cross_entropy",
    "describe",
    "finite_difference_gradient",
    "init_convnet",
    "init_mlp",
    "load_split",
    "loss_and_gradient",
    "mlp_logits",
    "one_hot",
    "predict",
    "train",
]

Array: TypeAlias = npt.NDArray[np.float64]
Labels: TypeAlias = npt.NDArray[np.int64]
Params: TypeAlias = tuple[Array, ...]
CLASSES = 10
SIDE = 8  # the images are SIDE × SIDE pixels


# --------------------------------------------------------------------------------------
# The data
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Split:
    """Images (``n × 8 × 8``, pixels scaled to [0, 1]) and their labels 0–9, for
    training and for the held-out test."""

    train_images: Array
    train_labels: Labels
    test_images: Array
    test_labels: Labels


DIGITS_FILE = Path(__file__).parent / "data" / "digits.csv.gz"
"""The UCI handwritten digits (``dualarr/teach/data/README.md``): 64 pixels 0–16, then the
digit, one image a row."""


def load_split(test_fraction: float = 0.25, seed: int = 0) -> Split:
    """The 1,797 digits shipped with the kit, pixels scaled to [0, 1], split once with
    ``seed``: ``ceil(test_fraction · n)`` held out, stratified (each digit's share of the
    test set is its share of the data, the remainders going to the largest fractions),
    each side in a random order."""
    table = np.loadtxt(DIGITS_FILE, delimiter=",", dtype=np.int64)
    images = table[:, :-1].reshape(-1, SIDE, SIDE).astype(np.float64) / 16.0
    labels = table[:, -1]
    rng = np.random.default_rng(seed)
    classes, counts = np.unique(labels, return_counts=True)
    wanted = counts * math.ceil(test_fraction * len(labels)) / len(labels)
    held = np.floor(wanted).astype(np.int64)
    short = math.ceil(test_fraction * len(labels)) - int(held.sum())
    held[np.argsort(-(wanted - held), kind="stable")[:short]] += 1
    test: list[Labels] = []
    train: list[Labels] = []
    for digit, count in zip(classes, held, strict=True):
        members = rng.permutation(np.flatnonzero(labels == digit))
        test.append(members[:count])
        train.append(members[count:])
    test_at = rng.permutation(np.concatenate(test))
    train_at = rng.permutation(np.concatenate(train))
    return Split(images[train_at], labels[train_at], images[test_at], labels[test_at])


def one_hot(labels: Labels, classes: int = CLASSES) -> Array:
    """Row ``k`` is 1 at column ``labels[k]`` and 0 elsewhere."""
    return np.eye(classes, dtype=np.float64)[labels]


# --------------------------------------------------------------------------------------
# The models: functions of (parameters, images) over traced values
# --------------------------------------------------------------------------------------


def mlp_logits(params: Params, images: Any) -> Any:
    """A multilayer perceptron 64 → hidden (tanh) → 10: one score per digit."""
    w1, b1, w2, b2 = params
    pixels = dnp.reshape(images, (images.shape[0], SIDE * SIDE))
    hidden = dnp.tanh(pixels @ w1 + b1)
    return hidden @ w2 + b2


def convnet_logits(params: Params, images: Any) -> Any:
    """A small convolution network: 3×3 filters (no padding: 8×8 → 6×6), ReLU, 2×2
    max pooling (6×6 → 3×3), then a linear layer to 10 scores."""
    kernels, kernel_bias, w, b = params
    n, filters = images.shape[0], kernels.shape[-1]
    out = SIDE - 2
    # every 3×3 window of every image: windows[k, i, j, di, dj] = images[k, i + di, j + dj]
    windows = gather((n, out, out, 3, 3), images, lambda k, i, j, di, dj: (k, i + di, j + dj))
    flat_windows = dnp.reshape(windows, (n, out, out, 9))
    features = relu(flat_windows @ dnp.reshape(kernels, (9, filters)) + kernel_bias)
    blocks = dnp.reshape(features, (n, out // 2, 2, out // 2, 2, filters))
    pooled = dnp.max(blocks, axis=(2, 4))
    return dnp.reshape(pooled, (n, (out // 2) ** 2 * filters)) @ w + b


def _normal(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> Array:
    return rng.standard_normal(shape) / math.sqrt(fan_in)


def init_mlp(rng: np.random.Generator, hidden: int = 64) -> Params:
    """``(w1, b1, w2, b2)``: weights drawn with variance 1 / fan-in, biases 0."""
    return (
        _normal(rng, (SIDE * SIDE, hidden), SIDE * SIDE),
        np.zeros(hidden),
        _normal(rng, (hidden, CLASSES), hidden),
        np.zeros(CLASSES),
    )


def init_convnet(rng: np.random.Generator, filters: int = 8) -> Params:
    """``(kernels, kernel_bias, w, b)``: ``kernels`` is ``3 × 3 × filters``.  The filters'
    biases start at 0.1, not 0: a window of blank background (all pixels 0) would
    otherwise sit exactly at the kink of ReLU, where the loss has no derivative."""
    pooled = (SIDE - 2) // 2
    return (
        _normal(rng, (3, 3, filters), 9),
        np.full(filters, 0.1),
        _normal(rng, (pooled * pooled * filters, CLASSES), pooled * pooled * filters),
        np.zeros(CLASSES),
    )


@dataclass(frozen=True)
class Model:
    """A model: its name, its parameters' names, how to draw them, and its scores."""

    name: str
    parameter_names: tuple[str, ...]
    init: Callable[[np.random.Generator], Params]
    logits: Callable[[Params, Any], Any]


MLP = Model("mlp", ("w1", "b1", "w2", "b2"), init_mlp, mlp_logits)
CONVNET = Model("convnet", ("kernels", "kernel_bias", "w", "b"), init_convnet, convnet_logits)


# --------------------------------------------------------------------------------------
# Loss, gradient, predictions
# --------------------------------------------------------------------------------------


def cross_entropy(logits: Any, targets: Any) -> Any:
    """The mean softmax cross-entropy: ``logsumexp(logits) - logits[label]`` per row,
    with the label given as a one-hot row of ``targets``."""
    return dnp.mean(logsumexp(logits, axis=1) - dnp.sum(logits * targets, axis=1))


LossAndGradient: TypeAlias = Callable[[Params, Array, Array], tuple[float, Params]]


def loss_and_gradient(model: Model, *, compiled: bool = True) -> LossAndGradient:
    """``(params, images, targets) -> (loss, gradients)``, one gradient per parameter.

    ``da.value_and_grad`` of the loss with respect to the parameters (§7: traced,
    vectorised, differentiated and compiled once per batch shape).  With ``compiled``
    the whole step is wrapped in ``da.jit``, which skips the trace on later calls;
    without, every call traces the loss and reuses the cached gradient program."""
    count = len(model.parameter_names)

    def loss(*arrays: Any) -> Any:
        *params, images, targets = arrays
        return cross_entropy(model.logits(tuple(params), images), targets)

    gradient = value_and_grad(loss, argnums=tuple(range(count)))

    def flat(*arrays: Any) -> tuple[Any, ...]:
        value, grads = gradient(*arrays)
        return (value, *grads)

    step = jit(flat) if compiled else flat

    def run(params: Params, images: Array, targets: Array) -> tuple[float, Params]:
        value, *grads = step(*params, images, targets)
        return float(value), tuple(grads)

    return run


@functools.cache
def _compiled_logits(model: Model) -> Callable[..., Any]:
    """``(*params, images) -> logits``, the model's forward pass under ``da.jit``."""
    count = len(model.parameter_names)
    return jit(lambda *arrays: model.logits(arrays[:count], arrays[count]))


def predict(model: Model, params: Params, images: Array) -> Labels:
    """The most likely digit for each image."""
    scores = _compiled_logits(model)(*params, images)
    return np.asarray(np.argmax(scores, axis=1), dtype=np.int64)


def accuracy(model: Model, params: Params, images: Array, labels: Labels) -> float:
    """The fraction of ``images`` classified as their ``labels``."""
    return float(np.mean(predict(model, params, images) == labels))


# --------------------------------------------------------------------------------------
# Adam (Kingma & Ba, 2015), in NumPy
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AdamState:
    """The step count and the running first and second moments, one per parameter."""

    step: int
    first: Params
    second: Params


@dataclass(frozen=True)
class Adam:
    """Adam's hyperparameters; ``init`` and ``update`` are pure (new arrays out)."""

    learning_rate: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8

    def init(self, params: Params) -> AdamState:
        zeros = tuple(np.zeros_like(p) for p in params)
        return AdamState(0, zeros, zeros)

    def update(
        self, params: Params, grads: Params, state: AdamState
    ) -> tuple[Params, AdamState]:
        step = state.step + 1
        first = tuple(
            self.beta1 * m + (1 - self.beta1) * g for m, g in zip(state.first, grads, strict=True)
        )
        second = tuple(
            self.beta2 * v + (1 - self.beta2) * g * g
            for v, g in zip(state.second, grads, strict=True)
        )
        scale = self.learning_rate * math.sqrt(1 - self.beta2**step) / (1 - self.beta1**step)
        new = tuple(
            p - scale * m / (np.sqrt(v) + self.eps)
            for p, m, v in zip(params, first, second, strict=True)
        )
        return new, AdamState(step, first, second)


# --------------------------------------------------------------------------------------
# The training loop
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepDone:
    """One minibatch step: its number (from 1), the number of steps in all, its loss."""

    step: int
    steps: int
    loss: float


@dataclass(frozen=True)
class EpochDone:
    """One pass over the training images: the mean minibatch loss, test accuracy."""

    epoch: int
    epochs: int
    train_loss: float
    test_accuracy: float


Event: TypeAlias = StepDone | EpochDone


@dataclass(frozen=True)
class Training:
    """What ``train`` returns: the trained parameters and one report per epoch."""

    params: Params
    epochs: tuple[EpochDone, ...]
    steps: int


def _batches(count: int, batch_size: int, rng: np.random.Generator) -> list[Labels]:
    """A shuffled epoch in batches of exactly ``batch_size`` (the rest is dropped, so
    every step has the same shape and the gradient program compiles once)."""
    order = rng.permutation(count)
    return [order[s : s + batch_size] for s in range(0, count - batch_size + 1, batch_size)]


def train(
    model: Model,
    params: Params,
    data: Split,
    *,
    epochs: int,
    batch_size: int = 64,
    optimizer: Adam | None = None,
    seed: int = 0,
    on_event: Callable[[Event], None] | None = None,
    gradient: LossAndGradient | None = None,
) -> Training:
    """Minibatch training of ``model`` from ``params`` on ``data.train_*`` with Adam;
    after each epoch the accuracy on ``data.test_*``.  ``on_event`` sees every step and
    every epoch (for progress bars and plots).  ``gradient`` replaces dualarr's
    :func:`loss_and_gradient` (to time another library on the same loop)."""
    optimizer = optimizer if optimizer is not None else Adam()
    rng = np.random.default_rng(seed)
    step_fn = gradient if gradient is not None else loss_and_gradient(model)
    targets = one_hot(data.train_labels)
    state = optimizer.init(params)
    steps = epochs * (len(data.train_labels) // batch_size)
    reports: list[EpochDone] = []
    done = 0
    for epoch in range(1, epochs + 1):
        losses: list[float] = []
        for batch in _batches(len(data.train_labels), batch_size, rng):
            loss, grads = step_fn(params, data.train_images[batch], targets[batch])
            params, state = optimizer.update(params, grads, state)
            losses.append(loss)
            done += 1
            _notify(on_event, StepDone(done, steps, loss))
        report = EpochDone(
            epoch,
            epochs,
            float(np.mean(losses)),
            accuracy(model, params, data.test_images, data.test_labels),
        )
        reports.append(report)
        _notify(on_event, report)
    return Training(params, tuple(reports), done)


def _notify(on_event: Callable[[Event], None] | None, event: Event) -> None:
    if on_event is not None:
        on_event(event)


def describe(event: Event) -> str:
    """One line for an event (for logs and tests)."""
    match event:
        case StepDone(step, steps, loss):
            return f"step {step}/{steps}: loss {loss:.4f}"
        case EpochDone(epoch, epochs, train_loss, test_accuracy):
            return (
                f"epoch {epoch}/{epochs}: train loss {train_loss:.4f}, "
                f"test accuracy {test_accuracy:.1%}"
            )
        case _:
            assert_never(event)


def finite_difference_gradient(
    model: Model,
    params: Params,
    images: Array,
    targets: Array,
    entries: Sequence[tuple[int, tuple[int, ...]]],
    step: float = 1e-6,
) -> list[float]:
    """Central differences of the loss, evaluated with plain ``da.jit`` of the loss, at
    the parameter entries ``(parameter position, index)``."""
    count = len(model.parameter_names)

    def loss(*arrays: Any) -> Any:
        return cross_entropy(model.logits(arrays[:count], arrays[count]), arrays[count + 1])

    compiled_loss = jit(loss)
    estimates = []
    for position, index in entries:
        shifted = []
        for sign in (1.0, -1.0):
            moved = list(params)
            moved[position] = params[position].copy()
            moved[position][index] += sign * step
            shifted.append(float(compiled_loss(*moved, images, targets)))
        estimates.append((shifted[0] - shifted[1]) / (2 * step))
    return estimates
