"""Figures: panels, legends, shared colours, selections, large n, file formats."""

import numpy as np
import pytest

from ctsne.interfaces.files import formats
from ctsne.plotting import figures as plotting
from ctsne.plotting import plot_scores

pytest.importorskip("matplotlib")


def legend_texts(ax) -> list[str]:
    """Texts of every legend on an Axes (several legends: one per label)."""
    from matplotlib.legend import Legend

    legends = [a for a in ax.artists if isinstance(a, Legend)]
    if ax.get_legend() is not None:
        legends.append(ax.get_legend())
    return [t.get_text() for leg in legends for t in leg.get_texts()]


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    n = 300
    return {"Y": rng.normal(size=(n, 2)), "Y2": rng.normal(size=(n, 2)),
            "color": rng.integers(0, 5, n), "marker": np.array(["a", "b", "c"])[
                rng.integers(0, 3, n)]}


def test_colour_and_marker_legends(data):
    ax = plotting.plot_embedding(data["Y"], data["color"], data["marker"], color_name="c",
                                 marker_name="m")
    assert legend_texts(ax) == ["0", "1", "2", "3", "4", "a", "b", "c"]
    # one scatter per marker shape, every point drawn once
    assert len(ax.collections) == 3
    assert sum(len(c.get_offsets()) for c in ax.collections) == 300


def test_missing_labels_get_a_legend_entry():
    lab = np.array(["x", None, "y", "x"] * 10, dtype=object)
    ax = plotting.plot_embedding(np.random.default_rng(1).normal(size=(40, 2)), lab)
    assert legend_texts(ax) == ["x", "y", "missing"]


def test_side_by_side_shares_colours(data):
    fig = plotting.plot_embeddings({"t-SNE": data["Y"], "ct-SNE": data["Y2"]}, data["color"],
                                   data["marker"])
    assert len(fig.axes) == 2
    assert [ax.get_title() for ax in fig.axes] == ["t-SNE", "ct-SNE"]
    # the same point has the same colour in both panels
    for c0, c1 in zip(fig.axes[0].collections, fig.axes[1].collections, strict=True):
        np.testing.assert_array_equal(c0.get_facecolors(), c1.get_facecolors())
    # one legend for the figure, on the right panel
    assert legend_texts(fig.axes[0]) == []
    assert len(legend_texts(fig.axes[1])) == 5 + 3


def test_selection_highlighted_in_both_panels(data):
    sel = {"horses": data["Y2"][:, 0] > 1, "india": data["Y2"][:, 1] > 1.5}
    fig = plotting.plot_embeddings([data["Y"], data["Y2"]], data["color"], highlight=sel)
    for ax in fig.axes:
        drawn = [len(c.get_offsets()) for c in ax.collections]
        assert drawn == [300, int(sel["horses"].sum()), int(sel["india"].sum())]
    assert legend_texts(fig.axes[1])[-2:] == ["horses", "india"]


def test_highlight_by_indices(data):
    ax = plotting.plot_embedding(data["Y"], highlight=np.array([3, 7, 11]))
    assert len(ax.collections[-1].get_offsets()) == 3


def test_continuous_colour_gets_a_colour_bar(data):
    fig = plotting.plot_embeddings([data["Y"], data["Y2"]], color=data["Y"][:, 0])
    assert len(fig.axes) == 3  # two panels and the colour bar
    assert legend_texts(fig.axes[1]) == []


def test_too_many_marker_shapes(data):
    with pytest.raises(ValueError, match="at most 10"):
        plotting.plot_embedding(data["Y"], marker=np.arange(300) % 12)


def test_large_n_is_rasterized_and_shaded(monkeypatch):
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(plotting.RASTERIZE_ABOVE + 1, 2))
    ax = plotting.plot_embedding(Y, rng.integers(0, 3, len(Y)))
    assert all(c.get_rasterized() for c in ax.collections)
    small = plotting.plot_embedding(Y[:300])
    assert ax.collections[0].get_sizes()[0] < small.collections[0].get_sizes()[0] / 3
    assert not small.collections[0].get_rasterized()
    monkeypatch.setattr(plotting, "DENSITY_ABOVE", 1000)
    ax = plotting.plot_embedding(Y, rng.integers(0, 3, len(Y)))
    assert len(ax.images) == 1 and not ax.collections


def test_a_million_points(tmp_path):
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(1_000_000, 2))
    ax = plotting.plot_embedding(Y, rng.integers(0, 4, len(Y)), color_name="g")
    path = plotting.save_figure(ax.figure, tmp_path / "big.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size < 2_000_000
    img = ax.images[0].get_array()
    assert img.shape[2] == 4 and np.count_nonzero(img[:, :, 3]) > 10_000


@pytest.mark.parametrize("ext, magic", [("png", b"\x89PNG"), ("svg", b"<?xml"),
                                        ("pdf", b"%PDF")])
def test_file_formats(tmp_path, data, ext, magic):
    fig = plotting.plot_embeddings([data["Y"], data["Y2"]], data["color"])
    path = plotting.save_figure(fig, tmp_path / f"f.{ext}")
    head = path.read_bytes()[:200]
    assert head.startswith(magic)
    if ext == "svg":
        assert b"<svg" in path.read_bytes()


def test_save_refuses_unknown_type_and_overwrite(tmp_path, data):
    ax = plotting.plot_embedding(data["Y"])
    with pytest.raises(formats.DataError, match=r"\.png, \.svg or \.pdf"):
        plotting.save_figure(ax.figure, tmp_path / "f.gif")
    plotting.save_figure(ax.figure, tmp_path / "f.png")
    with pytest.raises(formats.DataError, match="exists"):
        plotting.save_figure(ax.figure, tmp_path / "f.png")
    plotting.save_figure(ax.figure, tmp_path / "f.png", force=True)


def test_score_curves():
    ks = [10, 20, 30]
    scores = {"f14": {"t-SNE": [0.1, 0.2, 0.3], "ct-SNE": [0.7, 0.7, 0.8]},
              "f56": {"t-SNE": [0.5, 0.5, 0.6], "ct-SNE": [0.2, 0.3, 0.3]}}
    fig = plot_scores(ks, scores, chance={"f14": 0.8, "f56": 0.75})
    assert len(fig.axes) == 2
    assert [len(ax.lines) for ax in fig.axes] == [3, 3]  # two curves and the random level
    assert legend_texts(fig.axes[1]) == ["t-SNE", "ct-SNE", "random labels"]


def test_pyplot_figures_when_pyplot_is_in_use(data):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = plotting.plot_embedding(data["Y"])
    assert ax.figure.number in plt.get_fignums()
    plt.close(ax.figure)


def _bar_and_legends(fig):
    """Window extents (after drawing) of the colour bar, with its label, and the legends."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.legend import Legend

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    legends = [a for ax in fig.axes for a in [*ax.artists, ax.get_legend()]
               if isinstance(a, Legend)]
    return ([b.get_tightbbox(renderer) for b in bars],
            [leg.get_window_extent(renderer) for leg in legends])


@pytest.mark.parametrize("panels", [1, 2])
def test_marker_legend_clear_of_the_colour_bar(data, panels):
    """A colour scale with a marker label (``--color x0 --marker g``): nothing overlaps."""
    if panels == 1:
        fig = plotting.plot_embedding(data["Y"], data["Y"][:, 0], data["marker"],
                                      color_name="x0", marker_name="g").figure
    else:
        fig = plotting.plot_embeddings([data["Y"], data["Y2"]], data["Y"][:, 0],
                                       data["marker"], color_name="x0", marker_name="g")
    bars, legends = _bar_and_legends(fig)
    assert len(bars) == 1 and len(legends) == 1
    assert bars[0].width > 0 and legends[0].width > 0
    assert not bars[0].overlaps(legends[0]), (bars[0], legends[0])
    # nor does either sit on a panel
    for ax in fig.axes[:panels]:
        assert not ax.get_window_extent().overlaps(legends[0])
        assert not ax.get_window_extent().overlaps(bars[0])


def _laplacian_reference(Y, labels, k):
    """The normalised Laplacian score from its definition, with a dense O(n²) kNN graph."""
    n = len(Y)
    d = ((Y[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    A = np.zeros((n, n))
    A[np.arange(n)[:, None], np.argsort(d, axis=1, kind="stable")[:, :k]] = 1.0
    W = (A + A.T) / 2
    score = 0.0
    for lab in set(labels.tolist()):
        f = (labels == lab).astype(float)
        cut = f @ (np.diag(W.sum(1)) - W) @ f
        score += f.sum() / n * cut / (f @ W.sum(1))
    return score


def test_comparison_titles_give_each_priors_score():
    rng = np.random.default_rng(4)
    n = 120
    batch = np.array(["b1", "b2", "b3"])[rng.integers(0, 3, n)]
    donor = rng.integers(0, 2, n)
    # t-SNE: one blob per batch (batch visible, score 0); ct-SNE: batches mixed
    centres = {"b1": (0, 0), "b2": (40, 0), "b3": (0, 40)}
    tsne = np.array([centres[b] for b in batch]) + rng.normal(size=(n, 2))
    ctsne = rng.normal(size=(n, 2))
    fig = plotting.plot_comparison(tsne, ctsne, {"batch": batch, "donor": donor},
                                   color=batch, marker=donor, k=10, color_name="batch")
    titles = [ax.get_title() for ax in fig.axes]
    assert len(titles) == 2
    assert titles[0].splitlines()[0] == "t-SNE"
    assert titles[1].splitlines()[0] == "ct-SNE (prior batch & donor)"
    for title, Y in zip(titles, (tsne, ctsne), strict=True):
        want = ", ".join(f"{name} {_laplacian_reference(Y, lab, 10):.3f}"
                         for name, lab in (("batch", batch), ("donor", donor)))
        assert title.splitlines()[1] == f"Laplacian score 10-NN: {want}"
    assert titles[0].splitlines()[1].startswith("Laplacian score 10-NN: batch 0.000")
    # the same label has the same colour in both panels
    for c0, c1 in zip(fig.axes[0].collections, fig.axes[1].collections, strict=True):
        np.testing.assert_array_equal(c0.get_facecolors(), c1.get_facecolors())


def test_saved_figure_holds_every_legend(tmp_path):
    """Long labels in the first of two legends are not cut off by ``bbox_inches="tight"``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    rng = np.random.default_rng(2)
    names = np.array(["CD4+/CD45RA+/CD25- Naive T", "CD14+ Monocyte", "Dendritic"])
    lab = names[rng.integers(0, 3, 200)]
    fig = plotting.plot_embeddings([rng.normal(size=(200, 2))] * 2, lab, lab == "Dendritic",
                                   color_name="cell type", marker_name="m")
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    tight = fig.get_tightbbox(renderer)  # what savefig(bbox_inches="tight") keeps, in inches
    ax = fig.axes[1]
    legends = [a for a in [*ax.artists, ax.get_legend()] if a is not None]
    assert len(legends) == 2
    for leg in legends:
        box = leg.get_window_extent(renderer).transformed(fig.dpi_scale_trans.inverted())
        assert box.x1 <= tight.x1 + 1e-6 and box.y0 >= tight.y0 - 1e-6, (box, tight)


def test_a_legend_on_a_given_axes_stays_off_the_neighbouring_panel():
    """Issue 59, item 9: with ``ax=`` one of several panels, the legend went to the right
    of the axes, over the next panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ctsne.plotting import plot_embedding

    rng = np.random.default_rng(0)
    Y = rng.normal(size=(300, 2))
    labels = np.array(["T cells", "B cells", "monocytes"])[rng.integers(0, 3, 300)]
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 4))
    plot_embedding(Y, labels, ax=left)
    plot_embedding(Y, labels, ax=right)
    fig.canvas.draw()
    box = left.get_legend().get_window_extent()
    assert box.x1 <= left.get_window_extent().x1 + 1
    assert box.x1 < right.get_window_extent().x0
    plt.close(fig)
    # a figure of its own keeps its legend to the right of the map
    ax = plot_embedding(Y, labels)
    ax.figure.canvas.draw()
    assert ax.get_legend().get_window_extent().x0 > ax.get_window_extent().x1
    plt.close(ax.figure)
