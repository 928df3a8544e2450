from ctsne import ConditionalTSNE
from ctsne.datasets import make_synthetic
from ctsne.metrics import laplacian_score
from ctsne.plotting import plot_comparison, save_figure

data = make_synthetic(1000, random_state=0)
model = ConditionalTSNE(beta=0.01, random_state=0)
Y = model.fit_transform(data.X, data.f14)  # the prior is the second argument
tsne = model.tsne_counterpart()  # plain t-SNE from the same start, on t-SNE's P

for name, emb in (("t-SNE", tsne.embedding_), ("ct-SNE", Y)):
    print(f"{name}: Laplacian score of f14 {laplacian_score(emb, data.f14, k=30):.2f}, "
          f"of f56 {laplacian_score(emb, data.f56, k=30):.2f}")  # low = visible
fig = plot_comparison(tsne.embedding_, Y, {"f14": data.f14}, color=data.f14,
                      marker=data.f56, color_name="f14", marker_name="f56")
save_figure(fig, "synthetic.png", force=True)
