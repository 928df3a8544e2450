"""The package's layout rules (ARCHITECTURE.md), checked on the source.

- every module imports;
- a stage imports only earlier stages (``STAGES``);
- no import cycles, counting imports inside functions, ``TYPE_CHECKING`` blocks, modules
  named by string for ``importlib`` and the root package's lazy ``_LAZY`` map: a cycle
  that only lazy imports close still ties the stages together and breaks as soon as one of
  them is made eager;
- internal modules import from the module that defines a name, never through the package
  root (whose ``__getattr__`` would import the public API on the way);
- few public modules at the top, no oversized module;
- ``import ctsne`` alone stays cheap (no numba, scikit-learn or scipy).
"""

import ast
import importlib
import pkgutil
import subprocess
import sys
import traceback
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import ctsne

ROOT = "ctsne"
SRC = Path(ctsne.__file__).resolve().parent
# The style guide asks for modules of about 500 lines; 600 leaves room for a docstring or
# a table grown by a fix without letting a module turn into two.
MAX_MODULE_LINES = 600
# Modules directly in src/ctsne whose names do not start with "_": the public surface
# beside the stage packages (prior, checks, datasets, metrics, ranking, tl, pl today).
MAX_PUBLIC_ROOT_MODULES = 12
# What `import ctsne` must not load: each costs a second or more (numba's LLVM), and the
# command line's --help and the lazy public names are built on not paying it.
HEAVY = ("numba", "sklearn", "scipy")
# The stages in order (ARCHITECTURE.md): a module may import its own stage and earlier
# ones. Level 0 is what every stage shares; the stage packages have the numbers their
# docstrings give them, and what uses a fitted map sits between the estimator and the
# interfaces. A module not listed here must be given a level. The root package (which
# re-exports the public API lazily), __main__ and _moved (old paths for pickles) stand
# outside the order.
STAGES = {
    "ctsne._parallel": 0, "ctsne._progress": 0, "ctsne._output": 0, "ctsne.checks": 0,
    "ctsne.prior": 0, "ctsne.shared_states": 0, "ctsne.tuning": 0,
    "ctsne.neighbors": 1,
    "ctsne.affinities": 2,
    "ctsne.forces": 3,
    "ctsne.optimization": 4,
    "ctsne.torch_engine": 4.5,
    "ctsne.estimator": 5,
    "ctsne.metrics": 5.5, "ctsne.ranking": 5.5, "ctsne.plotting": 5.5,
    "ctsne.baselines": 5.5, "ctsne.datasets": 5.5,
    "ctsne.interfaces": 6, "ctsne.tl": 6, "ctsne.pl": 6,
}
OUTSIDE_STAGES = {"ctsne", "ctsne.__main__", "ctsne._moved"}


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    tree: ast.Module
    imports: dict = field(default_factory=dict)  # imported module -> first line naming it


def _modules() -> dict[str, Module]:
    mods = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        name = ".".join(parts)
        mods[name] = Module(name, path, is_package, ast.parse(path.read_text(encoding="utf-8")))
    return mods


MODULES = _modules()


def _base(mod: Module, node: ast.ImportFrom) -> str:
    """The absolute module that ``from <node.module> import ...`` reads from."""
    if not node.level:
        return node.module or ""
    package = mod.name if mod.is_package else mod.name.rpartition(".")[0]
    parts = package.split(".")
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _in_package(name: str) -> bool:
    return name == ROOT or name.startswith(ROOT + ".")


def _root_lazy_targets() -> dict[str, int]:
    """Modules named by the root's ``_LAZY`` map (name -> module) and ``_SUBMODULES``,
    with the line that names them."""
    targets = {}
    for node in MODULES[ROOT].tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in ("_LAZY", "_SUBMODULES"):
            value = ast.literal_eval(node.value)
            for t in value.values() if isinstance(value, dict) else value:
                targets.setdefault(f"{ROOT}.{t}", node.lineno)
    assert targets, "ctsne/__init__.py no longer has its _LAZY map; update this test"
    return targets


def _graph() -> tuple[dict[str, dict[str, int]], list[str]]:
    """Import edges (module -> {imported module: line}) and imports of missing modules."""
    missing = []
    for mod in MODULES.values():
        edges: dict[str, int] = {}

        def add(target: str, line: int, mod=mod, edges=edges) -> None:
            if target in MODULES:
                if target != mod.name:
                    edges.setdefault(target, line)
            else:
                missing.append(f"{mod.path.relative_to(SRC.parent)}:{line} imports {target}")

        for node in ast.walk(mod.tree):
            if isinstance(node, ast.ImportFrom):
                base = _base(mod, node)
                if not _in_package(base):
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    # `from X import name`: the submodule X.name when there is one, else X
                    add(sub if sub in MODULES else base, node.lineno)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if _in_package(alias.name):
                        add(alias.name, node.lineno)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and node.value in MODULES and node.value != ROOT:
                # a module named in full for importlib.import_module (lazy engines, ...)
                add(node.value, node.lineno)
        mod.imports = edges
    for target, line in _root_lazy_targets().items():
        if target in MODULES:
            MODULES[ROOT].imports.setdefault(target, line)
        else:
            missing.append(f"ctsne/__init__.py:{line} names {target} for lazy import")
    return {m.name: m.imports for m in MODULES.values()}, missing


def _reachable(edges: dict[str, dict[str, int]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for w in edges[todo.pop()]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def _cycle_through(edges: dict[str, dict[str, int]], start: str, scc: set[str]) -> list[str]:
    """A shortest import path start -> ... -> start inside the component."""
    prev = {start: None}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in edges[v]:
            if w not in scc:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return [*reversed(path), start]  # path runs v -> ... -> start
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return [start]


def _components(edges: dict[str, dict[str, int]]) -> list[set[str]]:
    """Strongly connected components of more than one module (small graph: by reachability)."""
    reach = {v: _reachable(edges, v) for v in edges}
    comps, done = [], set()
    for v in sorted(edges):
        if v in done:
            continue
        comp = {w for w in reach[v] if v in reach[w]}
        done |= comp
        if len(comp) > 1:
            comps.append(comp)
    return comps


def test_every_module_imports():
    failures = []

    def on_error(name):
        failures.append(f"{name}: {traceback.format_exc(limit=3)}")

    names = []
    for info in pkgutil.walk_packages(ctsne.__path__, ROOT + ".", onerror=on_error):
        if info.name == f"{ROOT}.__main__":  # runs the command line when imported
            continue
        names.append(info.name)
        try:
            importlib.import_module(info.name)
        except Exception:
            failures.append(f"{info.name}: {traceback.format_exc(limit=3)}")
    assert not failures, "modules that do not import:\n" + "\n".join(failures)
    # the walk saw every module file (a package that failed would hide its modules)
    on_disk = {m for m in MODULES if m not in (ROOT, f"{ROOT}.__main__")}
    assert on_disk <= set(names), f"not reached by the walk: {sorted(on_disk - set(names))}"


def test_internal_imports_name_existing_modules():
    # a lazy import of a moved module fails only when that code path runs
    _, missing = _graph()
    assert not missing, "imports of modules that do not exist:\n" + "\n".join(missing)


def test_no_import_cycles():
    edges, _ = _graph()
    report = []
    for comp in _components(edges):
        start = min(comp)
        cycle = _cycle_through(edges, start, comp)
        lines = [f"cycle of {len(comp)} modules: {', '.join(sorted(comp))}",
                 "  e.g. " + " -> ".join(cycle), "  imports inside it:"]
        for v in sorted(comp):
            for w, line in sorted(edges[v].items()):
                if w in comp:
                    where = MODULES[v].path.relative_to(SRC.parent)
                    lines.append(f"    {where}:{line}: {v} -> {w}")
        report.append("\n".join(lines))
    assert not report, "import cycles:\n" + "\n\n".join(report)


def _stage(module: str) -> float | None:
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        level = STAGES.get(".".join(parts[:i]))
        if level is not None:
            return level
    return None


def test_stages_import_only_earlier_stages():
    edges, _ = _graph()
    unplaced = sorted(m for m in MODULES if m not in OUTSIDE_STAGES and _stage(m) is None)
    assert not unplaced, f"give these modules a stage in STAGES: {unplaced}"
    bad = []
    for v in sorted(set(edges) - OUTSIDE_STAGES):
        for w, line in sorted(edges[v].items()):
            if w not in OUTSIDE_STAGES and _stage(w) > _stage(v):
                bad.append(f"{MODULES[v].path.relative_to(SRC.parent)}:{line}: {v} (stage "
                           f"{_stage(v)}) imports {w} (stage {_stage(w)})")
    assert not bad, "imports of later stages:\n" + "\n".join(bad)


def _root_defined() -> set[str]:
    """Names the root binds itself (``__version__``...), which need no ``__getattr__``."""
    names = set()
    for node in MODULES[ROOT].tree.body:
        if isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def test_internal_modules_do_not_import_through_the_root():
    allowed = _root_defined() | {m.rpartition(".")[2] for m in MODULES
                                 if m.count(".") == 1}  # ctsne.<submodule>
    bad = []
    for mod in MODULES.values():
        if mod.name == ROOT:
            continue
        where = mod.path.relative_to(SRC.parent)
        bound = set()  # names bound to the root package by `import ctsne [as x]`
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.ImportFrom) and _base(mod, node) == ROOT:
                bad += [f"{where}:{node.lineno}: from {ROOT} import {a.name}"
                        for a in node.names if a.name not in allowed]
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == ROOT or (a.asname is None and a.name.startswith(ROOT + ".")):
                        bound.add(a.asname or ROOT)
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in bound and node.attr not in allowed:
                bad.append(f"{where}:{node.lineno}: {node.value.id}.{node.attr}")
    assert not bad, ("import these from the module that defines them, not through the "
                     "package root's lazy __getattr__:\n" + "\n".join(bad))


def test_module_count_and_size():
    public = sorted(p.name for p in SRC.glob("*.py") if not p.name.startswith("_"))
    assert len(public) <= MAX_PUBLIC_ROOT_MODULES, (
        f"{len(public)} public modules directly in ctsne/ (at most "
        f"{MAX_PUBLIC_ROOT_MODULES}): {public}; put new ones in a stage package")
    long = {str(m.path.relative_to(SRC.parent)): n for m in MODULES.values()
            if (n := len(m.path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them): {long}"


def test_import_ctsne_is_light():
    code = ("import sys, ctsne; "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True)
    assert res.stdout.strip() == "", f"`import ctsne` imported {res.stdout.strip()}"
