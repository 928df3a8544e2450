"""The ``ctsne`` command: embed a table factoring out known labels, rank, score, demo.

Examples
--------
::

    ctsne embed data.csv --prior gender -o emb.csv --plot emb.png --marker ethnicity
    ctsne embed new.csv --prior gender --reference model.pkl -o new_emb.csv
    ctsne rank data.csv --embedding emb.csv --cluster kmeans:8 --cluster-id 3
    ctsne score tsne.csv emb.csv --labels gender --k 10:100:10 --plot scores.png
    ctsne score tsne.csv emb.csv --prior batch --complement cell_type
    ctsne demo -o ctsne-demo
    ctsne explore data.csv --prior gender --id name

Exit codes: 0 success; 2 a usage or data error (one line on stderr, nothing written);
130 interrupted (Ctrl-C). An embedding interrupted during the optimisation is still
written, marked partial, and the command exits with 130.

Only argparse and :mod:`ctsne.estimator.registry` are imported at start-up, so ``ctsne
--help`` is quick. Options with a library default are None unless set, and only those set
are passed on, so each default is written in the library alone (:mod:`.defaults`).
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings

from ...estimator.registry import METHODS

__all__ = ["build_parser", "main"]


class _LibraryDefaults(dict):
    """Help-text field -> the library's default, looked up on first use."""

    def __missing__(self, key: str):
        from .defaults import help_value

        value = help_value(key)
        self[key] = value
        return value


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors that point at --help, and help texts that state
    the library's defaults."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # argparse takes "-1e9" for an option (it knows only "-1" and "-1.5" as numbers),
        # so "--select-box -1e9 0 1 1" failed: scientific notation is a number too
        self._negative_number_matcher = re.compile(
            r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|nan)$")

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")

    def format_help(self) -> str:
        # A help text names a default as a field ("{perplexity:g}"), filled from the
        # library only when the help is shown: running a command imports no more than
        # argparse, and the value is written in the library alone.
        defaults = _LibraryDefaults()
        for action in self._actions:
            if action.help and "{" in action.help:
                action.help = action.help.format_map(defaults)
        return super().format_help()


def _thread_count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} threads: give 1 or more (leave --threads "
                                         "out to use every core)")
    return value


def _threads(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=_thread_count, metavar="N",
                   help="threads for the optimisation (default: all cores; 1 is faster on a "
                   "machine busy with other work)")


def _common(p: argparse.ArgumentParser, quiet: str) -> None:
    p.add_argument("-f", "--force", action="store_true", help="overwrite existing outputs")
    p.add_argument("-q", "--quiet", action="store_true",
                   help=f"{quiet} (warnings are still shown)")


def _data_options(p: argparse.ArgumentParser, features: bool = True) -> None:
    g = p.add_argument_group("reading the input")
    g.add_argument("--id", metavar="COL", help="column holding row ids (default: row numbers, "
                   "or an unnamed first column, or an AnnData's obs names)")
    g.add_argument("--obsm", metavar="KEY", help=".h5ad: features from obsm[KEY] (e.g. X_pca); "
                   "default scanpy's rule: .X up to 50 variables, else obsm['X_pca']")
    g.add_argument("--layer", metavar="NAME", help=".h5ad: features from layers[NAME]")
    g.add_argument("--sep", metavar="CHAR", help="field separator of text tables (default: "
                   "tab for .tsv; for .csv detected among , ; and tab)")
    if not features:
        return
    # one rule for every command: ctsne.interfaces.files.columns
    g.add_argument("--features", "--columns", dest="columns", nargs="+", metavar="COL",
                   help="the feature columns (names, or patterns like 'x*' matching the "
                   "columns that are no id, prior, --exclude or --labels column; text ones "
                   "are one-hot encoded); default: every numeric column (whole numbers, 0/1, "
                   "counts and scores too) but the id and prior ones; text columns are "
                   "labels. A note on stderr says which are which")
    g.add_argument("--labels", dest="label_columns", nargs="+", metavar="COL", default=[],
                   help="numeric columns that are labels, not features (a digit, a cluster "
                   "id)")
    g.add_argument("--exclude", nargs="+", metavar="COL", default=[],
                   help="columns that are neither features nor labels")
    g.add_argument("--categorical", choices=("onehot", "error"), default="onehot",
                   help="text columns named with --features: one 0/1 column per value, or "
                   "an error (default: onehot)")
    g.add_argument("--drop-missing", action="store_true", help="drop rows with missing "
                   "values (default: missing feature values are an error)")


def _names(names: list[str], last: str = "or") -> str:
    """``a, b or c`` (``last``: the word before the last name)."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ctsne`` command."""
    parser = _Parser(prog="ctsne", description="Conditional t-SNE: embeddings that factor "
                     "out known labels (priors).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("--traceback", action="store_true", help="show the full traceback "
                        "of errors (for reporting bugs)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("embed", help="embed a table, factoring out prior columns",
                       description="Embed INPUT with ct-SNE, factoring out the --prior "
                       "columns (none: plain t-SNE). Formats by extension: .csv .tsv "
                       "(.gz) .parquet .npy .npz .h5ad.")
    p.add_argument("input", metavar="INPUT", help="the data: one row per point, feature "
                   "columns (the numeric ones unless --features names them) and label "
                   "columns (text, --labels)")
    p.add_argument("-o", "--output", required=True, metavar="OUTPUT",
                   help="embedding file: .csv/.tsv/.parquet (id, ctsne1, ctsne2, labels; "
                   "the same columns for every --algorithm), .npz (embedding, ids, labels), "
                   ".npy (embedding only) or .h5ad (the map in obsm and its parameters in "
                   f"uns, under {_names([m.obsm_key for m in METHODS])} by --algorithm, "
                   f"the keys of {_names([f'ctsne.tl.{m.tool}' for m in METHODS], 'and')}; "
                   "an earlier map under the same key is replaced with its record)")
    p.add_argument("--prior", action="append", default=[], metavar="COL",
                   help="label column to factor out (repeat for several)")
    p.add_argument("--combine", choices=("joint", "product"),
                   help="several priors as joint classes or independent factors "
                   "(default {combine})")
    w = p.add_mutually_exclusive_group()
    w.add_argument("--beta", type=float, help="β': weight of pairs in different prior "
                   "classes (default {beta:g}; > 1 strengthens the prior)")
    w.add_argument("--alpha", type=float, help="α': weight of pairs in the same class")
    from ...affinities.options import AFFINITIES  # plain Python: start-up stays quick

    p.add_argument("--affinities", choices=AFFINITIES,
                   help="input affinities: 'balanced' draws each point's "
                   "neighbours from its own and the other prior classes separately, "
                   "'revised' is revised ct-SNE; 'auto' (default) switches to balanced when "
                   "the prior separates the data")
    p.add_argument("--conditioning", choices=("auto", "classes", "states"),
                   help="how the prior is removed: 'states' only between points of a state "
                   "(a cell type, a cluster) that both classes hold, so a type one batch "
                   "holds alone stays apart; 'classes' between every pair of classes (the "
                   "paper's ct-SNE); 'auto' (default) uses states where the prior's classes "
                   "share some states and not others (a confounded batch)")
    p.add_argument("--within-weight", type=float, metavar="W", help="balanced (and auto "
                   "where it balances): own-class share of each point's affinities (default: "
                   "chosen per class from the data; the affinities line on stderr says what, "
                   "unless -q); revised: α, the factor on within-class affinities (default "
                   "{within_revised:g})")
    p.add_argument("--include-prior", action="store_true",
                   help="keep the prior columns among the features")
    p.add_argument("--meta", metavar="FILE", help="table of extra label columns with the "
                   "same rows as INPUT (e.g. for .npy input)")
    p.add_argument("--keep", nargs="+", default=[], metavar="COL",
                   help="extra columns to copy to the output")
    p.add_argument("--standardize", action="store_true", help="scale features to zero mean, "
                   "unit variance (constant columns are dropped)")
    p.add_argument("--perplexity", type=float, help="effective number of neighbours each "
                   "point keeps (default {perplexity:g}; 5-50 is usual, below the number of "
                   "points)")
    p.add_argument("--dims", type=int, help="output dimensions (default {n_components})")
    p.add_argument("--method", choices=("auto", "exact", "bh", "fft"),
                   help="repulsion engine: exact O(n²), Barnes-Hut, FFT interpolation, or "
                   "auto: chosen by size (default)")
    p.add_argument("--backend", choices=("numba", "torch"),
                   help="engine of the fit, for every --algorithm: numba on the CPU "
                   "(default), or torch: the neighbours, the graph and the optimisation on a "
                   "PyTorch device (pip install torch)")
    p.add_argument("--device", metavar="DEVICE", help="with --backend torch: cpu, cuda or "
                   "cuda:N (default: CUDA where torch sees one, else the CPU)")
    p.add_argument("--n-iter", type=int, help="iterations after early "
                   "exaggeration (with --resume: further iterations)")
    p.add_argument("--exaggeration-iter", type=int, metavar="N", help="iterations of early "
                   "exaggeration, which forms the clusters first (default "
                   "{early_exaggeration_iter})")
    p.add_argument("--exaggeration", type=float, metavar="E", help="attraction factor after "
                   "early exaggeration (default {exaggeration:g}; 2-4 gives tighter, "
                   "UMAP-like clusters)")
    g = p.add_argument_group("UMAP and LargeVis (--algorithm umap | largevis)")
    titles = [m.title + (" (default)" if i == 0 else "") for i, m in enumerate(METHODS)]
    g.add_argument("--algorithm", choices=[m.key for m in METHODS], default=METHODS[0].key,
                   help=f"the map: {_names(titles)}, each with the prior factored out the "
                   "same way (its repulsion re-weighted by class)")
    g.add_argument("--n-neighbors", type=int, metavar="K", help="umap: neighbours of each "
                   "point, itself included (default {umap_n_neighbors})")
    g.add_argument("--min-dist", type=float, metavar="D", help="umap: how tightly points "
                   "pack (default {umap_min_dist:g})")
    g.add_argument("--n-epochs", type=int, metavar="N", help="umap, largevis: SGD epochs "
                   "(default: 500 up to 10,000 points, 200 above)")
    p.add_argument("--seed", type=int, help="random seed (for reproducible output)")
    _threads(p)
    p.add_argument("--save-model", metavar="FILE", help="pickle the fitted model, of any "
                   "--algorithm (place new rows with --reference, open it with explore "
                   "--model; a t-SNE one continues with --resume, or "
                   "pickle.load(...).optimize(n_iter))")
    p.add_argument("--resume", metavar="MODEL", help="continue optimising a t-SNE model saved "
                   "with --save-model on the same INPUT (checked); --prior, --beta/--alpha "
                   "and --method may change, the affinities are kept (a UMAP or LargeVis run "
                   "has ended its schedule and is not resumed; only load files you trust)")
    p.add_argument("--reference", metavar="MODEL", help="place INPUT's rows into the map of "
                   "a model saved with --save-model, without moving it (--prior: the new rows' "
                   "labels in the model's prior columns; the fitting options are ignored)")
    p.add_argument("--with-reference", action="store_true", help="with --reference: also "
                   "write the map's own points (column 'set': reference / new)")
    p.add_argument("--plot", metavar="IMAGE", help="also draw the embedding (.png .svg .pdf)")
    p.add_argument("--color", metavar="COL", help="colour the plot by COL (default: the "
                   "first prior)")
    p.add_argument("--marker", metavar="COL", help="marker shape by COL (at most 10 values; "
                   "checked before the embedding starts)")
    p.add_argument("--compare", action="store_true", help="with --plot and --prior: draw "
                   "plain t-SNE (same affinities, same start) beside the ct-SNE, with the "
                   "Laplacian score of each prior in the titles (about doubles the time)")
    _common(p, "no progress bars or notes")
    _data_options(p)
    p.set_defaults(func="embed")

    p = sub.add_parser("rank", help="rank the features that set a selection apart",
                       description="Rank features of INPUT by how well they separate a "
                       "selection of points of the embedding from the rest (paper §3.1).")
    p.add_argument("input", metavar="INPUT", help="the data that was embedded")
    p.add_argument("--embedding", required=True, metavar="EMB", help="output of ctsne embed")
    s = p.add_mutually_exclusive_group(required=True)
    s.add_argument("--select-box", nargs=4, type=float, metavar=("X0", "Y0", "X1", "Y1"),
                   help="select the points in this rectangle of the embedding")
    s.add_argument("--select-ids", metavar="FILE", help="select these ids (one per line)")
    s.add_argument("--cluster", metavar="SPEC", help="cluster the embedding: kmeans[:K] "
                   "(default K 8), dbscan:EPS[:MIN_SAMPLES] or hdbscan[:MIN_SIZE]; ranks "
                   "--cluster-id, or every cluster")
    p.add_argument("--cluster-id", type=int, metavar="ID", help="the cluster to rank")
    p.add_argument("--compare", metavar="EMB2", help="with --plot: draw the selection in "
                   "this embedding of the same points too (e.g. the t-SNE)")
    p.add_argument("--coords", nargs="+", metavar="COL", help="coordinate columns of EMB "
                   "(default ctsne1, ctsne2, …; of an .h5ad: the obsm key, default the one "
                   f"of {', '.join(m.obsm_key for m in METHODS)} it holds)")
    p.add_argument("--top", type=int, default=10, help="features to print (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed for k-means and the CV folds")
    p.add_argument("-o", "--output", metavar="TABLE", help="write the ranking (.csv .tsv "
                   ".parquet)")
    p.add_argument("--plot", metavar="IMAGE", help="draw the embedding with the selection")
    _common(p, "no notes")
    _data_options(p)
    p.set_defaults(func="rank")

    p = sub.add_parser("score", help="Laplacian score curves of labels in embeddings",
                       description="Normalised Laplacian score (paper Eq. 7) of each label "
                       "in each embedding, for several k: low means neighbours share the "
                       "label (it is visible), near the random level means it is not. "
                       "With --prior / --complement: how well the prior's classes mix "
                       "(kNN homogeneity, iLISI) and whether the complementary label stays "
                       "visible across them (homogeneity, cLISI, cross-class agreement).")
    p.add_argument("embeddings", nargs="+", metavar="EMB", help="embedding files written by "
                   "ctsne embed (or any table with ctsne1, ctsne2, … or --coords columns), "
                   "compared with each other")
    p.add_argument("--labels", action="append", default=[], metavar="COL",
                   help="label column (of EMB, or of --data); repeat for several")
    p.add_argument("--prior", action="append", default=[], metavar="COL",
                   help="a factored-out label: its kNN homogeneity and iLISI (median LISI; "
                   "1 unmixed, the number of classes perfectly mixed); repeat for several")
    p.add_argument("--complement", action="append", default=[], metavar="COL",
                   help="a label the embedding should keep: its kNN homogeneity, cLISI "
                   "(1 pure) and, with --prior, cross-class neighbour agreement")
    p.add_argument("--knn", type=int, default=10, metavar="K", help="neighbours for the "
                   "homogeneity and cross-class agreement of --prior/--complement "
                   "(default 10)")
    p.add_argument("--lisi-perplexity", type=float, default=30.0, metavar="P",
                   help="perplexity of the LISI kernel (default 30; 3P neighbours)")
    p.add_argument("--scib", action="store_true", help="print the scIB-style table of each "
                   "--prior as the batch (with the first --complement as the label, if "
                   "any): batch kNN mixing, iLISI, batch ASW, within-batch 15-NN "
                   "preservation of the --data features, label homogeneity, cLISI, label "
                   "ASW, the batch and bio axes and 0.4·batch + 0.6·bio")
    p.add_argument("--standardize", action="store_true", help="with --scib: scale the "
                   "--data features as ctsne embed --standardize does before comparing "
                   "neighbourhoods")
    p.add_argument("--k", default="10:100:10", metavar="SPEC", help="neighbourhood sizes: "
                   "START:STOP:STEP (inclusive), a list 10,30,50, or one number "
                   "(default 10:100:10)")
    p.add_argument("--data", metavar="INPUT", help="take labels from this table, matched "
                   "by id (with --id)")
    p.add_argument("--names", nargs="+", metavar="NAME", help="names of the embeddings "
                   "(default: file names)")
    p.add_argument("--coords", nargs="+", metavar="COL", help="coordinate columns of EMB "
                   "(of an .h5ad: the obsm key)")
    p.add_argument("-o", "--output", metavar="TABLE", help="write the scores (.csv .tsv "
                   ".parquet): label, embedding, k, score; with --prior/--complement also "
                   "metric and random (the value for random labels)")
    p.add_argument("--plot", metavar="IMAGE", help="draw the Laplacian score curves")
    _common(p, "no notes")
    _data_options(p, features=False)
    p.set_defaults(func="score")

    p = sub.add_parser("explore", help="the iterative analysis as a local web page",
                       description="Serve a page (127.0.0.1, with a random token in the URL) "
                       "on which to look at the map, select points, rank the features that "
                       "set them apart and factor them out with ct-SNE, step by step (paper "
                       "§3.1). Needs pip install \"ctsne[explore]\".")
    p.add_argument("input", metavar="INPUT", help="any table ctsne embed reads")
    p.add_argument("--prior", action="append", default=[], metavar="COL",
                   help="label column factored out of the first map (repeat for several)")
    p.add_argument("--beta", type=float, help="β' of the first map's prior "
                   "(default {beta:g})")
    p.add_argument("--embedding", metavar="FILE", help="the first map, precomputed (e.g. by "
                   "ctsne embed), instead of fitting it")
    p.add_argument("--model", metavar="MODEL", help="the first map from a model saved by "
                   "ctsne embed --save-model (any --algorithm; its prior and method too), "
                   "instead of fitting it (only load files you trust)")
    p.add_argument("--session", metavar="FILE", help="reopen a session saved from the page "
                   "(same INPUT and options)")
    p.add_argument("--out", default="ctsne-explore", metavar="DIR",
                   help="folder for the page's exports (default ctsne-explore)")
    p.add_argument("--port", type=int, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--no-browser", action="store_true", help="print the URL only")
    p.add_argument("--backend", choices=("auto", "webgl", "canvas"), default="auto",
                   help="draw the maps with WebGL (fast with a GPU) or the 2-D canvas "
                   "(faster where WebGL runs in software); auto (default): WebGL where the "
                   "browser has a hardware WebGL renderer, else the canvas; the page has a "
                   "switch")
    p.add_argument("--engine", choices=("numba", "torch"),
                   help="the t-SNE maps' engine: numba on the CPU (default) or torch on a "
                   "PyTorch device (pip install torch); --backend is how the page draws")
    p.add_argument("--device", metavar="DEVICE", help="with --engine torch: cpu, cuda or "
                   "cuda:N (default: CUDA where torch sees one, else the CPU)")
    titles = [m.conditional_title + (" (default; with --model the model's)" if i == 0
                                     else "") for i, m in enumerate(METHODS)]
    p.add_argument("--algorithm", choices=[m.key for m in METHODS],
                   help="method of the first map and the page's default for the next: "
                   f"{_names(titles)}; the page can change it at every step")
    p.add_argument("--max-points", type=int, default=200_000, metavar="N",
                   help="draw a random subsample of N points above N (selections still "
                   "take every point; default 200000)")
    p.add_argument("--standardize", action="store_true", help="scale features to zero mean, "
                   "unit variance")
    p.add_argument("--perplexity", type=float, help="effective number of neighbours of each "
                   "map's points (default {perplexity:g})")
    p.add_argument("--n-iter", type=int, metavar="N", help="iterations of each map after "
                   "early exaggeration (default {n_iter})")
    p.add_argument("--exaggeration-iter", type=int, metavar="N", help="iterations of early "
                   "exaggeration of each map (default {early_exaggeration_iter})")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    _threads(p)
    _data_options(p)
    p.set_defaults(func="explore")

    p = sub.add_parser("demo", help="the paper's synthetic example, end to end",
                       description="t-SNE and ct-SNE (prior f14) of the paper's synthetic "
                       "data; writes data, embeddings and figures to DIR and prints how "
                       "visible each label is.")
    p.add_argument("-o", "--output-dir", default="ctsne-demo", metavar="DIR",
                   help="folder for the data, embeddings and figures (default ctsne-demo)")
    p.add_argument("--n", type=int, default=1000, help="points (default 1000)")
    p.add_argument("--beta", type=float, help="β' of the ct-SNE map: weight of pairs in "
                   "different f14 classes (default {beta:g})")
    p.add_argument("--n-iter", type=int, metavar="N", help="iterations after early "
                   "exaggeration (default {n_iter})")
    p.add_argument("--exaggeration-iter", type=int, metavar="N",
                   help="iterations of early exaggeration (default {early_exaggeration_iter})")
    p.add_argument("--seed", type=int, default=0, help="random seed of the data and the maps "
                   "(default 0)")
    _threads(p)
    _common(p, "no progress bars")
    p.set_defaults(func="demo")
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ctsne")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


# ----------------------------------------------------------------------------- main
def _command(name: str):
    """The body of subcommand ``name``, imported only when it runs."""
    if name == "embed":
        from .embed import embed as body
    elif name == "rank":
        from .rank import rank as body
    elif name == "score":
        from .score import score as body
    elif name == "demo":
        from .demo import demo as body
    else:  # explore: its body lives with the page, in ctsne.interfaces.explorer
        from ..explorer.command import run as body
    return body


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _guarded(args: argparse.Namespace) -> int:
    """Run the command; a Ctrl-C aborts it undoing its files (:mod:`.interrupt`).

    ``explore`` serves until Ctrl-C stops it, keeping what it saved on the way: it runs
    unguarded. ``embed`` guards its fit itself (a first Ctrl-C there stops and keeps).
    """
    body = _command(args.func)
    if args.func == "explore":
        return body(args)
    from ..._output import track_outputs
    from .interrupt import CtrlC

    ctrl_c = CtrlC()
    with ctrl_c.installed(), track_outputs():
        code = body(args)
        ctrl_c.commit()
        return code


def main(argv: list[str] | None = None) -> int:
    """Run the ``ctsne`` command; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors: keep main() callable
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    from .shared import cli_wording  # plain Python: start-up stays quick

    shown = warnings.showwarning
    # library warnings as one line each, without source lines, naming the options
    warnings.showwarning = lambda msg, cat, *a, **k: print(
        f"ctsne: warning: {cli_wording(str(msg))}", file=sys.stderr)
    try:
        return _guarded(args)
    except KeyboardInterrupt:
        print("\nctsne: interrupted; no partial files were left", file=sys.stderr)
        return 130
    except SystemError as exc:
        # Ctrl-C while a numba kernel ran arrives wrapped in a SystemError
        if not isinstance(exc.__context__ or exc.__cause__, KeyboardInterrupt):
            raise
        print("\nctsne: interrupted; no partial files were left", file=sys.stderr)
        return 130
    except (ValueError, TypeError, OSError, ImportError) as exc:
        # user mistakes (bad files, columns, parameters) arrive as these: one line, code 2
        if args.traceback:
            raise
        # the library's messages name its parameters; the user here set options
        print(f"ctsne {args.command}: error: {cli_wording(_one_line(exc))}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"ctsne {args.command}: error: out of memory; use fewer points or features",
              file=sys.stderr)
        return 1
    finally:
        warnings.showwarning = shown


if __name__ == "__main__":
    raise SystemExit(main())
