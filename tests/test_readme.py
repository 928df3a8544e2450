"""Every Python example of the README runs, on small data where it names none."""

import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def _names() -> dict:
    """What the examples take as given: X, labels, a table of them, and the imports of
    the README's first example (a reader goes on in the same session)."""
    pd = pytest.importorskip("pandas")
    import ctsne
    from ctsne import ConditionalTSNE

    rng = np.random.default_rng(0)
    batch = np.repeat(["a", "b"], 100)
    donor = np.tile(["d1", "d2", "d3", "d4"], 50)
    X = rng.normal(size=(200, 5)) + 3.0 * (batch == "b")[:, None]
    df = pd.DataFrame({"batch": batch, "donor": donor, "gender": batch,
                       "age": rng.normal(size=200)})
    return {"X": X, "prior": batch, "batch": batch, "donor": donor, "df": df,
            "ctsne": ctsne, "ConditionalTSNE": ConditionalTSNE}


def test_the_readme_has_examples():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_a_readme_example_runs(number, capsys):
    code = BLOCKS[number]
    if "scanpy" in code:
        pytest.importorskip("scanpy")
    if "explore(" in code:
        pytest.importorskip("bokeh")
    names = _names()
    exec(compile(code, f"README block {number + 1}", "exec"), names)
    if "handle" in names:  # the explorer's server: it answered, then stops
        handle = names["handle"]
        assert handle.url.startswith("http://")
        handle.stop()
    for value in names.values():  # every map an example made is finite
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            assert np.all(np.isfinite(value))
