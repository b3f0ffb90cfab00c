r"""MTL §4.3 (Lemma 1), App. B.3–B.4 (Lemmas 3–5), §5.1: MTL and ANIL kernels and test predictions of wide ReLU
networks, and the synthetic few-shot regression tasks of MTL §5.1.

Setting (MTL §3–4, "Bridging multi-task learning and meta-learning"): N training tasks with inputs Xᵢ (nᵢ × d)
and labels Yᵢ, stacked as 𝒳 = (Xᵢ)ᵢ, 𝒴 = vec((Yᵢ)ᵢ); a test task with query inputs X and support set
(X′, Y′). A deep ReLU network (:mod:`transfertheory.theory.ntk`) of infinite width is trained by gradient
flow with MTL (a multi-head network, one head per task) or with ANIL (inner loop: τ steps of learning rate λ
on the last layer only); at test time the last layer is adapted on the support set for τ̂ steps. Only the
products λτ and λτ̂ enter. With the NTK Θ and the NNGP kernel K (Gram matrices over the point sets given):

* T(X′) = K(X′,X′)⁻¹(I − e^{−λτ̂K(X′,X′)})                                  (MTL Eq. 17)
* G_τ̂(X, X′, Y′) = K(X,X′)·T(X′)·Y′                                        (Lemma 1, "Function G")
* Φ_MTL = Θ(𝒳,𝒳) − K(𝒳,𝒳) + blockdiag(K(Xᵢ,Xᵢ))                           (Lemma 1; App. Eq. 64)
* Φ′_MTL block j = Θ(X,Xⱼ) − K(X,Xⱼ) − K(X,X′)T(X′)[Θ(X′,Xⱼ) − K(X′,Xⱼ)]    (Lemma 1; App. Eq. 65)
* Φ_ANIL = D Θ(𝒳,𝒳) D, D = blockdiag(e^{−λτK(Xᵢ,Xᵢ)})                      (Lemma 1; App. Eq. 60)
* Φ′_ANIL = Φ′_MTL·D                                   (App. Eq. 61 and relation 66; ``variant="derivation"``)
* F_MTL = G_τ̂(X,X′,Y′) + Φ′_MTL Φ_MTL⁻¹ 𝒴                                  (MTL Eq. 15)
* F_ANIL = G_τ̂(X,X′,Y′) + Φ′_ANIL Φ_ANIL⁻¹ [𝒴 − G_τ(𝒳,𝒳,𝒴)],
  G_τ(𝒳,𝒳,𝒴) block i = (I − e^{−λτK(Xᵢ,Xᵢ)})Yᵢ                             (MTL Eq. 16)

The statement of Lemma 1 (and of Lemma 3) writes Φ′_ANIL block j as [Θ(X,Xⱼ) − K(X,X′)T(X′)Θ(X′,Xⱼ)]·
e^{−λτK(Xⱼ,Xⱼ)}, which disagrees with its own derivation (App. Eq. 61, relation 66) by
[−K(X,Xⱼ) + K(X,X′)T(X′)K(X′,Xⱼ)]e^{−λτK(Xⱼ,Xⱼ)}. Both are computed here (``variant="statement"``
for the Lemma's text). Trained finite-width networks (:mod:`transfertheory.sim.mtl`) follow the derivation's
when the test head starts from the initial head draw and the statement's when ANIL adapts from its trained head
(docs/mtl.md). Lemma 5 bounds ‖Θ⁻¹ − Φ_MTL⁻¹‖_op (:func:`kernel_inverse_gap`).

Numerics: matrix functions of the symmetric PSD Gram matrices go through their eigendecomposition —
e^{−sK} = V e^{−sμ} Vᵀ and T = V diag((1 − e^{−sμ})/μ) Vᵀ with its limit s at μ = 0, so T exists even for a
singular K(X′,X′) (at λτ̂ = 0, T = 0 and G = 0). Solves with Φ_MTL and Φ_ANIL use the symmetric
eigendecomposition; eigenvalues at or below n·ε·λ_max (duplicated inputs across or within tasks) are a
ValueError. The array module (NumPy or CuPy) is inferred from the inputs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._memory import FLOAT_BYTES, check_memory
from .._validation import Interval, as_generator, one_of
from ..backend import get_backend, stacked_eigh, to_host
from ..params import Param
from .ntk import B_STD, HIDDEN_DEPTH, W_STD, relu_kernels, relu_kernels_at_depths

__all__ = ["LAM_TAU", "ANIL_VARIANTS", "ReluNetwork", "TaskKernels", "TestTaskBatch", "task_kernels", "task_kernels_at_depths", "symmetric_exp",
           "adaptation_operator", "adapted_outputs", "mtl_kernel", "anil_kernel", "mtl_test_kernel",
           "anil_test_kernel", "mtl_predictions", "anil_predictions", "literal_anil_predictions",
           "kernel_inverse_gap", "FewShotProblem",
           "standardize_inputs", "synthetic_task", "synthetic_problem"]

LAM_TAU = Param("lam_tau", Interval(0, np.inf, "left"), description="inner-loop learning rate × steps, λτ (or λτ̂)")
#: Φ′_ANIL per App. Eq. 61/66 ("derivation") or per the text of Lemma 1/3 ("statement")
ANIL_VARIANTS = ("derivation", "statement")


@dataclass(frozen=True)
class ReluNetwork:
    """The fully connected ReLU network of :func:`~transfertheory.theory.ntk.relu_kernels` (He: w_std = √2)."""

    depth: int
    w_std: float = 2**0.5
    b_std: float = 0.0

    def __post_init__(self):
        HIDDEN_DEPTH.scalar(self.depth)
        W_STD.scalar(self.w_std)
        B_STD.scalar(self.b_std)

    def kernels(self, x, y=None):
        """(K, Θ) of the point sets (MTL §4.3)."""
        return relu_kernels(x, y, depth=self.depth, w_std=self.w_std, b_std=self.b_std)


_SETS = ("train", "support", "query")


class _TaskLayout:
    """Index helpers over the training task sizes ``sizes`` and the ``n_support`` and ``n_query`` of a test task."""

    @property
    def n_train(self) -> int:
        return sum(self.sizes)

    def task_slices(self):
        starts = np.cumsum((0,) + tuple(self.sizes))
        return [slice(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]

    def _edges(self, which):
        """Row/column range of point set ``which`` ("train", "support", "query") in the stacked [𝒳; X′; X]."""
        one_of(which, "point set", _SETS)
        start = {"train": 0, "support": self.n_train, "query": self.n_train + self.n_support}[which]
        return start, start + {"train": self.n_train, "support": self.n_support, "query": self.n_query}[which]


@dataclass(frozen=True)
class TaskKernels(_TaskLayout):
    """Gram matrices of the training tasks 𝒳 (``train``), the support set X′ and the query set X.

    ``nngp``/``ntk`` are over all points stacked as [𝒳; X′; X]; ``sizes`` are the task sizes nᵢ.
    """

    nngp: object
    ntk: object
    sizes: tuple
    n_support: int
    n_query: int

    #: leading axes of the test-task blocks: none for one test task (:class:`TestTaskBatch`: (B,))
    batch_shape = ()

    def block(self, which, rows, cols):
        """The sub-matrix of ``which`` ("nngp" or "ntk") between two of "train", "support", "query"."""
        (r0, r1), (c0, c1) = self._edges(rows), self._edges(cols)
        return getattr(self, which)[r0:r1, c0:c1]


@dataclass(frozen=True)
class TestTaskBatch(_TaskLayout):
    """The kernels of B test tasks (support and query sets of equal sizes) that share the training tasks.

    :meth:`block` gives the (N, N) blocks between training points and stacked (B, ·, ·) blocks otherwise, so
    every function of this module that takes a :class:`TaskKernels` evaluates the B test tasks at once
    (support labels (B, n_support) or (B, n_support, k); predictions (B, n_query, k)). ``train`` holds the
    (NNGP, NTK) Grams of 𝒳; ``tests`` the (NNGP, NTK) rows of each test task's [X′; X] against its own
    [𝒳; X′; X], each of shape (B, n_support + n_query, N + n_support + n_query).
    """

    train: tuple
    tests: tuple
    sizes: tuple
    n_support: int
    n_query: int

    @property
    def batch_shape(self):
        return tuple(self.tests[0].shape[:-2])

    def block(self, which, rows, cols):
        """Like :meth:`TaskKernels.block`; (B, ·, ·) unless both sets are "train"."""
        index = ("nngp", "ntk").index(which)
        if rows == cols == "train":
            return self.train[index]
        if rows == "train":
            return self.block(which, cols, rows).swapaxes(-1, -2)
        (r0, r1), (c0, c1) = self._edges(rows), self._edges(cols)
        return self.tests[index][..., r0 - self.n_train:r1 - self.n_train, c0:c1]


def _task_points(tasks, support, query):
    """(points stacked as [𝒳; X′; X], task sizes, n_support, n_query); ValueError unless every set is 2-D."""
    tasks = list(tasks)
    arrays = tasks + [s for s in (support, query) if s is not None]
    if not arrays:
        raise ValueError("tasks must hold at least one array")
    xp = get_backend(*arrays)
    for i, a in enumerate(arrays):
        if getattr(a, "ndim", None) != 2:
            raise ValueError(f"tasks[{i}] must be a 2-D array (n, d), got {np.shape(to_host(a))}")
    points = xp.concatenate([xp.asarray(a, dtype=float) for a in arrays])
    n_support = 0 if support is None else support.shape[0]
    n_query = 0 if query is None else query.shape[0]
    return points, tuple(a.shape[0] for a in tasks), n_support, n_query


def task_kernels(network, tasks, support=None, query=None) -> TaskKernels:
    """The NNGP and NTK Gram matrices of the training tasks ``tasks`` (a sequence of (nᵢ, d) arrays), the
    support set and the query set (each (n, d) or None), computed once over all points."""
    points, sizes, n_support, n_query = _task_points(tasks, support, query)
    nngp, ntk = network.kernels(points)
    return TaskKernels(nngp, ntk, sizes, n_support, n_query)


def task_kernels_at_depths(depths, tasks, support=None, query=None, w_std=2**0.5, b_std=0.0) -> list:
    """[:func:`task_kernels` of ``ReluNetwork(L, w_std, b_std)`` for L in ``depths``], bit for bit, from one
    recursion to max L (:func:`~transfertheory.theory.ntk.relu_kernels_at_depths`; MTL §4.3)."""
    points, sizes, n_support, n_query = _task_points(tasks, support, query)
    return [TaskKernels(nngp, ntk, sizes, n_support, n_query)
            for nngp, ntk in relu_kernels_at_depths(points, depths=depths, w_std=w_std, b_std=b_std)]


def _eigh(a):
    """Eigenvalues (clipped at 0) and eigenvectors of a symmetric PSD matrix or a stack (..., n, n) of them."""
    xp = get_backend(a)
    mu, v = stacked_eigh((a + a.swapaxes(-1, -2)) / 2)
    return xp, xp.maximum(mu, 0.0), v


def _spectral(v, weights):
    """V diag(weights) Vᵀ, stacked over leading axes."""
    return (v * weights[..., None, :]) @ v.swapaxes(-1, -2)


def _matrix_function_terms(k, lam_tau):
    """(xp, μ, V, λτ) of a matrix function of ``k``: :func:`_eigh` of k, validated λτ; ValueError unless ``k`` is a
    square matrix or a stack (..., n, n) of them."""
    lam_tau = LAM_TAU.scalar(lam_tau)
    if k.ndim < 2 or k.shape[-1] != k.shape[-2]:
        raise ValueError(f"k must be a square matrix or a stack (..., n, n) of them, got shape {k.shape}")
    return (*_eigh(k), lam_tau)


def symmetric_exp(k, lam_tau):
    """e^{−λτ·K} of a symmetric PSD matrix K (or of each in a stack (..., n, n)) by its eigendecomposition."""
    xp, mu, v, lam_tau = _matrix_function_terms(k, lam_tau)
    return _spectral(v, xp.exp(-lam_tau * mu))


def adaptation_operator(k, lam_tau):
    """T = K⁻¹(I − e^{−λτK}) (MTL Eq. 17) as V diag((1 − e^{−λτμ})/μ) Vᵀ, with the value λτ at μ = 0 (stacks
    (..., n, n) give stacks)."""
    xp, mu, v, lam_tau = _matrix_function_terms(k, lam_tau)
    safe = xp.where(mu > 0, mu, 1.0)
    return _spectral(v, xp.where(mu > 0, -xp.expm1(-lam_tau * safe) / safe, lam_tau))


def adapted_outputs(k_query_support, k_support, y_support, lam_tau):
    """G_λτ(X, X′, Y′) = K(X,X′)·T(X′)·Y′ (MTL Lemma 1): the last-layer adaptation on (X′, Y′) seen on X."""
    return k_query_support @ (adaptation_operator(k_support, lam_tau) @ y_support)


def _adapted_on_query(tk, values, lam_tau_hat):
    """K(X,X′)T(X′)·``values`` (:func:`adapted_outputs` of the test task's support set, seen on its query set)."""
    return adapted_outputs(tk.block("nngp", "query", "support"), tk.block("nngp", "support", "support"), values,
                           lam_tau_hat)


def _block_diag_map(tk, fn):
    """blockdiag(fn(K(Xᵢ,Xᵢ))) over the training tasks; ``fn`` maps a stack of the blocks at once when the tasks
    have equal sizes."""
    k = tk.block("nngp", "train", "train")
    xp = get_backend(k)
    out = xp.zeros_like(k)
    slices = tk.task_slices()
    mapped = fn(xp.stack([k[s, s] for s in slices])) if len(set(tk.sizes)) == 1 else [fn(k[s, s]) for s in slices]
    for s, block in zip(slices, mapped):
        out[s, s] = block
    return out


def mtl_kernel(tk: TaskKernels):
    """Φ_MTL = Θ(𝒳,𝒳) − K(𝒳,𝒳) + blockdiag(K(Xᵢ,Xᵢ)) (MTL Lemma 1; App. Eq. 64)."""
    k, theta = tk.block("nngp", "train", "train"), tk.block("ntk", "train", "train")
    return theta - k + _block_diag_map(tk, lambda block: block)


def anil_kernel(tk: TaskKernels, lam_tau):
    """Φ_ANIL = D Θ(𝒳,𝒳) D, D = blockdiag(e^{−λτK(Xᵢ,Xᵢ)}) (MTL Lemma 1; App. Eq. 60)."""
    d = _block_diag_map(tk, lambda block: symmetric_exp(block, lam_tau))
    return d @ tk.block("ntk", "train", "train") @ d


def mtl_test_kernel(tk: TaskKernels, lam_tau_hat):
    """Φ′_MTL (n × Nn): block j = Θ(X,Xⱼ) − K(X,Xⱼ) − K(X,X′)T(X′)[Θ(X′,Xⱼ) − K(X′,Xⱼ)] (Lemma 1; App. Eq. 65)."""
    lam_tau_hat = LAM_TAU.scalar(lam_tau_hat, "lam_tau_hat")
    residual_query = tk.block("ntk", "query", "train") - tk.block("nngp", "query", "train")
    residual_support = tk.block("ntk", "support", "train") - tk.block("nngp", "support", "train")
    return residual_query - _adapted_on_query(tk, residual_support, lam_tau_hat)


def _anil_test_kernel_undecayed(tk, lam_tau_hat, variant):
    """Φ̃′ with Φ′_ANIL = Φ̃′·blockdiag(e^{−λτK(Xⱼ,Xⱼ)}): Φ′_MTL (derivation) or Θ(X,𝒳) − K(X,X′)T(X′)Θ(X′,𝒳)."""
    one_of(variant, "variant", ANIL_VARIANTS)
    if variant == "derivation":
        return mtl_test_kernel(tk, lam_tau_hat)
    return tk.block("ntk", "query", "train") - _adapted_on_query(tk, tk.block("ntk", "support", "train"), lam_tau_hat)


def anil_test_kernel(tk: TaskKernels, lam_tau, lam_tau_hat, variant="derivation"):
    """Φ′_ANIL (n × Nn). ``"derivation"``: Φ′_MTL·blockdiag(e^{−λτK(Xⱼ,Xⱼ)}) (App. Eqs. 61, 66);
    ``"statement"``: block j = [Θ(X,Xⱼ) − K(X,X′)T(X′)Θ(X′,Xⱼ)]e^{−λτK(Xⱼ,Xⱼ)} (the text of Lemmas 1 and 3)."""
    lam_tau, lam_tau_hat = LAM_TAU.scalar(lam_tau), LAM_TAU.scalar(lam_tau_hat, "lam_tau_hat")
    undecayed = _anil_test_kernel_undecayed(tk, lam_tau_hat, variant)
    return undecayed @ _block_diag_map(tk, lambda block: symmetric_exp(block, lam_tau))


def _solve(a, b, name):
    """a⁻¹b for a symmetric positive definite ``a`` by its eigendecomposition (ValueError if singular)."""
    xp, mu, v = _eigh(a)
    floor = a.shape[0] * np.finfo(float).eps * float(mu.max()) if a.shape[0] else 0.0
    if float(mu.min()) <= floor:
        raise ValueError(f"{name} is singular (smallest eigenvalue {float(mu.min()):.3g} <= {floor:.3g}): "
                         "duplicated training inputs?")
    return v @ ((v.T @ b) / (mu[:, None] if b.ndim == 2 else mu))


def _labels(tk, labels, support_labels, lam_tau_hat):
    """(𝒴 (Nn, k), G_τ̂(X, X′, Y′)): the stacked training labels and the test head's adaptation on the support set."""
    xp = get_backend(tk.block("nngp", "train", "train"))
    y = xp.concatenate([xp.asarray(a, dtype=float).reshape(a.shape[0], -1) for a in labels])
    y_support = xp.asarray(support_labels, dtype=float).reshape(tk.batch_shape + (tk.n_support, -1))
    if y.shape[0] != tk.n_train or len(labels) != len(tk.sizes) or any(
            a.shape[0] != n for a, n in zip(labels, tk.sizes)):
        raise ValueError(f"labels must hold one array per task with {tk.sizes} rows")
    if y_support.shape[-1] != y.shape[1]:
        raise ValueError(f"support_labels must have {y.shape[1]} output columns like labels")
    return y, _adapted_on_query(tk, y_support, lam_tau_hat)


def mtl_predictions(tk: TaskKernels, labels, support_labels, lam_tau_hat):
    """F_MTL(X, X′, Y′) = G_τ̂(X,X′,Y′) + Φ′_MTL Φ_MTL⁻¹ 𝒴 (MTL Eq. 15); (n, k) for labels of k columns."""
    lam_tau_hat = LAM_TAU.scalar(lam_tau_hat, "lam_tau_hat")
    y, g = _labels(tk, labels, support_labels, lam_tau_hat)
    return g + mtl_test_kernel(tk, lam_tau_hat) @ _solve(mtl_kernel(tk), y, "Phi_MTL")


def anil_predictions(tk: TaskKernels, labels, support_labels, lam_tau, lam_tau_hat, variant="derivation"):
    """F_ANIL = G_τ̂(X,X′,Y′) + Φ′_ANIL Φ_ANIL⁻¹[𝒴 − G_τ(𝒳,𝒳,𝒴)] (MTL Eq. 16), G_τ block i = (I − e^{−λτKᵢᵢ})Yᵢ.

    Evaluated as G_τ̂ + Φ̃′ Θ(𝒳,𝒳)⁻¹ 𝒴 with Φ′_ANIL = Φ̃′D (either variant): D = blockdiag(e^{−λτKᵢᵢ}) is
    invertible, 𝒴 − G_τ = D𝒴 and Φ_ANIL⁻¹ = D⁻¹Θ⁻¹D⁻¹, so D cancels and the inner-loop length λτ drops out of
    the prediction (it is validated, and shapes the training, not its converged limit). The literal form solves
    with Φ_ANIL = DΘD, whose condition number grows like e^{2λτ·max λ(Kᵢᵢ)} (1.8·10⁸ at λτ = 0.5 on the §5.1
    tasks at L = 10, singular in float64 beyond λτ ≈ 0.9); this one needs only cond(Θ).
    """
    LAM_TAU.scalar(lam_tau)
    lam_tau_hat = LAM_TAU.scalar(lam_tau_hat, "lam_tau_hat")
    y, g = _labels(tk, labels, support_labels, lam_tau_hat)
    theta_solve = _solve(tk.block("ntk", "train", "train"), y, "Theta")
    return g + _anil_test_kernel_undecayed(tk, lam_tau_hat, variant) @ theta_solve


def literal_anil_predictions(tk: TaskKernels, labels, support_labels, lam_tau, lam_tau_hat, variant="derivation"):
    """F_ANIL by MTL Eq. 16 as written: G_τ̂ + Φ′_ANIL Φ_ANIL⁻¹[𝒴 − G_τ(𝒳,𝒳,𝒴)] with a dense solve with
    Φ_ANIL = DΘD (App. Eq. 60). Equal to :func:`anil_predictions` up to rounding that grows with
    cond(Φ_ANIL) ~ e^{2λτ·max λ(Kᵢᵢ)}; it keeps λτ in the computation, so a figure can show that λτ cancels."""
    LAM_TAU.scalar(lam_tau)
    y, g_test = _labels(tk, labels, support_labels, lam_tau_hat)
    xp = get_backend(y)
    g_train = y - _block_diag_map(tk, lambda block: symmetric_exp(block, lam_tau)) @ y
    return g_test + anil_test_kernel(tk, lam_tau, lam_tau_hat, variant) @ xp.linalg.solve(anil_kernel(tk, lam_tau),
                                                                                        y - g_train)


def kernel_inverse_gap(tk: TaskKernels) -> float:
    """‖Θ(𝒳,𝒳)⁻¹ − Φ_MTL⁻¹‖_op (MTL Lemma 5, Eq. 73), by symmetric solves."""
    theta = tk.block("ntk", "train", "train")
    xp = get_backend(theta)
    eye = xp.eye(theta.shape[0])
    gap = _solve(theta, eye, "Theta") - _solve(mtl_kernel(tk), eye, "Phi_MTL")
    return float(xp.linalg.norm((gap + gap.T) / 2, ord=2))


# --------------------------------------------------------------------------- the synthetic tasks of MTL §5.1

_COUNT = {name: Param(name, Interval(1, np.inf, "left"), integer=True) for name in ("n", "d", "tasks", "test_tasks",
                                                                                     "n_support", "n_query")}


def standardize_inputs(x):
    """The rows of ``x`` (n, d) rescaled to ‖x‖² = d (MTL §4.3's input normalization; K(x, x) is then the same for
    every input of a ReLU network with He initialization)."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.size == 0 or not np.isfinite(x).all():
        raise ValueError(f"x must be a finite array of shape (n, d) with n, d >= 1, got shape {x.shape}")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if not norms.all():
        raise ValueError("x must have no zero row (a zero input cannot be rescaled to norm √d)")
    return x / norms * np.sqrt(x.shape[1])


#: (n, d + 1) arrays :func:`synthetic_task` holds at its peak (the inputs, their centered square, the standardized
#: inputs, the labels)
_TASK_ARRAYS = 4


def _problem_bytes(tasks, n, test_tasks, n_support, n_query, d) -> float:
    """Peak bytes of :func:`synthetic_problem` at these sizes: every task's inputs and labels, and the arrays of
    drawing the largest task."""
    points = tasks * n + test_tasks * (n_support + n_query)
    return FLOAT_BYTES * ((points + _TASK_ARRAYS * max(n, n_support + n_query)) * (d + 1))


def synthetic_task(rng, n, d=10):
    """One few-shot regression task of MTL §5.1: μ ~ N(0, I_d), ν ~ Unif(1.3, 1.6), n inputs x ~ N(μ, ν²I_d) with
    labels y = ν‖x − μ‖²; the inputs are then standardized to ‖x‖² = d (MTL §4.3). Returns (x (n, d), y (n, 1)).
    ``rng``: an integer seed ≥ 0, a NumPy Generator (its stream continues) or a SeedSequence. Sizes beyond the
    memory guard's limit are refused before drawing."""
    n, d = _COUNT["n"].scalar(n), _COUNT["d"].scalar(d)
    check_memory(FLOAT_BYTES * _TASK_ARRAYS * n * (d + 1), what="synthetic_task", params={"n": n, "d": d})
    rng = as_generator(rng)
    mu, nu = rng.standard_normal(d), rng.uniform(1.3, 1.6)
    x = mu + nu * rng.standard_normal((n, d))
    y = nu * ((x - mu) ** 2).sum(axis=1, keepdims=True)
    return standardize_inputs(x), y


@dataclass(frozen=True)
class FewShotProblem:
    """Training tasks (lists of (nᵢ, d) inputs and (nᵢ, 1) labels) and test tasks, each a support set
    (X′, Y′) and a query set (X, Y) drawn from one task (MTL §3.4, §5.1)."""

    tasks: tuple
    labels: tuple
    support: tuple
    support_labels: tuple
    query: tuple
    query_labels: tuple

    def points(self):
        """All inputs stacked as [𝒳; X′₁; X₁; X′₂; X₂; …] (one Gram over them serves every test task)."""
        return np.vstack(list(self.tasks) + [a for pair in zip(self.support, self.query) for a in pair])

    def _test_rows(self, test):
        """Indices of test task ``test``'s [X′; X] in :meth:`points`."""
        n_train = sum(x.shape[0] for x in self.tasks)
        start = n_train + sum(s.shape[0] + q.shape[0] for s, q in zip(self.support[:test], self.query[:test]))
        return np.arange(start, start + self.support[test].shape[0] + self.query[test].shape[0])

    def test_task_kernels(self, nngp, ntk, test):
        """The :class:`TaskKernels` of test task ``test`` sliced from Grams over :meth:`points`."""
        index = np.r_[0:sum(x.shape[0] for x in self.tasks), self._test_rows(test)]
        sizes = tuple(x.shape[0] for x in self.tasks)
        return TaskKernels(nngp[np.ix_(index, index)], ntk[np.ix_(index, index)], sizes, self.support[test].shape[0],
                           self.query[test].shape[0])

    def test_task_batch(self, nngp, ntk):
        """The :class:`TestTaskBatch` of every test task sliced from Grams over :meth:`points` (the test tasks
        must have equal support and query sizes)."""
        n_s, n_q = {x.shape[0] for x in self.support}, {x.shape[0] for x in self.query}
        if len(n_s) != 1 or len(n_q) != 1:
            raise ValueError(f"test tasks must have equal sizes to be batched, got support sizes {sorted(n_s)} and "
                             f"query sizes {sorted(n_q)}")
        n_train = sum(x.shape[0] for x in self.tasks)
        xp = get_backend(nngp)
        rows = np.stack([self._test_rows(test) for test in range(len(self.support))])
        cols = np.concatenate([np.broadcast_to(np.arange(n_train), (rows.shape[0], n_train)), rows], axis=1)
        rows, cols = xp.asarray(rows[:, :, None]), xp.asarray(cols[:, None, :])
        train = (nngp[:n_train, :n_train], ntk[:n_train, :n_train])
        return TestTaskBatch(train, (nngp[rows, cols], ntk[rows, cols]), tuple(x.shape[0] for x in self.tasks),
                             n_s.pop(), n_q.pop())


def synthetic_problem(rng, tasks=20, n=10, test_tasks=20, n_support=5, n_query=10, d=10) -> FewShotProblem:
    """MTL §5.1's data set: ``tasks`` training tasks of ``n`` points and ``test_tasks`` test tasks of ``n_support``
    support and ``n_query`` query points, every task drawn by :func:`synthetic_task` (defaults: the paper's) from
    ``rng``: an integer seed ≥ 0, a NumPy Generator (its stream continues) or a SeedSequence. Sizes whose
    :func:`_problem_bytes` exceed the memory guard's limit are refused before any task is drawn."""
    tasks, test_tasks = _COUNT["tasks"].scalar(tasks), _COUNT["test_tasks"].scalar(test_tasks)
    n_support, n_query = _COUNT["n_support"].scalar(n_support), _COUNT["n_query"].scalar(n_query)
    n, d, rng = _COUNT["n"].scalar(n), _COUNT["d"].scalar(d), as_generator(rng)
    sizes = dict(tasks=tasks, n=n, test_tasks=test_tasks, n_support=n_support, n_query=n_query, d=d)
    check_memory(_problem_bytes(**sizes), what="synthetic_problem", params=sizes)
    train = [synthetic_task(rng, n, d) for _ in range(tasks)]
    tests = [synthetic_task(rng, n_support + n_query, d) for _ in range(test_tasks)]
    return FewShotProblem(tuple(x for x, _ in train), tuple(y for _, y in train),
                          tuple(x[:n_support] for x, _ in tests), tuple(y[:n_support] for _, y in tests),
                          tuple(x[n_support:] for x, _ in tests), tuple(y[n_support:] for _, y in tests))
