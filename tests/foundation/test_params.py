"""The shared parameter ranges (transfertheory.params) and the low-level checks behind them (_validation).

Every rejection is checked for its message: it must name the parameter and
state the valid range, and argparse must turn a bad flag into a usage error
(exit status 2) with that range in it.
"""
import argparse
import math

import numpy as np
import pytest

from transfertheory import params as P
from transfertheory._validation import Interval, as_real_array, scalar_or_array
from transfertheory.theory import linear as L

REAL_PARAMS = [P.GAMMA, P.THETA, P.SIGMA, P.LAM, P.ALPHA, P.GAMMA_MAX]
INTEGER_PARAMS = [P.N, P.D, P.DEPTH, P.DRAWS, P.RESOLUTION, P.SEED]
ALL_PARAMS = REAL_PARAMS + INTEGER_PARAMS

#: (param, a valid value, an out-of-range value, the range text the message must contain)
RANGES = [
    (P.GAMMA, 0.5, 0.0, "in (0, inf)"),
    (P.THETA, math.pi, 3.2, "in [0, π]"),
    (P.SIGMA, 0.0, -0.1, "in [0, inf)"),
    (P.SIGMA, 0.0, math.inf, "in [0, inf)"),
    (P.LAM, 0.0, -1e-3, "in [0, inf)"),
    (P.ALPHA, 1e-5, 0.0, "in (0, inf)"),
    (P.GAMMA_MAX, 100.0, 100.5, "in (0, 100]"),
    (P.N, 1, 0, "an integer >= 1"),
    (P.D, 1, 0, "an integer >= 1"),
    (P.DEPTH, 2, 1, "an integer >= 2"),
    (P.DRAWS, 1, 0, "an integer >= 1"),
    (P.RESOLUTION, 4000, 4001, "an integer in [2, 4000]"),
    (P.RESOLUTION, 2, 1, "an integer in [2, 4000]"),
    (P.SEED, 0, -1, "an integer >= 0"),
]


@pytest.mark.parametrize("param, valid, bad, text", RANGES, ids=lambda v: getattr(v, "name", None))
def test_range_is_enforced_with_a_message_naming_parameter_and_range(param, valid, bad, text):
    assert param.check(valid) == valid
    expected = f"{param.name} must be {text}, got {bad:g}"
    with pytest.raises(ValueError) as err:
        param.check(bad)
    assert str(err.value) == expected
    with pytest.raises(ValueError, match=r"^my_flag must be "):
        param.check([valid, bad], name="my_flag")


NOT_NUMBERS = [True, False, np.True_, [0.5, True], "10", "abc", None, 1 + 2j, [[1.0], [1.0, 2.0]], {"a": 1}]


@pytest.mark.parametrize("param", ALL_PARAMS, ids=lambda p: p.name)
@pytest.mark.parametrize("value", NOT_NUMBERS, ids=repr)
def test_non_numbers_are_rejected(param, value):
    with pytest.raises(ValueError, match=rf"^{param.name} must be a real number or array of reals, got "):
        param.check(value)


@pytest.mark.parametrize("param", ALL_PARAMS, ids=lambda p: p.name)
def test_nan_is_rejected(param):
    with pytest.raises(ValueError, match=rf"^{param.name} must not be NaN"):
        param.check([1.0, math.nan])


@pytest.mark.parametrize("param", INTEGER_PARAMS, ids=lambda p: p.name)
@pytest.mark.parametrize("value", [2.5, math.inf, -math.inf])
def test_integer_parameters_reject_non_integers(param, value):
    with pytest.raises(ValueError, match=rf"^{param.name} must be an integer .*got {value:g}$"):
        param.check(value)


def test_an_integer_from_2_64_on_is_refused_with_the_notation_hint_for_reals_only():
    with pytest.raises(ValueError, match=r"^seed: an integer must be below 2\*\*64, got 18446744073709551616$"):
        P.SEED.check(2**64)
    with pytest.raises(ValueError, match=r"^sigma: .* below 2\*\*64 \(a real number can be written 1e20\), got 10{30}"):
        P.SIGMA.check(10**30)


def test_integral_floats_and_numpy_types_are_accepted():
    assert P.N.check(3.0) == 3 and P.N.check(np.int32(3)) == 3
    np.testing.assert_array_equal(P.N.check(np.rint(np.array([0.5, 1.6]) * 10)), [5.0, 16.0])
    assert P.GAMMA.check(np.float32(0.5)) == 0.5
    assert P.GAMMA.check([[0.5, 1.0]]).shape == (1, 2)
    assert P.GAMMA.check(np.array([0.5])).dtype == float


def test_scalar_returns_python_numbers_and_rejects_arrays():
    assert type(P.GAMMA.scalar(1)) is float and P.GAMMA.scalar(1) == 1.0
    assert type(P.N.scalar(np.int64(7))) is int and P.N.scalar(7.0) == 7
    huge = 2**60 + 1  # beyond float precision: returned exactly
    assert P.SEED.scalar(huge) == huge
    with pytest.raises(ValueError, match=r"^gamma must be a single number, got an array of shape \(2,\)"):
        P.GAMMA.scalar([0.5, 1.0])
    with pytest.raises(ValueError, match=r"^d must be an integer >= 1, got 0"):
        P.D.scalar(0)


def test_sequence_messages_read_as_sentences_and_distinct_grids_name_the_repeat():
    with pytest.raises(ValueError, match=r"^ns must be a non-empty sequence of numbers, each an integer >= 1, got \[\]"):
        P.N.sequence([], "ns")
    with pytest.raises(ValueError, match=r"^gammas must be a non-empty sequence of numbers, each in \(0, inf\)"):
        P.GAMMA.sequence([[0.5]], "gammas")
    with pytest.raises(ValueError, match=r"^ns must not repeat a value .*got 4 twice in \[4, 8, 4\]"):
        P.N.sequence([4, 8, 4], "ns", distinct=True)
    assert P.N.sequence([4, 4], "ns").tolist() == [4, 4]  # only grids refuse repeats
    assert P.GAMMA.sequence(0.5, "gammas", distinct=True).tolist() == [0.5]


# --------------------------------------------------------------------------- argparse


def _parser(param, flag="--value"):
    parser = argparse.ArgumentParser(prog="prog")
    parser.add_argument(flag, type=param.arg_type())
    return parser


@pytest.mark.parametrize(
    "param, text, value",
    [(P.GAMMA, "0.25", 0.25), (P.SIGMA, "0", 0.0), (P.THETA, "3.14159", 3.14159), (P.RESOLUTION, "400", 400),
     (P.SEED, "0", 0), (P.GAMMA_MAX, "1e2", 100.0)],
)
def test_arg_type_parses_valid_text(param, text, value):
    parsed = param.arg_type()(text)
    assert parsed == value and type(parsed) is type(value)


@pytest.mark.parametrize(
    "param, text, message",
    [
        (P.GAMMA, "-1", "must be in (0, inf), got -1"),
        (P.SIGMA, "inf", "must be in [0, inf), got inf"),
        (P.SIGMA, "nan", "must not be NaN, got nan"),
        (P.SIGMA, "abc", "must be a real number, got 'abc'"),
        (P.SIGMA, "", "must be a real number, got ''"),
        (P.RESOLUTION, "100000000", "must be an integer in [2, 4000], got 100000000"),
        (P.RESOLUTION, "1.5", "must be an integer, got '1.5'"),
        (P.N, "True", "must be an integer, got 'True'"),
        (P.SEED, "-3", "must be an integer >= 0, got -3"),
    ],
)
def test_arg_type_raises_argument_type_error(param, text, message):
    with pytest.raises(argparse.ArgumentTypeError) as err:
        param.arg_type()(text)
    assert str(err.value) == message


def test_argparse_usage_error_names_the_flag_and_range(capsys):
    with pytest.raises(SystemExit) as exit_info:
        _parser(P.GAMMA, "--gamma").parse_args(["--gamma", "-1"])
    assert exit_info.value.code == 2
    assert "argument --gamma: must be in (0, inf), got -1" in capsys.readouterr().err
    assert _parser(P.GAMMA, "--gamma").parse_args(["--gamma", "2"]).gamma == 2.0


# --------------------------------------------------------------------------- with_range


def test_with_range_narrows_and_keeps_the_rest():
    half = P.THETA.with_range(high=math.pi / 2)
    assert (half.name, half.integer, half.description) == (P.THETA.name, False, P.THETA.description)
    assert half.check(math.pi / 2) == math.pi / 2
    with pytest.raises(ValueError, match=r"^theta must be in \[0, π/2\], got 1.6"):
        half.check(1.6)
    assert P.THETA.check(1.6) == 1.6  # the original is unchanged (frozen)
    positive = P.SIGMA.with_range(closed="neither")
    with pytest.raises(ValueError, match=r"^sigma must be in \(0, inf\), got 0"):
        positive.check(0.0)
    three = P.N.with_range(low=3)
    with pytest.raises(ValueError, match=r"^n must be an integer >= 3, got 2"):
        three.check(2)
    assert P.N.with_range(low=1) == P.N


@pytest.mark.parametrize(
    "param, kwargs",
    [(P.THETA, dict(high=4.0)), (P.GAMMA, dict(closed="left")), (P.N, dict(low=0)), (P.RESOLUTION, dict(high=5000))],
)
def test_with_range_refuses_to_widen(param, kwargs):
    with pytest.raises(ValueError, match=rf"^with_range must narrow {param.name}'s range"):
        param.with_range(**kwargs)


def test_params_are_frozen():
    with pytest.raises(AttributeError):
        P.GAMMA.name = "other"


# --------------------------------------------------------------------------- _validation (kept API)


def test_interval_text_and_membership():
    assert str(Interval(0, np.inf, "neither")) == "(0, inf)"
    assert str(Interval(0, np.pi, "both")) == "[0, π]"
    assert str(Interval(-1, 2.5, "right")) == "(-1, 2.5]"
    # an infinite end is never attained, whatever `closed` says
    assert not Interval(0, np.inf, "both").contains(np.inf)
    assert str(Interval(0, np.inf, "both")) == "[0, inf)"
    np.testing.assert_array_equal(Interval(0, 1, "left").contains([0, 0.5, 1, np.nan]), [True, True, False, False])
    with pytest.raises(ValueError, match="closed must be"):
        Interval(0, 1, "open")
    with pytest.raises(ValueError, match="low <= high"):
        Interval(2, 1)


def test_as_real_array_rejects_bool_and_str():
    assert as_real_array(0.5, "x") == 0.5
    for bad in (True, "3", None):
        with pytest.raises(ValueError, match=r"^x must be a real number"):
            as_real_array(bad, "x")
    assert type(scalar_or_array(np.asarray(2.0), 1, 2.0)) is float
    assert isinstance(scalar_or_array(np.ones(2), [1, 2]), np.ndarray)


@pytest.mark.parametrize("bad", ["10", True, np.bool_(True)])
def test_closed_forms_reject_strings_and_booleans(bad):
    """scratch_risk_finite('10', 20, 0.2) and True used to be accepted as 10 and 1."""
    with pytest.raises(ValueError, match=r"^n must be a real number"):
        L.scratch_risk_finite(bad, 20, 0.2)
    with pytest.raises(ValueError, match=r"^sigma must be a real number"):
        L.scratch_risk(0.5, bad)



def test_range_names_are_declared_once_across_params_and_the_theory_modules():
    """Shared ranges live in params.py, paper-specific ones beside their theory module under names of their own:
    one public name never means two ranges (MeRLin's target weight α is ALPHA_JOINT, not params.ALPHA)."""
    import importlib
    import pkgutil

    import transfertheory.theory as theory

    modules = [P] + [importlib.import_module(info.name)
                     for info in pkgutil.walk_packages(theory.__path__, "transfertheory.theory.")]
    owners = {}
    for module in modules:
        for name, value in vars(module).items():
            if isinstance(value, P.Param) and not name.startswith("_"):
                owners.setdefault(name, {})[id(value)] = f"{module.__name__}.{name}"
    collisions = {name: sorted(found.values()) for name, found in owners.items() if len(found) > 1}
    assert not collisions and {"WIDTH", "DRAWS", "GTOL", "LOSS_TOL", "N", "D", "SIGMA", "SEED"} <= set(owners)
