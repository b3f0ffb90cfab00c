"""Page faults of four 64 MiB arrays allocated after one was freed: `python heap_page_faults.py keep|default`."""
import resource, sys, numpy as np
if sys.argv[1] == "keep":
    from transfertheory._memory import keep_freed_memory; keep_freed_memory()
size = 2**23
np.ones(size)
r0 = resource.getrusage(resource.RUSAGE_SELF); 
for _ in range(4):
    np.ones(size)
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(sys.argv[1], r1.ru_minflt - r0.ru_minflt, round(r1.ru_stime - r0.ru_stime, 3))
