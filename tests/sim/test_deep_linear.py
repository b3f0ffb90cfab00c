"""The deep-linear gradient-flow simulator (FaF §3): its algebra, stage kernels, diagnostics and honesty.

Exact identities (chain gradients, low-rank stages, the rotated flow, the factored power iteration),
convergence reporting (saddle guard, γ = 1), reproducibility (chunking, the strict device stand-in),
backends and bad input. The theorem checks against the simulator (Lemma 3.3, Thms 3.4–3.9, the
fine-tuning erratum) are claims of the registry (``transfertheory/claims/faf_linear_sim.py``; ``python -m
transfertheory.verify -k faf.thm3``), run by ``tests/claims/test_claims.py``.
"""
import numpy as np
import pandas as pd
import pytest

import strict_backend

from transfertheory import backend
from transfertheory.sim import deep_linear as dl
from transfertheory.sim.deep_linear import run_transfer_experiment


def _target_loss(arch, X, y):
    n = X.shape[0]
    return dl.LeastSquaresLoss(arch, (X.T @ X / n)[None], (X.T @ y / n)[None], np.array([y @ y / n]))


def _draw(d, n, sigma, seed):
    gen = np.random.default_rng(seed)
    X = gen.standard_normal((n, d))
    beta_t = gen.standard_normal(d)
    beta_t /= np.linalg.norm(beta_t)
    return X, X @ beta_t + sigma * gen.standard_normal(n), beta_t


# --------------------------------------------------------------------------- exact identities


@pytest.mark.parametrize("depth", [2, 3, 4])
def test_the_chain_rule_gradient_matches_finite_differences(depth):
    arch = dl.Architecture(5, depth)
    X, y, _ = _draw(5, 7, 0.1, depth)
    loss = _target_loss(arch, X, y)
    w = np.random.default_rng(0).standard_normal((1, arch.n_params)) * 0.6
    grad, _ = loss(w, np.arange(1))
    eps, fd = 1e-6, np.empty(arch.n_params)
    for j in range(arch.n_params):
        e = np.zeros_like(w)
        e[0, j] = eps
        fd[j] = (loss(w + e, np.arange(1))[1][0] - loss(w - e, np.arange(1))[1][0]) / (2 * eps)
    np.testing.assert_allclose(grad[0], fd, atol=1e-7)


def test_loss_from_sufficient_statistics_equals_direct_loss():
    arch = dl.Architecture(6, 2)
    X, y, _ = _draw(6, 9, 0.3, 1)
    w = np.random.default_rng(2).standard_normal((1, arch.n_params))
    beta = dl.end_to_end(arch, w)[0]
    _, loss = _target_loss(arch, X, y)(w, np.arange(1))
    assert loss[0] == pytest.approx(np.sum((y - X @ beta) ** 2) / (2 * len(y)), rel=1e-12)


def _grouped_problem(d, depth, sizes=(6, 9, 14), seed=0):
    """A batch of LeastSquaresLoss instances on different draws, and random states of O(1) scale."""
    rng = np.random.default_rng(seed)
    arch = dl.Architecture(d, depth)
    Xs = [rng.standard_normal((n, d)) for n in sizes]
    gram = np.stack([X.T @ X / len(X) for X in Xs])
    c = np.stack([X.T @ (X @ rng.standard_normal(d) / np.sqrt(d)) / len(X) for X in Xs])
    loss = dl.LeastSquaresLoss(arch, gram, c, np.ones(len(sizes)))
    return arch, loss, rng.standard_normal((len(sizes), arch.n_params)) * 0.4


@pytest.mark.parametrize("population", [False, True])
def test_gradient_of_rows_writes_into_the_given_buffer(population):
    # the stage kernel's form of ∇_βL: a prefix of the requested rows, optionally written into ``out`` (its
    # factor stack); the same numbers as beta_gradient of those rows
    arch, loss, y = _grouped_problem(5, 2)
    if population:
        loss = dl.PopulationLoss(arch, np.random.default_rng(3).standard_normal((1, 5)))
    rows = np.array([2, 0, 1])
    beta = dl.end_to_end(arch, y)[:2]
    g_ref, loss_ref = loss.beta_gradient(beta, rows[:2])
    gradient = loss.gradient_of_rows(rows)
    out = np.full((4, 5), np.nan)[1:3]
    g, value = gradient(beta, True, out=out)
    assert g is out or np.shares_memory(g, out)
    np.testing.assert_array_equal(out, g_ref)
    np.testing.assert_array_equal(value, loss_ref)
    np.testing.assert_array_equal(gradient(beta, False), g_ref)
    out2 = np.empty((2, 5))
    assert gradient(beta, False, out=out2) is out2
    np.testing.assert_array_equal(out2, g_ref)


@pytest.mark.parametrize("stages", [(3, 9, 5), (9, 5, 3)])  # a batch to sort; one already in order
@pytest.mark.parametrize("depth", [2, 3])
def test_low_rank_stages_equal_dense_stages(depth, stages):
    # the factored stages are an exact rewriting of the RKC recursion: same states to rounding, and the
    # layerwise error norm equals the one computed from the dense estimate
    from transfertheory.sim import integrator as it

    arch, loss, y = _grouped_problem(7, depth)
    rows, h, s_row = np.arange(3), np.array([0.3, 0.05, 0.1]), np.array(stages)
    G, _ = loss(y, rows)

    def request(carried):
        return it.StepRequest(y=y, carried=carried, order=np.argsort(-s_row, kind="stable"), h=h, stages=s_row,
                              rows=rows, coefficients=it.tables(400).table(9), rtol=1e-3, atol=np.full(3, 1e-6))

    dense = it.DenseStages(loss)(request(G))
    low = dl.LowRankStages(loss)(request(None))
    if low.order is not None:  # the kernel answers in its sorted order (StepOutcome.order): back to the request's
        assert stages == (3, 9, 5) and list(low.order) == [1, 2, 0]
        inverse = np.argsort(low.order)
        low = low._replace(y=low.y[inverse], grad=low.grad[inverse], error=low.error[inverse],
                           loss=low.loss[inverse], grad_norm=low.grad_norm[inverse])
    np.testing.assert_allclose(low.y, dense.y, rtol=0, atol=1e-13)
    np.testing.assert_allclose(low.loss, dense.loss, rtol=1e-13)
    np.testing.assert_allclose(low.grad_norm, dense.grad_norm, rtol=1e-12)
    assert low.evaluations == s_row.sum() + 3 and dense.evaluations == s_row.sum()  # + stage 0 when not carried
    est = 0.8 * (y - dense.y) - 0.4 * h[:, None] * (G + dense.grad)
    blocks = [slice(l * 49, (l + 1) * 49) for l in range(depth - 1)] + [slice((depth - 1) * 49, None)]

    def rms(x):
        return np.sqrt(np.mean(x * x, axis=1))

    ratios = [rms(est[:, bl]) / (1e-6 + 1e-3 * np.maximum(rms(y[:, bl]), rms(dense.y[:, bl]))) for bl in blocks]
    np.testing.assert_allclose(low.error, np.sqrt(np.mean(np.square(ratios), axis=0)), rtol=1e-8)


@pytest.mark.parametrize("depth", [2, 3])
def test_factored_power_iteration_finds_the_hessian_spectral_radius(depth):
    # exact rank-two Hessian–vector products vs the spectrum of the Hessian built by finite differences
    from transfertheory.sim import integrator as it

    arch, loss, y = _grouped_problem(4, depth)
    rows, P, e = np.arange(3), arch.n_params, 1e-5
    H = np.stack([(loss(y + e * np.eye(P)[j], rows)[0] - loss(y - e * np.eye(P)[j], rows)[0]) / (2 * e)
                  for j in range(P)], axis=2)
    exact = np.abs(np.linalg.eigvalsh(0.5 * (H + H.transpose(0, 2, 1)))).max(axis=1)
    rho, _, _ = dl.LowRankStages(loss).spectral_radius(y, None, rows, None, 300)
    np.testing.assert_allclose(rho, exact, rtol=1e-7)  # the explicit Hessian's own error: O(e²) ~ 1e-10
    rho_fd, _, _ = it.dense_spectral_radius(loss)(y, None, rows, None, 300)
    np.testing.assert_allclose(rho_fd, exact, rtol=1e-5)  # finite differences with step 1e-7‖y‖


def test_initialization_schemes():
    arch = dl.Architecture(12, 3)
    seeds = [np.random.SeedSequence(k) for k in range(3)]
    bal = dl.init_weights(arch, 0.1, seeds, "balanced")
    for D in dl.conserved_imbalance(arch, bal):
        assert np.abs(D).max() < 1e-15  # D_l = 0 exactly
    a22 = dl.init_weights(arch, 0.1, seeds, "assumption22")
    for D in dl.conserved_imbalance(arch, a22):
        np.testing.assert_allclose(D, 0.01 * np.eye(12)[None].repeat(3, 0), atol=1e-14)  # D_l = α² I
    np.testing.assert_allclose(dl.assumption22_margin(arch, a22) / 0.01, 1.0, rtol=1e-10)
    gau = dl.init_weights(arch, 1.0, [np.random.SeedSequence(5)], "gaussian")
    assert np.var(gau) == pytest.approx(1 / 12, rel=0.1)  # W̄ entries N(0, 1/d), FaF App. D.1
    with pytest.raises(ValueError, match="init"):
        dl.init_weights(arch, 0.1, seeds, "orthogonal")


# --------------------------------------------------------------------------- per-instance limits


def _unit(d, seed):
    v = np.random.default_rng(seed).standard_normal(d)
    return v / np.linalg.norm(v)


@pytest.mark.parametrize("depth, alpha", [(2, 1e-4), (3, 1e-2)])
def test_flow_in_the_data_eigenbasis_is_the_rotated_flow(depth, alpha):
    # an exact change of variables: the same accepted steps, and β = Qβ̃ up to rounding
    d, k = 10, 2
    arch = dl.Architecture(d, depth)
    draws = [_draw(d, n, 0.2, n) for n in (6, 15)]
    gram = np.stack([X.T @ X / len(X) for X, _, _ in draws])
    c = np.repeat(np.stack([X.T @ y / len(X) for X, y, _ in draws]), k, axis=0)
    y2 = np.repeat([y @ y / len(y) for _, y, _ in draws], k)
    y0 = dl.init_weights(arch, alpha, list(range(2 * k)), "gaussian")
    plain = dl.train(dl.LeastSquaresLoss(arch, gram, c, y2), y0, rtol=1e-3, gtol=1e-6, max_time=1e5)
    lam, Q, c_rot, y0_rot = dl.rotate_to_data_eigenbasis(arch, gram, c, y0)
    rotated = dl.train(dl.LeastSquaresLoss(arch, lam, c_rot, y2), y0_rot, rtol=1e-3, gtol=1e-6, max_time=1e5)
    assert plain.converged.all() and rotated.converged.all()
    np.testing.assert_array_equal(plain.steps, rotated.steps)
    beta = np.einsum("gij,gkj->gki", Q, dl.end_to_end(arch, rotated.y).reshape(2, k, d)).reshape(-1, d)
    np.testing.assert_allclose(beta, dl.end_to_end(arch, plain.y), rtol=0, atol=1e-10)
    np.testing.assert_allclose(rotated.loss, plain.loss, rtol=1e-9, atol=1e-15)


def test_saddle_at_small_init_is_not_mistaken_for_convergence():
    # At W = αW̄ the weight gradient is O(α) (here ≪ gtol) although the network is at the saddle
    # W = 0, far from any minimizer: convergence also needs ‖∇_βL‖ ≤ gtol (the integrator's residual).
    d, n, gtol = 10, 5, 1e-6
    arch = dl.Architecture(d, 2)
    X, y, _ = _draw(d, n, 0.2, 3)
    loss = _target_loss(arch, X, y)
    w0 = dl.init_weights(arch, 1e-9, [np.random.SeedSequence(4)], "gaussian")
    assert np.linalg.norm(loss(w0, np.arange(1))[0]) < gtol  # the trap: ‖∇L(w0)‖ is already below tolerance
    flow = dl.train(loss, w0, rtol=1e-3, gtol=gtol, max_time=1e4)
    assert flow.converged[0] and flow.t_final[0] > 10 and flow.residual[0] <= gtol
    assert np.linalg.norm(dl.end_to_end(arch, flow.y)[0] - np.linalg.pinv(X) @ y) < 1e-4


@pytest.fixture(scope="module")
def pretrained():
    arch, beta_s = dl.Architecture(16, 2), _unit(16, 7)
    return dl.pretrain(arch, beta_s, 1e-4, seed=8, backend="numpy"), beta_s


@pytest.mark.parametrize("lam", [0.0, 0.4])
def test_linear_transfer_is_ridge_on_the_rank_one_feature_thm_3_7_3_8(pretrained, lam):
    # Eqs. 104–108, 121–126: β̂ = bβ_s with b = zᵀy/(‖z‖² + nλ), z = Xβ_s (‖v‖ = 1).
    pre, beta_s = pretrained
    X, y, _ = _draw(16, 10, 0.3, 5)
    target = _target_loss(pre.arch, X, y)
    U, s, V, F = dl.feature_basis(pre)
    assert U.shape[1] == 1  # the O(α) residue is cut: rank-one features
    beta_hat, w_last = dl.linear_transfer_exact(target, U, s, V, lam)
    z = X @ beta_s
    b = z @ y / (z @ z + len(y) * lam * pre.v_norm**-2)  # effective ridge λ/‖v‖²
    np.testing.assert_allclose(beta_hat[0], b * beta_s, atol=1e-4)
    np.testing.assert_allclose(w_last[0] @ F.T, beta_hat[0], atol=1e-12)
    # Gradient flow on the last layer alone: along the feature it reaches the same solution;
    # in the O(α) residue directions (curvature ~α²) it moves only partially and, with
    # gradients ~α there, honestly does not reach gtol. Measured deviation ≈ 13·σ₂/σ₁ at
    # α = 1e-4 and 1e-5 (∝ α), bounded here by 20·σ₂/σ₁.
    flow = dl.train(dl.LastLayerLoss(target, F, lam), pre.arch.layers(pre.weights)[1].copy(),
                    rtol=1e-6, gtol=1e-10, max_time=1e4)
    delta = flow.y[0] @ F.T - beta_hat[0]
    along = delta @ U[:, 0]
    residue = pre.singular_value_ratio
    assert abs(along) < residue and np.linalg.norm(delta - along * U[:, 0]) < 20 * residue
    assert flow.status[0] in ("converged", "max_time")


# --------------------------------------------------------------------------- mean risks (Thms 3.6–3.9)

D, SIGMA = 32, 0.3
GAMMAS, THETAS, LAMS = (0.5, 1.5), (np.pi / 6, np.pi / 3), (0.0, 0.3)


@pytest.fixture(scope="module")
def experiment():
    return run_transfer_experiment(D, GAMMAS, THETAS, SIGMA, 10, ridge=LAMS, seed=11, backend="numpy", progress=False)


def test_every_instance_converged_and_reports_diagnostics(experiment):
    df = experiment
    assert df.converged.all() and (df.status.isin(["converged", "exact"])).all()
    flows = df[df.method != "linear"]
    assert (flows.grad_norm <= 1e-6).all() and (flows.t_final > 0).all() and (flows.steps > 0).all()
    assert flows.imbalance_drift.max() < 1e-2  # Eq. 35 drift, relative, at rtol = 1e-3
    assert df.attrs["pretrain"]["converged"] and df.attrs["pretrain"]["sv_ratio"] < 1e-3
    assert len(df) == len(GAMMAS) * len(THETAS) * 10 * (2 + len(LAMS))


# --------------------------------------------------------------------------- honesty, reproducibility, input


def test_near_gamma_one_is_reported_unconverged():
    # n = d: the smallest eigenvalue of XXᵀ/n is ~1/d², so gradient flow cannot reach its
    # limit (whose exact risk is +∞) within the budget; the rows must say so — at the budget (max_time) or
    # earlier, where the early verdict proves that they cannot converge in time (unreachable).
    df = run_transfer_experiment(16, [1.0], [0.5], 0.2, 3, methods=("scratch", "finetune"), flow={"max_time": 30.0},
                                 seed=2, backend="numpy", progress=False)
    assert not df.converged.any()
    assert df.status.isin(["max_time", "unreachable"]).all() and (df.t_final <= 30.0).all()
    assert np.allclose(df.t_final[df.status == "max_time"], 30.0) and (df.grad_norm > 1e-6).all()


def test_runs_from_an_unconverged_pretraining_are_not_converged():
    # fine-tuning and linear transfer start from the pretrained network: converged only if it converged too;
    # each row keeps its own flow's status (the pretraining's is df.attrs["pretrain"]["status"])
    df = run_transfer_experiment(8, [0.5, 1.5], [0.5], 0.2, 2, methods=("scratch", "linear", "finetune"),
                                 pretrain_flow={"max_time": 1e-3}, backend="numpy", progress=False)
    assert not df.attrs["pretrain"]["converged"]
    transfer = df[df.method != "scratch"]
    assert not transfer.converged.any() and transfer.status.isin(["converged", "exact"]).all()
    assert df[df.method == "scratch"].converged.all()


def test_a_single_method_name_is_a_list_of_one():
    kw = dict(d=8, gammas=[0.5], thetas=[0.3], sigma=0.1, draws=1, backend="numpy", progress=False)
    pd.testing.assert_frame_equal(run_transfer_experiment(methods="scratch", **kw),
                                  run_transfer_experiment(methods=["scratch"], **kw))


def test_deterministic_and_independent_of_chunking(array_backend):
    name, _ = array_backend
    kw = dict(d=12, gammas=[0.5, 1.5], thetas=[0.4], sigma=0.2, draws=3, seed=5, backend=name, progress=False)
    a, b, c = run_transfer_experiment(**kw), run_transfer_experiment(**kw), run_transfer_experiment(**kw, chunk_size=1)
    np.testing.assert_array_equal(a.risk, b.risk)
    if name != "cupy":
        # every instance's arithmetic (tolerances, step control, spectral-radius refreshes, per-row products) is
        # its own, so on the host batching changes nothing, not even rounding.
        for col in ("risk", "steps", "t_final", "grad_norm"):
            np.testing.assert_array_equal(a[col], c[col])
    else:
        # cuBLAS chooses its batched-product kernel by the batch's shape, so on CuPy the last bits move with the
        # chunking, and the step-size control amplifies them (the few-stage error estimate is a Gram form with
        # cancellation): measured on an H200 at seeds 5-8, equal step counts but t_final within 4e-7 relative,
        # risks within 3.7e-11 relative. The two runs are then two valid discretizations of one flow, which
        # differ by at most twice the integration error, measured as the change of every risk when rtol is
        # divided by 10; 1e-10 absolute covers rows whose integration error happens to vanish.
        tight = run_transfer_experiment(**kw, flow={"rtol": 1e-4})
        integration_error = np.abs(a.risk - tight.risk).to_numpy()
        assert np.all(np.abs(a.risk - c.risk).to_numpy() <= 2 * integration_error + 1e-10)
        assert list(a.status) == list(c.status)
    assert list(a[list(dl.ROW_KEYS)].itertuples(index=False)) == list(c[list(dl.ROW_KEYS)].itertuples(index=False))


@pytest.mark.parametrize("kw", [
    dict(d=12, gammas=[0.5, 1.5], thetas=[0.4, 1.1], sigma=0.2, draws=2, ridge=(0.0, 0.3), seed=5),
    dict(d=8, gammas=[0.5, 1.25], thetas=[0.7], sigma=0.3, draws=2, seed=2, depth=3, alpha=1e-2,
         init="assumption22", chunk_size=1),
    dict(d=10, gammas=[0.6], thetas=[0.3], sigma=0.1, draws=2, seed=1, methods=("linear",),
         linear_solver="flow", ridge=(0.0, 0.2)),
])
def test_strict_device_stand_in_gives_bit_identical_results(kw):
    # The strict CuPy stand-in computes with NumPy but refuses implicit host/device transfers: the whole pipeline
    # (pretraining, low-rank and dense stages, spectral radii, eigenbasis rotation, exact and flow linear
    # transfer) runs on it, and every column equals the NumPy run's bit for bit.
    host = run_transfer_experiment(**kw, backend="numpy", progress=False)
    device = run_transfer_experiment(**kw, backend=strict_backend.NAME, progress=False)
    assert device.attrs["backend"] == strict_backend.NAME
    pd.testing.assert_frame_equal(device, host, check_exact=True)
    assert device.attrs["integrator"] == host.attrs["integrator"] and device.attrs["pretrain"] == host.attrs["pretrain"]


def test_backend_environment_variable_is_honoured(monkeypatch):
    kw = dict(d=8, gammas=[0.5], thetas=[0.3], sigma=0.1, draws=1, methods=("scratch",), progress=False)
    monkeypatch.setenv(backend.ENV_VAR, strict_backend.NAME)
    assert run_transfer_experiment(**kw).attrs["backend"] == strict_backend.NAME
    assert run_transfer_experiment(**kw, backend="numpy").attrs["backend"] == "numpy"  # explicit choice wins
    monkeypatch.setenv(backend.ENV_VAR, "bogus")
    with pytest.raises(ValueError, match=f"environment variable {backend.ENV_VAR} must be one of"):
        run_transfer_experiment(**kw)
    if not backend.cupy_available():
        monkeypatch.setenv(backend.ENV_VAR, "cupy")
        with pytest.raises(backend.BackendUnavailableError):
            run_transfer_experiment(**kw)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(gammas=[]), "gammas must be a non-empty sequence"),
        (dict(thetas=()), "thetas must be a non-empty sequence"),
        (dict(ridge=[]), "ridge must be a non-empty sequence"),
        (dict(d=16, gammas=[0.1], methods=("scratch", "linear")), r"gammas: gamma = 0.1 gives n = .* = 2 .*minimum n = 3"),
        (dict(d=16, gammas=[0.02], methods=("scratch",)), r"gammas: gamma = 0.02 gives n = .* = 0 .*minimum n = 1"),
        (dict(d=True), "d must be a real number"),
        (dict(d=8.5), "d must be an integer >= 2, got 8.5"),
        (dict(sigma="0.2"), "sigma must be a real number"),
        (dict(gammas=[0.5, True]), "gammas must be a real number"),
        (dict(draws=True), "draws must be a real number"),
        (dict(seed=-1), "seed must be an integer >= 0"),
        (dict(flow={"gtol": 0.0}), "gtol must be"),
        (dict(pretrain_flow={"rtol": 0}), "rtol must be"),
        (dict(flow={"max_time": np.inf}), r"max_time must be in \(0, inf\), got inf"),
        (dict(flow={"rtol": "1e-3"}), "rtol must be a real number"),
        (dict(chunk_size=0), "chunk_size must be"),
        (dict(methods=()), "methods must be"),
        (dict(d=1), "d must be"),
        (dict(gammas=[0.0]), "gammas must be"),
        (dict(thetas=[4.0]), "thetas must be"),
        (dict(sigma=-1), "sigma must be"),
        (dict(draws=0), "draws must be"),
        (dict(alpha=0), "alpha must be"),
        (dict(depth=1), "depth must be"),
        (dict(methods=("scratch", "magic")), "methods must be"),
        (dict(ridge=(-0.1,)), "ridge must be"),
        (dict(linear_solver="lstsq"), "linear_solver"),
        (dict(init="zeros"), "init must be"),
        (dict(backend="tpu"), "backend must be"),
        (dict(gammas=[np.nan]), "gammas must not be NaN"),
    ],
)
def test_bad_input_names_the_parameter(kw, match):
    args = dict(d=8, gammas=[0.5], thetas=[0.3], sigma=0.1, draws=1, backend="numpy", progress=False)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        run_transfer_experiment(**args)


@pytest.mark.parametrize("kw, match", [(dict(flow={"tol": 1e-6}), "'tol': not an integrator setting"),
                                       (dict(pretrain_flow=1e-6), "pretrain_flow must be a FlowSettings")])
def test_a_flow_override_that_is_no_setting_is_a_type_error(kw, match):
    with pytest.raises(TypeError, match=match):
        run_transfer_experiment(d=8, gammas=[0.5], thetas=[0.3], sigma=0.1, draws=1, backend="numpy", **kw)


@pytest.mark.gpu
def test_cpu_and_gpu_agree():
    # Different rounding can flip an accept/reject decision, after which the two runs are two valid
    # discretizations and differ by up to twice the integration error — measured here on the CPU as the
    # change of every risk when rtol is divided by 10 (a tighter run is ~10× more accurate). Both CPU runs
    # share one pretraining, whose own error (weights within ~1e-9 of a tight run) bounds the rest: 1e-8.
    kw = dict(d=24, gammas=[0.5, 1.5], thetas=[0.5, 1.2], sigma=0.2, draws=4, seed=1, progress=False)
    cpu = run_transfer_experiment(**kw, flow={"gtol": 1e-8, "rtol": 1e-6}, backend="numpy")
    tight = run_transfer_experiment(**kw, flow={"gtol": 1e-8, "rtol": 1e-7}, backend="numpy")
    gpu = run_transfer_experiment(**kw, flow={"gtol": 1e-8, "rtol": 1e-6}, backend="cupy")
    assert gpu.attrs["backend"] == "cupy" and backend.cupy_available()
    integration_error = np.abs(cpu.risk - tight.risk).to_numpy()
    assert np.all(np.abs(cpu.risk - gpu.risk).to_numpy() <= 2 * integration_error + 1e-8)




def test_the_default_progress_bar_shows_on_a_terminal_only(monkeypatch):
    import io
    import sys

    from transfertheory.sim.deep_linear import experiment

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for stream, progress, shown in [(io.StringIO(), None, False), (Terminal(), None, True), (io.StringIO(), True, True),
                                    (Terminal(), False, False)]:
        monkeypatch.setattr(sys, "stderr", stream)
        bar = experiment._progress_bar(4, progress)
        assert bar.disable is not shown
        bar.close()
