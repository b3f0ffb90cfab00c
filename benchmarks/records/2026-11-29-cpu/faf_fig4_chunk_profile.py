import cProfile, pstats, time, sys
from threadpoolctl import threadpool_limits
from transfertheory.sim.relu_teacher import run_transfer_experiment
threadpool_limits(1)
kw = dict(teachers=1, draws=int(sys.argv[1]), methods=("scratch","linear","linear_minnorm"), seed=0,
          flow=dict(max_time=2e3, loss_tol=1e-6), pretrain_flow=dict(max_time=2e3, loss_tol=1e-6),
          linear_flow=dict(max_time=1e30), teacher_start=3, draw_start=0)
pr = cProfile.Profile()
t0 = time.process_time()
pr.enable()
df = run_transfer_experiment(100, 1000, 100, [0.2, 0.35, 0.5, 0.65, 0.8], [100,200,300,400,600,800,1000], **kw)
pr.disable()
print("cpu", time.process_time()-t0)
st = pstats.Stats(pr); st.sort_stats("tottime").print_stats(25)
st.sort_stats("cumulative").print_stats(45)
