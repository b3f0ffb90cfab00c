import numpy as np, sys, pandas as pd
from threadpoolctl import threadpool_limits
threadpool_limits(1)
from transfertheory.sim.relu_teacher import run_transfer_experiment
ns = [100, 200, 300, 400, 600, 800, 1000]
kw = dict(methods=("scratch",), seed=0, flow=dict(max_time=2e3, loss_tol=1e-6), teachers=1, teacher_start=0)
full = run_transfer_experiment(100, 1000, 100, [0.5], ns, draws=2, draw_start=0, **kw)
parts = [run_transfer_experiment(100, 1000, 100, [0.5], ns, draws=1, draw_start=s, **kw) for s in (0, 1)]
keys = ["method", "mu", "n", "teacher", "draw"]
p = pd.concat(parts).sort_values(keys, ignore_index=True); f = full.sort_values(keys, ignore_index=True)
pd.set_option("display.width", 250)
for c in ["risk", "loss", "grad_norm", "t_final", "steps"]:
    a, b = f[c].to_numpy(float), p[c].to_numpy(float)
    bad = ~((a == b) | (np.isnan(a) & np.isnan(b)))
    print(c, bad.sum(), np.nanmax(np.abs(a - b) / np.abs(a)) if bad.any() else 0)
print(f[["n", "draw", "risk", "loss", "grad_norm", "t_final", "steps", "status"]])
print(p[["n", "draw", "risk", "loss", "grad_norm", "t_final", "steps", "status"]])
a, b = f["loss"].to_numpy(float), p["loss"].to_numpy(float)
print(f[a != b][["n", "draw"]], a[a != b] - b[a != b])
