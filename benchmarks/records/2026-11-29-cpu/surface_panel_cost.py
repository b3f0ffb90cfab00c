"""CPU time of panel (a)'s surface at the phase-diagram CLI's default grid: matplotlib's `plot_surface` (what
`figures.phase_diagram` draws with now) against the facets built as whole arrays (`_surface_facets`, removed after git
794d202; its source is read from that commit). Run from the repository root: `python <this file>`."""
import ast, math, os, subprocess, time
import matplotlib
matplotlib.use("Agg")
import numpy as np
from matplotlib.figure import Figure
from mpl_toolkits.mplot3d.art3d import Poly3DCollection
from transfertheory.figures import phase_diagram as pd_fig, phase_grid

source = subprocess.run(["git", "show", "794d202:transfertheory/figures/phase_diagram.py"], capture_output=True,
                        text=True, check=True).stdout
wanted = {"_facet_edges", "_perimeters", "_surface_facets"}
old = {"np": np, "math": math, "SURFACE_FACETS": 60}
for node in ast.parse(source).body:
    if isinstance(node, ast.FunctionDef) and node.name in wanted:
        exec(compile(ast.Module([node], []), "794d202", "exec"), old)

gamma, theta, t = phase_grid.grid_surface(phase_grid.compute_phase_grid("linear", 0.2, 2.0, 400))
x, y = np.meshgrid(gamma, theta)
z = pd_fig._display(t)

def library():
    ax = Figure().add_subplot(projection="3d")
    ax.plot_surface(x, y, z, rcount=60, ccount=60, cmap="RdBu", vmin=-1, vmax=1, linewidth=0, antialiased=False)

def arrays():
    ax = Figure().add_subplot(projection="3d")
    facets, heights = old["_surface_facets"](x, y, z)
    surface = Poly3DCollection(facets, cmap="RdBu", linewidth=0, antialiased=False)
    surface.set_array(heights)
    surface.set_clim(-1, 1)
    ax.add_collection(surface, autolim=False)

def best(f, repeats=5):
    times = []
    for _ in range(repeats):
        start = time.process_time()
        f()
        times.append(time.process_time() - start)
    return min(times)

print(f"load {os.getloadavg()[0]:.2f}, cores {os.cpu_count()}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
print(f"plot_surface: {best(library) * 1e3:.1f} ms CPU; facets as whole arrays: {best(arrays) * 1e3:.1f} ms CPU "
      "(best of 5, 400 x 400 grid, 60 x 60 facets)")
