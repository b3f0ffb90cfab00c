#!/usr/bin/env bash
# The GPU checks of one device session, in one call: the gpu-marked tests, the GPU benchmarks and the
# simulating figures' paper profiles, each under its own time limit so one slow step cannot starve the rest.
#
#   bash benchmarks/device_check.sh OUTDIR [STEPS...]     (STEPS: env tests bench profiles; default all)
#   (single benchmarks: deep = deep linear d=100 on CuPy; fig1 = FaF Fig. 1 data at the paper's size, 20 x 20 grid)
#
# Needs python3 with CuPy, NumPy, SciPy, pandas, matplotlib, pytest and pyarrow (the device image has
# them); POT travels as a wheel in .whl/ when the image lacks it. Writes at most 8 files into OUTDIR: the logs of
# each step and the paper-profile figures as one archive.
set -u
out=${1:?usage: device_check.sh OUTDIR [STEPS...]}; shift
steps=${*:-env tests bench profiles}
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}

step() {  # step NAME LIMIT_S LOG COMMAND...: run COMMAND under a limit, appending to LOG with its wall time
  local name=$1 limit=$2 log=$3; shift 3
  local start=$(date +%s.%N)
  echo "=== $name ($(date -u +%H:%M:%S), limit ${limit}s): $*" | tee -a "$log"
  timeout -k 5 "$limit" "$@" >>"$log" 2>&1
  local rc=$?
  echo "=== $name: exit $rc, $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s wall" | tee -a "$log"
}

for s in $steps; do case $s in
env)
  { git log -1 --format='commit %H %cI' 2>/dev/null || true; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv
    nproc; uptime
    python3 -c "import sys, numpy, scipy, pandas, cupy; print(sys.version); print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'pandas', pandas.__version__, 'cupy', cupy.__version__); print(cupy.cuda.runtime.getDeviceProperties(0)['name'])"
    python3 -c "import transfertheory.backend as b; print('cupy usable:', b.cupy_available())"; } >"$out/env.txt" 2>&1 ;;
tests)
  step "pytest -m gpu" 240 "$out/gpu_tests.log" python3 -m pytest -m gpu -p no:cacheprovider -o addopts= -q -rfEs \
      --junitxml="$out/gpu_tests.xml" tests ;;
bench)
  log=$out/bench.log
  step "deep linear d=100, CuPy vs plain GD on CuPy" 60 "$log" python3 benchmarks/bench_deep_linear.py --backend cupy --repeat 1
  step "deep linear Fig. 1 data (d=500), CuPy" 60 "$log" python3 benchmarks/bench_deep_linear.py --fig1 --backend cupy --repeat 1 --no-baseline
  step "deep linear Fig. 1 data (d=500), NumPy 16 cores, grid 5" 30 "$log" python3 benchmarks/bench_deep_linear.py --fig1 --fig1-grid 5 --backend numpy --repeat 1 --no-baseline
  step "TDR trainer vs loop, CuPy" 60 "$log" python3 benchmarks/bench_tdr.py --backend cupy --widths 1024 4096 16384 --seeds 8 --repeats 1
  step "MeRLin simulators, CuPy" 30 "$log" python3 benchmarks/bench_merlin.py --backend cupy --repeats 1
  step "ReLU population gradient (FaF Fig. 4 sizes), CuPy" 20 "$log" python3 benchmarks/bench_relu_teacher.py --backend cupy --d 100 --m 1000 --m-star 100 --repeats 5
  step "ReLU population gradient (FaF Fig. 4 sizes), NumPy" 20 "$log" python3 benchmarks/bench_relu_teacher.py --backend numpy --d 100 --m 1000 --m-star 100 --repeats 5 ;;
deep)
  step "deep linear d=100, CuPy vs plain GD on CuPy" 60 "$out/bench.log" python3 benchmarks/bench_deep_linear.py --backend cupy --repeat 1 ;;
fig1)
  step "deep linear Fig. 1 data (d=500, 20 x 20 grid), CuPy, memory-fit batches" 240 "$out/bench.log" python3 benchmarks/bench_deep_linear.py --fig1 --backend cupy --repeat 1 --no-baseline ;;
profiles)
  figs=/tmp/paper_figures; mkdir -p "$figs"
  for name in faf_fig1 tdr_fig; do
    step "figure $name --paper, CuPy" 75 "$out/profiles.log" python3 -m transfertheory.figures "$name" --paper \
        --backend cupy --workers 4 --store /tmp/sweeps --out "$figs"
  done
  tar -czf "$out/paper_figures.tgz" -C "$figs" . ;;
*) echo "unknown step $s" >&2; exit 2 ;;
esac; done
