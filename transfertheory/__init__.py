"""transfertheory: executable, verified transfer-learning theory.

Closed forms (:mod:`transfertheory.theory`), simulators of the training
processes they describe (:mod:`transfertheory.sim`) on NumPy or CuPy
(:mod:`transfertheory.backend`), and figure builders / CLIs on top.
Papers: FaF (Tahir, Ganguli, Rotskoff 2024), MeRLin, TDR, MTL — see docs/.
"""
__version__ = "0.1.0"
