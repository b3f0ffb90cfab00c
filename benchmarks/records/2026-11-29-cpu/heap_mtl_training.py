"""The MTL training study (depth 2, 8 networks, MTL §5.1 synthetic tasks) at one width, with or without the heap
policy: `python heap_mtl_training.py WIDTH MAX_STEPS [keep]`; prints wall, user, system seconds, page faults, peak
memory and a digest of the rows (equal digests: equal results)."""
import hashlib, sys, time, resource
import numpy as np
from threadpoolctl import threadpool_limits
from transfertheory.sim.mtl.experiment import finite_width_study
from transfertheory.sim.seeding import generator
import transfertheory.theory.mtl as MTL

width, steps = int(sys.argv[1]), int(sys.argv[2])
if sys.argv[3:] == ['keep']:
    from transfertheory._memory import keep_freed_memory
    print('kept', keep_freed_memory())
with threadpool_limits(1):
    problem = MTL.synthetic_problem(generator(5), tasks=4, n=5, test_tasks=1, n_support=5, n_query=5, d=10)
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    df = finite_width_study(problem, MTL.ReluNetwork(2), [width], 8, lam_tau=0.1, lam_tau_hat=0.3, seed=0,
                            flow={"max_steps": steps})
    c1 = resource.getrusage(resource.RUSAGE_SELF)
print(f"wall {time.perf_counter()-t0:.1f} user {c1.ru_utime-c0.ru_utime:.1f} sys {c1.ru_stime-c0.ru_stime:.1f} "
      f"minflt {c1.ru_minflt-c0.ru_minflt} maxrss {c1.ru_maxrss/1e6:.2f}GB")
print("digest", hashlib.sha256(df.to_csv().encode()).hexdigest()[:16], df.status.value_counts().to_dict()
      if "status" in df else "")
