"""docs/architecture.md's worked example adds a fifth paper — a simulator registered as an ``Experiment``, one
claim, one figure — through the package's own registries; this test runs those blocks and checks that each
registry saw the toy paper while it was registered and is left as it was (so the page cannot drift from the code)."""
from pathlib import Path

import pytest

from test_docs_examples import collect_examples
from transfertheory import claims, sim
from transfertheory.figures import catalog, registry

PAGE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
HEADING = "## Worked example: adding a fifth paper"


def _worked_example_blocks():
    start = PAGE.read_text(encoding="utf-8").splitlines().index(HEADING) + 1
    return [example for example in collect_examples(PAGE) if example.line > start and example.not_run is None]


def _registered():
    return set(sim.experiments()), set(claims.CLAIMS), set(catalog.figures())


@pytest.fixture
def restore_registries():
    before = _registered()
    yield before
    experiments, claim_ids, figures = _registered()
    for name in experiments - before[0]:
        sim.unregister_experiment(name)
    for claim_id in claim_ids - before[1]:
        claims.unregister(claim_id)
    for name in figures - before[2]:
        registry.unregister(name)


def test_the_worked_example_adds_a_paper_to_every_registry_and_removes_it(restore_registries, tmp_path,
                                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)
    *adding, run_and_remove = _worked_example_blocks()
    assert len(adding) == 3, "the page lost a step (theory + sim, claim, figure)"
    namespace = {}
    for example in adding:
        exec(compile(example.code, example.where, "exec"), namespace)
    experiments, claim_ids, figures = _registered()
    assert experiments - restore_registries[0] == {"toy_mean"}
    assert claim_ids - restore_registries[1] == {"toy.eq1"}
    assert figures - restore_registries[2] == {"toy_fig"}
    exec(compile(run_and_remove.code, run_and_remove.where, "exec"), namespace)
    assert _registered() == restore_registries


def test_unregistering_an_unknown_name_is_a_value_error():
    with pytest.raises(ValueError):
        sim.unregister_experiment("no_such_experiment")
    with pytest.raises(ValueError):
        claims.unregister("no.such.claim")
    with pytest.raises(ValueError, match="no figure named"):
        registry.unregister("no_such_figure")
