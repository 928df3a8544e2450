#!/usr/bin/env bash
# A table from the terminal: ct-SNE of the bundled UCI Adult sample with `ctsne`.
# Runs from scratch: `bash terminal.sh` writes everything into the current folder
# (or $CTSNE_DOCS_OUT). CTSNE_DOCS_N takes the first N of the 1,000 rows (for CI).
set -euo pipefail
cd "${CTSNE_DOCS_OUT:-.}"
N="${CTSNE_DOCS_N:-1000}"

# 1. The data: 1,000 rows of UCI Adult, the paper's six attributes; ctsne ships them.
SAMPLE=$(python -c "from importlib.resources import files; \
print(files('ctsne') / 'data' / 'adult_sample.csv')")
head -n "$((N + 1))" "$SAMPLE" > adult.csv
head -n 4 adult.csv

# 2. ct-SNE factoring out ethnicity and gender (their joint classes, as in the paper),
#    with plain t-SNE from the same start beside it (--compare). All six attributes are
#    features, the prior ones too (--include-prior, as in the paper); they are scaled
#    (--standardize); the text column income becomes a 0/1 feature.
ctsne embed adult.csv --prior ethnicity --prior gender --include-prior --standardize \
    -o adult_ctsne.csv --features "*" --keep income --seed 0 -q -f \
    --plot adult_compare.png --compare --color gender --marker ethnicity

# 3. The t-SNE itself, to score it beside the ct-SNE.
ctsne embed adult.csv --standardize --features "*" -o adult_tsne.csv \
    --keep ethnicity gender income --seed 0 -q -f

# 4. How visible is each label? Normalised Laplacian score (paper Eq. 7) for k = 10..50:
#    low means neighbours share the label.
ctsne score adult_tsne.csv adult_ctsne.csv --names t-SNE ct-SNE \
    --labels gender --labels ethnicity --labels income --k 10:50:10 \
    -o adult_scores.csv --plot adult_scores.png -f

# 5. What sets the clusters of the ct-SNE apart? Rank the features per k-means cluster.
ctsne rank adult.csv --embedding adult_ctsne.csv --cluster kmeans:5 --top 3 \
    -o adult_ranking.csv --plot adult_clusters.png -f
