"""MeRLin §5 simulators (transfertheory.sim.merlin): gradients vs finite differences, the ridge inner head,
convergence reporting, backends and input validation. The theorem checks by training are claims
(transfertheory/claims/merlin_sim.py)."""
import numpy as np
import pytest

from transfertheory import backend
from transfertheory.sim import merlin as Q
from transfertheory.sim.convergence import Convergence
from transfertheory.theory import merlin as M


def _data(rng, B, n, d):
    draws = [M.sample_target(n, d, rng) for _ in range(B)]
    return np.stack([x for x, _ in draws]), np.stack([y for _, y in draws])


def _finite_difference(fun, point, eps=1e-6):
    grad = np.zeros_like(point)
    for index in np.ndindex(point.shape):
        step = np.zeros_like(point)
        step[index] = eps
        grad[index] = (fun(point + step) - fun(point - step)) / (2 * eps)
    return grad


def test_empirical_loss_gradient_matches_finite_differences(rng):
    X, y = _data(rng, 2, 7, 4)
    theta, phi = rng.normal(size=(2, 3)), rng.normal(size=(2, 4, 3))
    loss, g_theta, g_phi = Q.empirical_loss_and_grad(theta, phi, X, y)
    direct = ((((X @ phi) ** 2) @ theta[..., None])[..., 0] - y) ** 2
    np.testing.assert_allclose(loss, direct.mean(axis=1), rtol=1e-12)
    np.testing.assert_allclose(g_theta, _finite_difference(lambda t: Q.empirical_loss_and_grad(t, phi, X, y)[0].sum(),
                                                           theta), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g_phi, _finite_difference(lambda p: Q.empirical_loss_and_grad(theta, p, X, y)[0].sum(),
                                                         phi), rtol=1e-6, atol=1e-8)


def test_ridge_head_is_the_ridge_minimizer(rng):
    H, y = rng.normal(size=(3, 6, 2)), rng.normal(size=(3, 6))
    head = Q.ridge_head(H, y, 0.1)
    gradient = 2 / 6 * (H.swapaxes(-1, -2) @ ((H @ head[..., None])[..., 0] - y)[..., None])[..., 0] + 2 * 0.1 * head
    np.testing.assert_allclose(gradient, 0, atol=1e-12)


def _per_split_validation(X, y, orders, phi, ridge):
    """MeRLin's validation term (loss (B,), ∂/∂φ (B, d, m)) by a direct solve of every instance and split, one at a
    time: the ridge head θ̂ = M⁻¹H_trᵀy_tr, M = H_trᵀH_tr + n_trλ_hI, and the gradient of docs/merlin.md,
    ∂L/∂H_v = (2/n_v) r_v θ̂ᵀ, ∂L/∂H_tr = r_tr uᵀ − (H_tr u) θ̂ᵀ (u = M⁻¹(2/n_v)H_vᵀr_v), ∂L/∂φ = Σ Xᵀ(2z ∘ ∂L/∂H)."""
    B, S, n = orders.shape
    loss, grad = np.zeros(B), np.zeros(phi.shape)
    for b in range(B):
        for s in range(S):
            train, val = orders[b, s, :n // 2], orders[b, s, n // 2:]
            z_tr, z_v = X[b, train] @ phi[b], X[b, val] @ phi[b]
            H_tr, H_v = z_tr**2, z_v**2
            normal = H_tr.T @ H_tr + train.size * ridge * np.eye(phi.shape[-1])
            head = np.linalg.solve(normal, H_tr.T @ y[b, train])
            r_v, r_tr = H_v @ head - y[b, val], y[b, train] - H_tr @ head
            u = np.linalg.solve(normal, 2 / val.size * H_v.T @ r_v)
            grad_H_tr, grad_H_v = np.outer(r_tr, u) - np.outer(H_tr @ u, head), 2 / val.size * np.outer(r_v, head)
            loss[b] += r_v @ r_v / val.size / S
            grad[b] += (X[b, train].T @ (2 * z_tr * grad_H_tr) + X[b, val].T @ (2 * z_v * grad_H_v)) / S
    return loss, grad


def test_per_split_validation_gradient_through_the_ridge_solve_matches_finite_differences(rng):
    """The reference of the next test: its gradient (the derivation of docs/merlin.md) against finite differences
    of its loss."""
    X, y = _data(rng, 2, 8, 4)
    orders = Q.split_orders(2, 8, 3, rng)
    phi = rng.normal(size=(2, 4, 3))
    _, grad = _per_split_validation(X, y, orders, phi, 0.05)
    fd = _finite_difference(lambda p: _per_split_validation(X, y, orders, p, 0.05)[0].sum(), phi)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7)


def test_training_validation_term_equals_the_per_split_form(rng, array_backend):
    _, xp = array_backend
    X, y = _data(rng, 3, 7, 4)
    orders = Q.split_orders(3, 7, 4, np.random.default_rng(1))
    phi = rng.normal(size=(3, 4, 2))
    loss, grad = _per_split_validation(X, y, orders, phi, 0.05)
    rows = np.array([2, 0])
    validation = Q.ValidationSplits(xp.asarray(X), xp.asarray(y), orders, 0.05)
    fast_loss, fast_grad = (backend.to_host(a) for a in validation.loss_and_grad(xp.asarray(phi[rows]), rows))
    np.testing.assert_allclose(fast_loss, loss[rows], rtol=1e-12)
    np.testing.assert_allclose(fast_grad, grad[rows], rtol=1e-10, atol=1e-14)


def test_validation_term_of_rows_seen_before_is_bit_for_bit_the_fresh_one(rng):
    """The gathered arrays a row set reuses (the integrator asks for the same rows at many stages) give exactly
    the loss and gradient of a term that never saw those rows; the kept row sets stay bounded."""
    from transfertheory.sim.merlin import losses

    X, y = _data(rng, 5, 7, 4)
    orders = Q.split_orders(5, 7, 4, np.random.default_rng(1))
    validation = Q.ValidationSplits(X, y, orders, 0.05)
    row_sets = [np.array(r) for r in ([0, 1, 2, 3, 4], [4, 2, 0], [0, 1, 2, 3, 4], [3], [4, 2, 0], [1, 3])]
    for rows in row_sets:
        phi = rng.normal(size=(rows.size, 4, 2))
        fresh = Q.ValidationSplits(X, y, orders, 0.05).loss_and_grad(phi, rows)
        for seen, first in zip(validation.loss_and_grad(phi, rows), fresh):
            np.testing.assert_array_equal(seen, first)
    assert len(validation._gathered_cache) == 4  # the distinct row sets
    for start in range(3 * losses._GATHERED_ROWS):
        validation.loss_and_grad(rng.normal(size=(2, 4, 2)), np.array([start % 5, (start + 1 + start // 5) % 5]))
    assert len(validation._gathered_cache) <= losses._GATHERED_ROWS


@pytest.mark.parametrize("algorithm", ["merlin", "joint", "target_only"])
def test_problems_of_several_sizes_trained_together_equal_each_alone(algorithm):
    def problems():
        rng = np.random.default_rng(4)
        make = {"merlin": lambda X, y: Q.merlin_problem(X, y, 2, 0.1, 2, 2, rng, ridge=1e-2, splits=4),
                "joint": lambda X, y: Q.joint_problem(X, y, 2, 0.1, 0.5, 2, 2, rng),
                "target_only": lambda X, y: Q.joint_problem(X, y, 2, 0.1, 1.0, 2, 2, rng)}[algorithm]
        return [make(*Q.target_sets(n, 4, 2, 0)) for n in (3, 6)]

    flow = dict(rtol=1e-3, gtol=1e-5)
    together = Q.solve(problems(), **flow)
    alone = [Q.solve([problem], **flow)[0] for problem in problems()]
    for joint_run, single in zip(together, alone):
        np.testing.assert_allclose(joint_run.objective, single.objective, rtol=1e-9)
        np.testing.assert_allclose(joint_run.params["phi"], single.params["phi"], rtol=1e-6, atol=1e-9)
        np.testing.assert_array_equal(joint_run.steps, single.steps)


def test_split_orders_of_a_seed_are_every_balanced_split_when_there_are_at_most_s():
    every = Q.seed_split_orders(2, 4, 6, np.random.default_rng(0))  # C(4, 2) = 6 ≤ S: Eq. 70's expectation exactly
    assert every.shape == (2, 6, 4)
    assert sorted(tuple(sorted(order[:2])) for order in every[1]) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert all(sorted(order) == [0, 1, 2, 3] for order in every.reshape(-1, 4).tolist())
    sampled = Q.seed_split_orders(2, 4, 5, np.random.default_rng(0))  # C(4, 2) > S: S random splits per seed
    np.testing.assert_array_equal(sampled, Q.split_orders(2, 4, 5, np.random.default_rng(0)))


@pytest.mark.parametrize("n_t, splits, shape", [(3, 4, (3, 3)), (6, 4, (4, 6))])
def test_merlin_restarts_of_a_seed_share_its_splits(n_t, splits, shape):
    """Every restart of a seed minimizes the same objective, so the kept restart is the best on it (a restart
    with splits of its own could win by a luckier draw of training halves)."""
    X, y = Q.target_sets(n_t, 4, 2, 0)
    orders = Q.merlin_problem(X, y, 3, 0.1, 2, 5, np.random.default_rng(1), splits=splits).objective.splits
    by_seed = orders.reshape((2, 5) + shape)
    assert (by_seed == by_seed[:, :1]).all()


@pytest.mark.parametrize("terms", [dict(source_weight=1.0), dict(source_weight=0.4, target_weight=0.6),
                                   dict(target_weight=1.0), dict(source_weight=1.0, meta_weight=0.7, ridge=0.05)])
def test_objective_gradient_matches_finite_differences(rng, terms):
    X, y = _data(rng, 2, 6, 4)
    splits = Q.split_orders(2, 6, 2, rng) if "meta_weight" in terms else None
    objective = Q.Objective(d=4, m=2, lam=0.1, k=3, X=X, y=y, splits=splits, **terms)
    state = objective.pack(Q.random_init(objective, 2, rng, 0.7))
    rows = np.arange(2)
    grad, _ = objective.value_and_grad(state, rows)
    fd = _finite_difference(lambda s: objective.value_and_grad(s, rows)[1].sum(), state)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7)


def test_source_term_is_the_exact_regularized_population_loss(rng):
    objective = Q.Objective(d=5, m=3, lam=0.2, k=3, source_weight=1.0)
    start = Q.random_init(objective, 4, rng, 0.5)
    _, value = objective.value_and_grad(objective.pack(start), np.arange(4))
    np.testing.assert_allclose(value, M.regularized_source_loss(start["theta_s"], start["phi"], 3, 0.2), rtol=1e-13)


def test_head_only_finetuning_flow_reaches_the_closed_form_ridge_head(rng):
    X, y = _data(rng, 5, 9, 4)
    phi = rng.normal(size=(5, 4, 2))
    out = Q.finetune_head(phi, X, y, 0.05)
    assert out.converged.all()
    np.testing.assert_allclose(out.head, Q.ridge_head((X @ phi) ** 2, y, 0.05), atol=1e-6)
    np.testing.assert_allclose(out.target_loss, M.target_loss(out.head, phi), rtol=1e-12)


def test_pretraining_reaches_a_lemma4_minimizer_and_reports_convergence(rng):
    lam = 0.1
    out = Q.pretrain(4, 2, 2, lam, seeds=4, restarts=4, rng=rng)
    best = M.source_scale_objective(M.optimal_source_scale(lam), lam)
    assert out.converged.all() and (out.grad_norm <= Q.FLOW_SETTINGS.gtol).all()
    np.testing.assert_allclose(out.objective, best, atol=1e-9)
    top, share, _ = Q.feature_usage(out.params["phi"])
    assert (top <= 2).all() and (share > 1 - 1e-8).all()
    assert ((1 <= out.restarts_needed) & (out.restarts_needed <= 4)).all()


def test_unfinished_flows_are_reported_not_passed_off(rng):
    out = Q.pretrain(4, 2, 2, 0.1, seeds=3, restarts=1, rng=rng, max_steps=5)
    assert (out.status == "max_steps").all() and not out.converged.any()
    assert (out.steps == 5).all() and (out.grad_norm > Q.FLOW_SETTINGS.gtol).all()


def test_restart_kept_is_the_first_at_the_best_objective():
    trained = Q.Trained(params={"phi": np.arange(6.0)[:, None, None] * np.ones((6, 2, 1))},
                        objective=np.array([3.0, 1.0, 1.0, 2.0, 2.0, 5.0]),
                        convergence=Convergence.of_length(6, True, "converged", 0.0, 0, 0.0))
    out = Q.algorithms._outcome(trained, 2, 3, lambda params: np.zeros((2, 1)))
    assert out.params["phi"][:, 0, 0].tolist() == [1.0, 3.0] and out.objective.tolist() == [1.0, 2.0]
    assert out.restarts_needed.tolist() == [2, 1] and out.restarts_at_best.tolist() == [2, 2]


def test_backends_give_the_numpy_result(array_backend):
    name, xp = array_backend
    rng = np.random.default_rng(3)
    X, y = _data(rng, 2, 6, 4)

    def run(X, y):
        problem = Q.merlin_problem(X, y, 2, 0.1, 2, 1, np.random.default_rng(5), splits=2)
        return Q.solve([problem], rtol=1e-3, gtol=1e-5)[0]

    reference, out = run(X, y), run(xp.asarray(X), xp.asarray(y))
    assert backend.get_backend(out.params["phi"]) is xp
    np.testing.assert_allclose(out.target_loss, reference.target_loss, rtol=1e-8, atol=1e-12)
    np.testing.assert_array_equal(out.status, reference.status)


def test_run_comparison_rows_and_columns():
    df = Q.run_comparison(d=4, m=2, k=2, n_targets=[4], lam=0.1, draws=2, restarts=1, splits=1,
                          flow={"rtol": 1e-3, "gtol": 1e-5})
    assert len(df) == len(Q.ALGORITHMS) * 2 and not df.duplicated(list(Q.ROW_KEYS)).any()
    assert df["draw"].tolist() == [0, 1] * len(Q.ALGORITHMS) and df.attrs["flow"]["gtol"] == 1e-5
    for column in ("target_loss", "top_coord", "coords", "converged", "status", "t_final", "steps", "grad_norm",
                   "restarts_needed"):
        assert column in df.columns
    assert df["target_loss"].notna().all() and df.attrs["backend"] == "numpy"


def test_joint_training_at_alpha_zero_keeps_a_zero_target_head():
    # α = 0: θ_t enters the objective only through λ‖θ_t‖², so the predictor is zero (target loss 2/3, Lemma 1)
    df = Q.run_comparison(d=4, m=1, k=2, n_targets=[4], lam=0.1, draws=1, restarts=1, splits=1, alpha=0.0,
                          algorithms=("joint",), backend="numpy")
    np.testing.assert_allclose(df["target_loss"], 2 / 3)
    assert df["converged"].all()


def test_fine_tuning_from_an_unconverged_pretraining_is_not_converged():
    df = Q.run_comparison(d=4, m=1, k=2, n_targets=[4], lam=0.1, draws=2, restarts=1, splits=1,
                          algorithms=("finetune", "finetune_full", "target_only"), flow={"max_time": 1e-2},
                          backend="numpy")
    finetune = df[df.algorithm != "target_only"]
    assert (finetune["pretrain_status"] != "converged").all() and not finetune["converged"].any()


@pytest.mark.parametrize("kwargs, name", [(dict(k=5), "k"), (dict(n_targets=[]), "n_targets"),
                                          (dict(algorithms=("sgd",)), "algorithms"), (dict(lam=0.0), "lam"),
                                          (dict(n_targets=[1]), "n_targets"), (dict(draws=0), "draws"),
                                          (dict(alpha=1.5), "alpha"), (dict(ridge=-1.0), "ridge")])
def test_bad_input_names_the_parameter(kwargs, name):
    settings = dict(d=4, m=2, k=2, n_targets=[4], lam=0.1, draws=2) | kwargs
    with pytest.raises(ValueError, match=name):
        Q.run_comparison(**settings)


def test_validation_term_with_padded_samples_and_splits_equals_the_unpadded_one(rng):
    """Instances of several n and S in one batch (zero samples and rows of −1 appended by ``pad_orders``) get
    exactly their own validation loss and gradient: the padding is masked out and each averages over its own S."""
    X, y = _data(rng, 2, 5, 4)
    orders = Q.split_orders(2, 5, 3, np.random.default_rng(2))
    phi = rng.normal(size=(2, 4, 2))
    alone = Q.ValidationSplits(X, y, orders, 0.05).loss_and_grad(phi, np.arange(2))
    padded_X = np.concatenate([X, np.zeros((2, 3, 4))], axis=1)
    padded_y = np.concatenate([y, np.zeros((2, 3))], axis=1)
    padded = Q.pad_orders(orders, 8, 6)
    assert padded.shape == (2, 6, 8) and (padded[:, 3:] == -1).all()
    together = Q.ValidationSplits(padded_X, padded_y, padded, 0.05, samples=np.array([5, 5])).loss_and_grad(
        phi, np.arange(2))
    np.testing.assert_allclose(together[0], alone[0], rtol=1e-12)
    np.testing.assert_allclose(together[1], alone[1], rtol=1e-10, atol=1e-14)
