"""Figure builders (headless, Agg) and the shared output convention.

Every builder writes ``NAME.png`` and/or ``NAME.pdf`` plus ``NAME.csv`` — the
tidy data behind the figure — into an output folder (default ``figures/``).
"""
from ._io import FORMATS, output_paths, save_figure, use_agg

__all__ = ["FORMATS", "output_paths", "save_figure", "use_agg"]
