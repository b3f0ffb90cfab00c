r"""Claim statements as reStructuredText with their formulas typeset by MathJax.

A statement is Unicode prose with TeX-like pieces: ``e^{−σ²/2}``, ``E_{p_f}h``, ``D_KL(p_f ‖ p_g)``,
``c^{2L/(L−1)}``. Shown as plain text, the carets, underscores and braces are noise. :func:`statement_rst`
finds each such piece — a run of non-blank characters holding ``^``, ``_`` or ``\``, extended over blanks until
its braces balance — and emits it as a ``:math:`` role (MathJax renders Unicode σ, ‖, ² … as they are); the rest
stays escaped prose. Inside a piece, a multi-letter subscript gets its braces (``D_KL`` → ``D_{KL}``, which TeX
would read as D_K L), a brace that does not follow ``^`` or ``_`` is a literal brace (``1{wᵀx ≥ 0}``, an
indicator), and ``~`` is "distributed as". Code names (``merlin_sample_size``: lowercase words joined by ``_``)
are shown as code, not as subscripts.
"""
from __future__ import annotations

import re

from .text import rst_escape

__all__ = ["statement_rst", "to_tex", "math_spans"]

#: a function or variable name of the package: lowercase words of two letters or more joined by underscores
_CODE_NAME = re.compile(r"\b[a-z][a-z0-9]+(?:_[a-z0-9]{2,})+\b")
_MATHY = re.compile(r"[\\^_]")
#: punctuation that ends a sentence or clause, kept outside a formula
_TRAILING = ",;:."
#: a subscript or superscript of several characters written without braces (Latin, digits, Greek, accents)
_SUBSCRIPT = re.compile(r"_([A-Za-z0-9\u0370-\u03ff][A-Za-z0-9\u0370-\u03ff\u0300-\u036f]*)")
_SUPERSCRIPT = re.compile(r"\^([−-]?[A-Za-z0-9\u0370-\u03ff][A-Za-z0-9.\u0370-\u03ff]*)")
#: function names set upright, as TeX does for \cos
_OPERATORS = {name: "\\" + name + " " for name in ("sup", "inf", "min", "max", "arccos", "cos", "sin", "log", "exp",
                                                  "det")}
_OPERATORS.update({name: f"\\operatorname{{{name}}} " for name in ("tr", "argmin", "blockdiag", "sd")})
_OPERATOR = re.compile(r"(?<![A-Za-z\\])(" + "|".join(sorted(_OPERATORS, key=len, reverse=True)) + r")(?![A-Za-z])")


def _base(text: str) -> str:
    """``text`` without combining accents (τ̂ is one character)."""
    return re.sub("[\u0300-\u036f]", "", text)


def _balance(text: str) -> int:
    return text.count("{") - text.count("}")


def _symbolic(word: str) -> bool:
    """A word that reads as part of a formula: at most one Latin letter once function names are removed
    (``=``, ``−``, ``n``, ``(1/3)ⁿ``, ``cos(y)``), and not a code name."""
    if _CODE_NAME.search(word):
        return False
    return len(re.findall("[A-Za-z]", _OPERATOR.sub("", word))) <= 1


def _depth(words) -> int:
    text = " ".join(words)
    return sum(text.count(c) for c in "([") - sum(text.count(c) for c in ")]")


def _closing_tail(word: str, depth: int) -> bool:
    """Whether a symbolic word after a formula's last marked-up word still belongs to it (``≥ δ``, ``+ g²]``):
    no Latin letter unless it closes one of the formula's brackets (``g²]``), and no bracket it opens or closes
    beyond the formula's open ones (``(a`` does not belong)."""
    own = _depth([word])
    lettered = re.search("[A-Za-z]", _OPERATOR.sub("", word))
    return (not lettered or own < 0) and own <= 0 and depth + own >= 0


def _units(words):
    """``(text, kind)`` per word, kind "math" (with ``^``, ``_`` or ``\\``; joined with the next words until its
    braces balance), "symbolic" (:func:`_symbolic`) or "prose"."""
    units, i = [], 0
    while i < len(words):
        word = words[i]
        if _MATHY.search(_CODE_NAME.sub("", word)):
            j = i
            while _balance(" ".join(words[i:j + 1])) > 0 and j + 1 < len(words):
                j += 1
            if _balance(" ".join(words[i:j + 1])) == 0:
                units.append((" ".join(words[i:j + 1]), "math"))
                i = j + 1
                continue
        units.append((word, "symbolic" if _symbolic(word) else "prose"))
        i += 1
    return units


def math_spans(text: str) -> list[tuple[str, bool]]:
    """``text`` split into ``(piece, is_math)`` pieces (blanks normalized to single spaces).

    A formula is a run of words around at least one word with TeX markup: the symbolic words before it (up to a
    word ending a clause), the math and symbolic words after it up to its last marked-up word (not past a word ending a clause),
    then the letter-free words that close no bracket it did not open (:func:`_closing_tail`); clause punctuation
    at its end stays outside."""
    units = _units(str(text).split())
    pieces: list[tuple[str, bool]] = []
    i = 0
    while i < len(units):
        if units[i][1] != "math":
            pieces.append((units[i][0], False))
            i += 1
            continue
        start = i
        while (start > 0 and units[start - 1][1] == "symbolic" and pieces and not pieces[-1][1]
               and not units[start - 1][0].endswith(tuple(_TRAILING))):
            start -= 1
            pieces.pop()
        reach = i
        while not units[reach][0].endswith(tuple(_TRAILING)) and reach + 1 < len(units) \
                and units[reach + 1][1] != "prose":
            reach += 1
        end = max(k for k in range(i, reach + 1) if units[k][1] == "math")
        while end < reach and _closing_tail(units[end + 1][0], _depth(u for u, _ in units[start:end + 1])):
            end += 1
        span = " ".join(u for u, _ in units[start:end + 1])
        core = span.rstrip(_TRAILING)
        pieces.append((core, True))
        if core != span:
            pieces.append((span[len(core):], False))
        i = end + 1
    return pieces


def _wrap_parenthesized(piece: str) -> str:
    """``h^(−1/2)`` → ``h^{(−1/2)}``: TeX would raise the opening parenthesis alone."""
    out, k = [], 0
    while k < len(piece):
        out.append(piece[k])
        if piece[k] in "^_" and piece[k + 1:k + 2] == "(":
            depth, end = 0, k + 1
            for end in range(k + 1, len(piece)):
                depth += {"(": 1, ")": -1}.get(piece[end], 0)
                if depth == 0:
                    break
            if depth == 0:
                out.append("{" + piece[k + 1:end + 1] + "}")
                k = end
        k += 1
    return "".join(out)


def to_tex(piece: str) -> str:
    """A formula piece of a statement as TeX for MathJax (see the module docstring)."""
    piece = _wrap_parenthesized(piece)
    piece = _SUBSCRIPT.sub(lambda m: f"_{{{m.group(1)}}}" if len(_base(m.group(1))) > 1 else m.group(0), piece)
    piece = _SUPERSCRIPT.sub(r"^{\1}", piece)
    out, groups = [], []  # groups: for each open brace, whether it is TeX grouping (after ^ or _)
    for k, char in enumerate(piece):
        if char == "{":
            grouping = k > 0 and piece[k - 1] in "^_"
            groups.append(grouping)
            out.append("{" if grouping else r"\{")
        elif char == "}":
            out.append("}" if groups and groups.pop() else r"\}")
        elif char == "~":
            out.append(r"\sim ")
        elif char in "%#&$":
            out.append("\\" + char)
        else:
            out.append(char)
    return _OPERATOR.sub(lambda m: _OPERATORS[m.group(1)], "".join(out))


def _prose(word: str) -> str:
    """A word of prose: escaped, with code names as inline literals."""
    parts, last = [], 0
    for match in _CODE_NAME.finditer(word):
        before = rst_escape(word[last:match.start()])
        parts += [before + ("\\ " if before else ""), f"``{match.group(0)}``"]
        last = match.end()
    after = rst_escape(word[last:])
    parts.append(("\\ " if last and after else "") + after)  # an escaped blank: the literal may touch a "("
    return "".join(parts)


def statement_rst(text: str) -> str:
    """A claim statement as one line of reStructuredText, its formulas as ``:math:`` roles."""
    out = []
    for piece, is_math in math_spans(str(text)):
        if is_math:
            out.append(f":math:`{to_tex(piece)}`")
        elif out and piece[0] in _TRAILING and out[-1].endswith("`"):
            out[-1] += rst_escape(piece)  # punctuation right after a formula: no blank before it
        else:
            out.append(_prose(piece))
    return " ".join(out)
