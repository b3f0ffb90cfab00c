"""Code lines of transfertheory/ (no docstrings, comments or blank lines) and where they came from.

``python code_lines.py deltas BASE > deltas.tsv`` (in the repository): every commit of BASE..HEAD with its change in
code lines against its first parent (a merge: its own change, i.e. its total change minus the changes of the commits
it brings in), so that the changes add up to HEAD's count minus BASE's.
``python code_lines.py tally deltas.tsv reader_a.tsv reader_b.tsv``: the changes summed by the label each reader gave
(a split commit by its split), and a strict tally in which every commit the readers disagree on, or that either
marked unsure, is charged to the lighter house.
"""
import ast, functools, io, subprocess, sys, tokenize
def git(*a): return subprocess.run(["git", *a], capture_output=True, text=True, check=True).stdout
@functools.lru_cache(maxsize=None)
def blob_sloc(sha):
    src = git("cat-file", "-p", sha)
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return None
    doc = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            b = node.body
            if b and isinstance(b[0], ast.Expr) and isinstance(b[0].value, ast.Constant) and isinstance(b[0].value.value, str):
                doc.update(range(b[0].lineno, b[0].end_lineno + 1))
    code = set()
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            continue
        code.update(range(tok.start[0], tok.end[0] + 1))
    return len(code - doc)
@functools.lru_cache(maxsize=None)
def total(commit):
    n = 0
    for line in git("ls-tree", "-r", commit, "--", "transfertheory").splitlines():
        meta, path = line.split("\t")
        if path.endswith(".py"):
            n += blob_sloc(meta.split()[2]) or 0
    return n


def deltas(base):
    rows = []
    for line in git("log", "--reverse", "--format=%H %P", f"{base}..HEAD").splitlines():
        c, *parents = line.split()
        d = total(c) - total(parents[0])
        if len(parents) > 1:  # the merge's own change: minus what the merged commits changed
            brought = git("log", "--format=%H %P", f"{parents[0]}..{parents[1]}").splitlines()
            d -= sum(total(x.split()[0]) - total(x.split()[1]) for x in brought)
        subject = git("log", "-1", "--format=%ad|%s", "--date=format:%m-%d %H:%M", c).strip()
        rows.append((c[:7], len(parents), d, subject))
    for r in rows:
        print(f"{r[0]}\t{r[1]}\t{r[2]}\t{r[3]}")
    print(f"# sum {sum(r[2] for r in rows)}; HEAD {total('HEAD')} - base {total(base)} = {total('HEAD') - total(base)}", file=sys.stderr)


def _reader(path):
    out = {}
    for line in open(path).read().splitlines()[1:]:
        commit, change, label, split, reason = line.split("\t")[:5]
        parts = {k: int(v) for k, v in (p.split(":") for p in split.split())}
        out[commit] = (parts, "unsure" in reason.lower())
    return out


def tally(deltas_path, *readers):
    import collections
    readers = [_reader(p) for p in readers]
    for path, reader in zip(sys.argv[3:], readers):
        sums = collections.Counter()
        for parts, _ in reader.values():
            sums.update(parts)
        print(path, dict(sums))
    strict = collections.Counter()
    for line in open(deltas_path):
        commit, _, change = line.split("\t")[:3]
        if int(change) == 0:
            continue
        views = [r[commit] for r in readers]
        agreed = all(v[0] == views[0][0] and not v[1] for v in views)
        strict.update(views[0][0] if agreed else {"lighter-house": int(change)})
    print("strict", dict(strict))


if __name__ == "__main__":
    deltas(sys.argv[2]) if sys.argv[1] == "deltas" else tally(*sys.argv[2:])
