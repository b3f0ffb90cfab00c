"""Figures: builders (headless, Agg), their statistics and simulations, the registry and the output convention.

Every figure ``NAME`` writes ``NAME.png`` and/or ``NAME.pdf``, ``NAME.csv`` (the tidy data behind it) and
``NAME.json`` (parameters, column definitions with units, version, backend, runtime) into an output folder
(default ``figures/``); see :mod:`.output`. ``python -m transfertheory.figures --list`` names the registered
figures (:mod:`.registry`). Modules: :mod:`.stats` (paired statistics against exact theory), :mod:`.simulation`
(simulated points), :mod:`.cli` (shared command-line pieces and exit codes), :mod:`.phase_diagram` (the phase
diagram of FaF Figs. 1 and 3), :mod:`.faf_fig1_3` (also FaF Fig. 6), :mod:`.faf_fig2`, :mod:`.faf_fig5`,
:mod:`.faf_fig7`, :mod:`.gallery` (the README).
"""
