"""The architecture checks: docs/architecture.md's layer table holds for every import in src.

Read the table from the page (``docs/architecture.md``, "Layers"), collect every import in
``src/dpfit`` by parsing the source (module-level imports, imports inside functions,
``importlib.import_module`` and ``__import__`` with a constant name, however they are bound
(relative names resolved), and string constants that name a dpfit module or a function in
one), and check that each goes down, or sideways where the table allows it. A module loaded
by a route the scan cannot read (a computed name, ``exec``, a file path, a computed
``sys.modules`` key) is reported unless listed with its reason. The same module holds the
other structural rules: module size, where random draws may happen, and the signature
contract of every function that returns a ``Trajectory``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "dpfit"
DOC = ROOT / "docs" / "architecture.md"


# ---------------------------------------------------------------------------------------------
# Layers


@dataclass(frozen=True)
class Layers:
    """package -> layer (0 is the top) and package -> packages of its layer it may import."""

    layer: dict[str, int]
    sideways: dict[str, frozenset[str]]
    exceptions: frozenset[tuple[str, str]]  # (module path under src/dpfit, package imported)


def _table_rows(text: str, marker: str) -> list[list[str]]:
    """The cells of the markdown table that follows the HTML comment containing ``marker``."""
    at = text.index(marker)
    rows = []
    for line in text[at:].splitlines()[1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if set(cells[0]) <= {"-", ":"}:
            continue
        rows.append(cells)
    return rows[1:]  # without the header


def _names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def read_layers(text: str) -> Layers:
    """The layer table and its exceptions, as written on the page."""
    layer: dict[str, int] = {}
    sideways: dict[str, frozenset[str]] = {}
    for number, package, _role, also in _table_rows(text, "layer table:"):
        (name,) = _names(package)
        assert name not in layer, f"{name} is in the layer table twice"
        layer[name] = int(number)
        sideways[name] = frozenset(_names(also))
    for name, others in sideways.items():
        for other in others:
            assert layer.get(other) == layer[name], f"{name} -> {other}: not the same layer"
    exceptions = set()
    for module, imports, why in _table_rows(text, "import exceptions:"):
        assert why, f"exception {module} without a reason"
        for target in _names(imports):
            exceptions.add((_names(module)[0], target))
    return Layers(layer, sideways, frozenset(exceptions))


# ---------------------------------------------------------------------------------------------
# Imports


@dataclass(frozen=True)
class Edge:
    """One import: from the module at ``path`` (under the package root), line ``line``."""

    path: str
    line: int
    source: str  # the importing package (first name under dpfit; "dpfit" for __init__.py)
    target: str  # the imported package
    how: str  # "import", "string", "import_module"


def _unit(dotted: str, units: set[str]) -> str | None:
    """The package (first name under dpfit) a dotted dpfit name belongs to, else None."""
    parts = dotted.split(".")
    if parts[0] != "dpfit":
        return None
    if len(parts) == 1:
        return "dpfit"
    return parts[1] if parts[1] in units else "dpfit"  # dpfit.ols: a name of the package


def _units(root: Path) -> set[str]:
    modules = {p.stem for p in root.glob("*.py") if p.stem != "__init__"}
    return modules | {p.parent.name for p in root.glob("*/__init__.py")}


#: Strings that name a dpfit module but are not imports, with the reason.
NOT_IMPORTS = {
    ("serve/testing.py", "dpfit.cli"): "a subprocess command line (python -m dpfit.cli serve)",
}

#: Calls of importlib.import_module whose name is not a constant, with the reason. Each
#: loads a module of its own package or one its layer may import (the names come from a table).
DYNAMIC_IMPORTS = {
    "__init__.py": "the package's lazy public names and subpackages (its _LAZY, _SUBMODULES)",
    "cli/__init__.py": "the subcommand modules of cli itself (COMMANDS)",
    "cli/reproduce.py": "experiment modules named by the user (--module), which register them",
}

_DOTTED = re.compile(r"dpfit(\.[A-Za-z_][A-Za-z0-9_]*)+")


#: The functions that import a module named by a string: ``importlib.import_module(name,
#: package)`` and ``__import__(name, globals, locals, fromlist, level)``.
_IMPORTERS = ("import_module", "__import__")

#: Other ways to load a module whose name the scan cannot read: each use is reported as a
#: dynamic import (allowed only in :data:`DYNAMIC_IMPORTS`). Code run from a string
#: (``exec``, ``eval``, ``compile``), a module loaded from a file path (importlib.util), and
#: a call of an importer reached by ``getattr`` or ``methodcaller``.
_LOADERS = frozenset(
    "spec_from_file_location spec_from_loader module_from_spec SourceFileLoader load_module "
    "exec_module".split()
)
_RUN_STRING = ("exec", "eval", "compile")  # the builtins (``re.compile`` is not one)


def _importer_aliases(tree: ast.AST) -> dict[str, str]:
    """Names bound to an importer: ``from importlib import import_module as load``."""
    return {
        a.asname or a.name: a.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for a in node.names
        if a.name in _IMPORTERS
    }


def _dynamic(node: ast.AST) -> bool:
    """Whether ``node`` loads a module by a route the scan cannot follow (:data:`_LOADERS`;
    ``getattr(importlib, "import_module")``; ``sys.modules[key]`` with a computed key)."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in _LOADERS or (isinstance(func, ast.Name) and name in _RUN_STRING):
            return True
        return name in ("getattr", "methodcaller") and any(
            isinstance(a, ast.Constant) and a.value in _IMPORTERS for a in node.args
        )
    if isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("sys.modules"):
        return not (isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str))
    return False


def _argument(node: ast.Call, position: int, keyword: str) -> ast.expr | None:
    if len(node.args) > position:
        return node.args[position]
    return next((k.value for k in node.keywords if k.arg == keyword), None)


def _imported_name(
    node: ast.Call, func: str, package: list[str], module: list[str]
) -> str | None:
    """The absolute dotted name an import_module or __import__ call loads, or None when it is
    computed. A relative name is resolved against the calling module's package when the
    package is given as ``__package__`` (or ``__name__`` in an ``__init__.py``) or a constant;
    ``__import__``'s ``level`` must be a constant."""
    arg = node.args[0]
    if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
        return None
    name = arg.value
    if func == "import_module":
        level = len(name) - len(name.lstrip("."))
        name = name[level:]
        if level:
            anchor = _argument(node, 1, "package")
            if isinstance(anchor, ast.Constant) and isinstance(anchor.value, str):
                base = anchor.value.split(".")
            elif isinstance(anchor, ast.Name) and anchor.id == "__package__":
                base = package
            elif isinstance(anchor, ast.Name) and anchor.id == "__name__":
                base = module
            else:
                return None
    else:
        given = _argument(node, 4, "level")
        if given is None:
            level = 0
        elif isinstance(given, ast.Constant) and isinstance(given.value, int):
            level = given.value
        else:
            return None
        base = package
    if not level:
        return name
    return ".".join(base[: len(base) - level + 1] + ([name] if name else []))


def import_edges(root: Path) -> tuple[list[Edge], list[str]]:
    """Every import between packages under ``root`` (a package directory named dpfit), and the
    modules with an import_module call whose name is not a constant."""
    units = _units(root)
    edges: list[Edge] = []
    dynamic: list[str] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        parts = ["dpfit", *rel.with_suffix("").parts]
        package = parts[:-1]  # what a relative import starts from
        if parts[-1] == "__init__":
            parts = parts[:-1]
        source = _unit(".".join(parts), units) if len(parts) > 1 else "dpfit"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        importers = {**{f: f for f in _IMPORTERS}, **_importer_aliases(tree)}
        named = {  # the constant names of import_module/__import__ calls, counted once (below)
            id(node.args[0])
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and node.args
            and getattr(node.func, "attr", getattr(node.func, "id", "")) in importers
        }
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            found: list[tuple[str, str]] = []
            if isinstance(node, ast.Import):
                found = [(a.name, "import") for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                if module == "dpfit":  # from dpfit import cli / from .. import ols
                    found = [(f"dpfit.{a.name}", "import") for a in node.names]
                else:
                    found = [(module, "import")]
            elif _dynamic(node):
                if str(rel) not in DYNAMIC_IMPORTS:
                    dynamic.append(f"{rel}:{node.lineno}")
            elif isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                name = importers.get(name, "")
                if name and node.args:
                    dotted = _imported_name(node, name, package, parts)
                    if dotted is not None:
                        found = [(dotted, name.strip("_"))]
                    elif str(rel) not in DYNAMIC_IMPORTS:
                        dynamic.append(f"{rel}:{node.lineno}")
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings | named
                and _DOTTED.fullmatch(node.value)
                and node.value.split(".")[1] in units  # a module, not a name like dpfit.persist
                and (str(rel), node.value) not in NOT_IMPORTS
            ):
                found = [(node.value, "string")]
            for dotted, how in found:
                target = _unit(dotted, units)
                if target is not None and target != source:
                    edges.append(Edge(str(rel), node.lineno, source, target, how))
    return edges, dynamic


def violations(edges: list[Edge], layers: Layers) -> list[str]:
    """Each edge that goes up, or sideways where the table does not allow it."""
    out = []
    for e in edges:
        for name in (e.source, e.target):
            if name not in layers.layer:
                out.append(f"{e.path}:{e.line}: package {name} is not in the layer table")
        if e.source not in layers.layer or e.target not in layers.layer:
            continue
        if (e.path, e.target) in layers.exceptions:
            continue
        up, down = layers.layer[e.source], layers.layer[e.target]
        if down > up or e.target in layers.sideways[e.source]:
            continue
        kind = "sideways" if down == up else "upward"
        out.append(f"{e.path}:{e.line}: {kind} {e.how} {e.source} -> {e.target}")
    return out


@pytest.fixture(scope="module")
def layers() -> Layers:
    return read_layers(DOC.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    found, dynamic = import_edges(SRC)
    assert not dynamic, f"import_module with a computed name outside DYNAMIC_IMPORTS: {dynamic}"
    return found


def test_every_import_goes_down_or_sideways_as_the_table_allows(layers, edges):
    assert violations(edges, layers) == []


def test_every_package_is_in_the_table(layers):
    assert _units(SRC) | {"dpfit"} == set(layers.layer)


def test_every_exception_and_sideways_edge_is_used(layers, edges):
    """A row of the table that no import needs any more is removed, so the page stays true."""
    used = {(e.source, e.target) for e in edges}
    unused = [(a, b) for a, others in layers.sideways.items() for b in others if (a, b) not in used]
    assert unused == []
    paths = {(e.path, e.target) for e in edges}
    assert sorted(layers.exceptions - paths) == []


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "dpfit"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize(
    "code, how",
    [
        ("from ..models import linear\n", "import"),
        ("def f():\n    from ..models import linear\n", "import"),
        ("import dpfit.models.linear\n", "import"),
        ("import importlib\nM = importlib.import_module('dpfit.models.linear')\n", "import_module"),
        ("KERNEL = 'dpfit.models.linear.fit'\n", "string"),
        ("from .. import models\n", "import"),
        ("import importlib\nM = importlib.import_module('..models.linear', __package__)\n",
         "import_module"),
        ("import importlib\nM = importlib.import_module('..models', package=__package__)\n",
         "import_module"),
        ("M = __import__('models.linear', globals(), None, ['x'], 2)\n", "import"),
        ("M = __import__('models', globals(), None, ['linear'], level=2)\n", "import"),
        ("from importlib import import_module as im\nM = im('..models.linear', __package__)\n",
         "import_module"),
    ],
    ids=["module-level", "in-function", "absolute", "import_module", "by-string", "from-root",
         "import_module-relative", "import_module-package", "dunder-import-level",
         "dunder-import-level-keyword", "import_module-aliased"],
)
def test_the_check_fails_on_a_planted_upward_import(tmp_path, layers, code, how):
    """The checker, run on a small package laid out like dpfit, finds an upward import however
    it is written (and nothing in the same package without it)."""
    files = {
        "mechanisms/__init__.py": "",
        "mechanisms/gaussian.py": "from ..privacy import ledger\n",
        "privacy/__init__.py": "",
        "privacy/ledger.py": "X = 1\n",
        "models/__init__.py": "",
        "models/linear.py": "from ..mechanisms import gaussian\n",
    }
    clean, _ = import_edges(_package(tmp_path / "clean", files))
    assert violations(clean, layers) == []
    planted = {**files, "mechanisms/gaussian.py": files["mechanisms/gaussian.py"] + code}
    found, _ = import_edges(_package(tmp_path / "planted", planted))
    assert [v.split(": ", 1)[1] for v in violations(found, layers)] == [
        f"upward {how} mechanisms -> models"
    ]


def test_the_check_fails_on_an_injected_edge_sideways_or_unknown(layers, edges):
    injected = [
        Edge("baselines/ssp.py", 1, "baselines", "models", "import"),  # upward
        Edge("noise/tree.py", 1, "noise", "losses", "import"),  # sideways, not allowed
        Edge("cli/new.py", 1, "cli", "newpackage", "import"),  # not in the table
    ]
    assert len(violations(injected, layers)) == 3


@pytest.mark.parametrize(
    "code",
    [
        "import importlib\nimportlib.import_module(N)\n",
        "import importlib\ngetattr(importlib, 'import_module')('..models.linear', __package__)\n",
        "import operator\nM = operator.methodcaller('import_module', 'dpfit.models')\n",
        "exec('from ..models import linear', globals())\n",
        "import importlib.util\nS = importlib.util.spec_from_file_location('m', P)\n",
        "import sys\nM = sys.modules[__name__.split('.')[0] + '.models.linear']\n",
    ],
    ids=["computed-name", "getattr-importer", "methodcaller", "exec", "file-location",
         "sys-modules-key"],
)  # fmt: skip
def test_an_undocumented_dynamic_import_is_reported(tmp_path, code):
    root = _package(tmp_path, {"algorithms/x.py": "X = 1\n" + code})
    assert import_edges(root)[1] == [f"algorithms/x.py:{code.count(chr(10)) + 1}"]


def test_the_page_table_is_read(layers):
    """The reader sees the rows the page gives (a broken table would pass everything)."""
    assert layers.layer["dpfit"] == 0 and layers.layer["privacy"] > layers.layer["mechanisms"]
    assert layers.layer["mechanisms"] > layers.layer["algorithms"] > layers.layer["models"]
    assert "experiments" in layers.sideways["cli"]
    assert ("privacy/_stored_budget.py", "mechanisms") in layers.exceptions


# ---------------------------------------------------------------------------------------------
# Module size

MAX_LINES = 400

def test_no_module_is_over_400_lines():
    over = {}
    for path in SRC.rglob("*.py"):
        rel = str(path.relative_to(SRC))
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            over[rel] = lines
    assert over == {}


# ---------------------------------------------------------------------------------------------
# Random draws

#: Functions and methods that draw random numbers: numpy's Generator and legacy RandomState,
#: the standard library's random and secrets, SciPy's frozen and unfrozen distributions
#: (``rvs``) and torch's samplers (numpy's ``wald`` is left out: it is the name of the
#: results' Wald test).
DRAWS = frozenset(
    "normal standard_normal laplace random uniform choice permutation permuted shuffle "
    "integers binomial poisson exponential standard_exponential gamma beta multivariate_normal "
    "chisquare standard_t lognormal geometric randn rand randint standard_cauchy "
    "standard_gamma logistic gumbel multinomial dirichlet weibull pareto rayleigh vonmises "
    "zipf hypergeometric negative_binomial noncentral_chisquare noncentral_f logseries "
    "triangular gauss normalvariate lognormvariate expovariate gammavariate betavariate "
    "randrange getrandbits randbelow token_bytes token_hex rvs randn_like rand_like "
    "randint_like randperm bernoulli normal_ uniform_ exponential_ bernoulli_ "
    "f power bytes random_raw random_sample sample choices paretovariate urandom rsample "
    "cauchy_ log_normal_ geometric_ random_ truncated_normal".split()
)

#: Draw names that are also common names of data (``fit.beta``, ``data.shuffle``,
#: ``args.sample``, ``stats.f.sf``): these count where called (``rng.beta(2, 3)``), other
#: draws wherever they are read (``draw = rng.normal``). numpy's ``power`` is not a draw.
CALLED_ONLY = frozenset("beta gamma shuffle choices sample random f poisson power bytes".split())
NOT_DRAWS = frozenset({"np.power", "numpy.power"})
_BY_NAME = ("getattr", "methodcaller")  # what reaches a method named by a string
_CLASS_DICT = re.compile(r"__dict__$|^vars\(")  # so does a class's namespace

#: Modules every attribute of which draws (``jax.random.normal``, ``jr.split``): their
#: dotted names, as imported.
DRAW_MODULES = frozenset({"jax.random"})

#: Where a random draw outside dpfit.mechanisms and dpfit.noise is allowed, and why. None of
#: these is privacy noise: privacy noise is drawn only by the mechanisms, after the charge.
DRAWS_ALLOWED = {
    "datasets/": "synthetic data sets (the data, not noise)",
    "experiments/": "simulated populations and public resampling of simulation results",
    "audit/": "canary data sets and the auditor's own sampling (an attacker, not a release)",
    "algorithms/ftrl.py": "the public batch order, a permutation from the noise source",
    "algorithms/onepass.py": "the public shuffle of a one-pass run, from the noise source",
    "algorithms/_unit_sums.py": "the seed of the row cap's uniform choice per unit, from a child "
    "of the noise source (never from the data)",
    "baselines/fixed_clip_sgd.py": "Poisson sampling of the batches, from the noise source",
    "torch/samplers.py": "Poisson sampling and shuffling of batches, from the noise source",
    "testing.py": "neighbour checks permute the rows of a data set (a test of the user's code)",
}


def _draw_name(
    node: ast.AST, aliases: dict[str, str], modules: set[str], called: set[int]
) -> str | None:
    """The draw a node makes or names, called or not (a bound method stored, passed to
    ``functools.partial`` or ``map`` draws all the same): an attribute read in :data:`DRAWS`
    (``rng.normal``, ``stats.norm.rvs``, ``random.gauss``; those of :data:`CALLED_ONLY`
    where called, ``called`` holding the ids of called nodes) or of a module of
    :data:`DRAW_MODULES` (named in ``modules`` as imported here), a name imported as a draw
    (``from numpy.random import standard_normal as z``), or a draw named by a string to
    ``getattr``, ``operator.methodcaller`` or a class's ``__dict__``."""
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
        if ast.unparse(node.value) in modules:
            return node.attr
        if node.attr in DRAWS and ast.unparse(node) not in NOT_DRAWS:
            return node.attr if node.attr not in CALLED_ONLY or id(node) in called else None
    elif isinstance(node, ast.Name) and node.id in aliases:
        return aliases[node.id]
    elif isinstance(node, ast.Subscript) and _CLASS_DICT.search(ast.unparse(node.value)):
        key = node.slice  # type(rng).__dict__["normal"], vars(type(rng))["normal"]
        return str(key.value) if isinstance(key, ast.Constant) and key.value in DRAWS else None
    elif isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] in _BY_NAME:
        names = [a.value for a in node.args if isinstance(a, ast.Constant)]
        return next((str(n) for n in names if n in DRAWS), None)
    return None


def _draw_modules(tree: ast.AST) -> set[str]:
    """The names a module of :data:`DRAW_MODULES` goes by here (``import jax.random as jr``,
    ``from jax import random``, ``import jax``)."""
    names = set(DRAW_MODULES)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname for a in node.names if a.name in DRAW_MODULES and a.asname}
        elif isinstance(node, ast.ImportFrom):
            found = [a for a in node.names if f"{node.module}.{a.name}" in DRAW_MODULES]
            names |= {a.asname or a.name for a in found}
    return names


def _draws(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = str(path.relative_to(root))
        if rel.startswith(("mechanisms/", "noise/")):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {  # names bound to a draw by ``from numpy.random import normal as z``
            a.asname or a.name: a.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and not node.level  # not dpfit's own names
            for a in node.names
            if a.name in DRAWS and f"{node.module}.{a.name}" not in DRAW_MODULES
        }
        modules = _draw_modules(tree)
        called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
        for node in ast.walk(tree):
            if (name := _draw_name(node, aliases, modules, called)) is not None:
                found.append(f"{rel}:{node.lineno}: .{name}()")
    return found


def test_no_random_draw_outside_the_mechanisms_and_the_allowed_places():
    allowed = tuple(DRAWS_ALLOWED)
    assert [d for d in _draws(SRC) if not d.startswith(allowed)] == []


def test_every_allowed_place_draws():
    """An allowance nothing needs any more is removed."""
    found = _draws(SRC)
    assert [a for a in DRAWS_ALLOWED if not any(d.startswith(a) for d in found)] == []


@pytest.mark.parametrize(
    "code, draw",
    [
        ("def f(rng, v):\n    return v + rng.normal(size=3)\n", "normal"),
        ("from scipy import stats\ndef f(v):\n    return v + stats.norm.rvs(size=3)\n", "rvs"),
        ("import random\ndef f(v):\n    return v + random.gauss(0, 1)\n", "gauss"),
        ("from numpy.random import standard_normal as z\ndef f(v):\n    return v + z(3)\n",
         "standard_normal"),
        ("def f(rng, v):\n    return v + getattr(rng, 'normal')(size=3)\n", "normal"),
        ("import torch\ndef f(v):\n    return v + torch.randn_like(v)\n", "randn_like"),
        ("def f(rng, v):\n    return v + rng.standard_cauchy(3)\n", "standard_cauchy"),
        ("import secrets\ndef f(v):\n    return v + secrets.randbelow(10)\n", "randbelow"),
        ("def f(rng, v):\n    draw = rng.normal\n    return v + draw(size=3)\n", "normal"),
        ("import functools\ndef f(rng):\n    return functools.partial(rng.laplace, 0.0)\n",
         "laplace"),
        ("def f(rng, v):\n    return list(map(rng.standard_normal, v))\n", "standard_normal"),
        ("import operator\nDRAW = operator.methodcaller('normal', size=3)\n", "normal"),
        ("def f(rng, v):\n    return v + rng.f(3, 4)\n", "f"),
        ("def f(rng, v):\n    return v + rng.power(3.0)\n", "power"),
        ("def f(rng):\n    return rng.bytes(8)\n", "bytes"),
        ("def f(rng):\n    return rng.bit_generator.random_raw()\n", "random_raw"),
        ("import numpy as np\ndef f(v):\n    return v + np.random.random_sample(3)\n",
         "random_sample"),
        ("from numpy.random import random_sample\nX = random_sample\n", "random_sample"),
        ("import random\ndef f(v):\n    return random.sample(v, 2)\n", "sample"),
        ("import random\ndef f(v):\n    return random.choices(v, k=2)\n", "choices"),
        ("import random\ndef f():\n    return random.paretovariate(2.0)\n", "paretovariate"),
        ("import os\ndef f():\n    return os.urandom(8)\n", "urandom"),
        ("from torch.distributions import Normal\ndef f(v):\n    return Normal(0, 1).sample()\n",
         "sample"),
        ("def f(t):\n    return t.cauchy_()\n", "cauchy_"),
        ("def f(t):\n    return t.log_normal_()\n", "log_normal_"),
        ("import jax\ndef f(key):\n    return jax.random.truncated_normal(key, -1, 1)\n",
         "truncated_normal"),
        ("import jax.random as jr\ndef f(key):\n    return jr.split(key)\n", "split"),
        ("from jax import random\ndef f(key):\n    return random.categorical(key, 0)\n",
         "categorical"),
        ("def f(rng):\n    return type(rng).__dict__['standard_normal'](rng, 3)\n",
         "standard_normal"),
    ],
    ids=["method", "scipy-rvs", "random-gauss", "bare-name", "getattr", "torch", "cauchy",
         "secrets", "stored-method", "partial", "map", "methodcaller", "rng-f", "rng-power",
         "rng-bytes", "random-raw", "random-sample", "random-sample-name", "random-sample-list",
         "random-choices", "paretovariate", "urandom", "torch-sample", "cauchy_",
         "log_normal_", "jax-random", "jax-random-alias", "jax-random-from", "class-dict"],
)  # fmt: skip
def test_the_draw_scan_finds_a_planted_draw(tmp_path, code, draw):
    root = _package(tmp_path, {"models/fit.py": code})
    assert [d.split(": ", 1)[1] for d in _draws(root)] == [f".{draw}()"]


def test_the_draw_scan_passes_data_named_like_a_draw(tmp_path):
    """Names of data that are also names of draws, read and not called, are not draws."""
    code = (
        "import numpy as np\nfrom scipy import stats\nfrom ..models import poisson\n"
        "def f(fit, data, args, v):\n"
        "    fit.choices = data.shuffle, args.sample, stats.f.sf(v, 1, 2), np.power(v, 2)\n"
        "    return fit.beta @ v, np.random.default_rng, {'poisson': poisson}\n"
    )
    assert _draws(_package(tmp_path, {"models/fit.py": code})) == []


# ---------------------------------------------------------------------------------------------
# The Trajectory contract (docs/architecture.md, "Adding an algorithm", step 1)

#: The keywords every private Trajectory function takes, in this order, with these defaults.
CONTRACT = {"relation": "'replace-one'", "n_public": "None", "ledger": "None", "rng": "None"}

#: Data arguments, positional, in this order (a loss first for the loss-based algorithms).
DATA = ("loss", "X", "y", "Z")

#: Public Trajectory functions outside the contract, and why.
NOT_ALGORITHMS = {
    "minimize": "the estimator-level entry point (dpfit.minimize): SciPy/scikit-learn names "
    "random_state and budget, as the estimators",
    "two_stage_gd": "non-private reference: no budget, no ledger",
    "onepass_sgd": "non-private reference: no budget, no ledger",
    "adassp_paper": "NOT private (bounds read off the data), for reproducing a figure only",
}


@dataclass(frozen=True)
class Signature:
    name: str
    where: str
    positional: tuple[str, ...]
    keywords: dict[str, str | None]  # keyword-only name -> default (source text) or None


def trajectory_functions(root: Path) -> list[Signature]:
    """Every public function of a public module under ``root`` annotated ``-> Trajectory``
    (or a subclass named ``...Trajectory``, such as ``PreconditionedTrajectory``)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if any(part.startswith("_") and part != "__init__.py" for part in rel.parts):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if (
                isinstance(node, ast.FunctionDef)
                and not node.name.startswith("_")
                and node.returns is not None
                and ast.unparse(node.returns).strip("'\"").endswith("Trajectory")
            ):
                a = node.args
                defaults = [None] * (len(a.kwonlyargs) - len(a.kw_defaults))
                kw = {
                    arg.arg: None if d is None else ast.unparse(d)
                    for arg, d in zip(a.kwonlyargs, defaults + list(a.kw_defaults), strict=True)
                }
                positional = tuple(x.arg for x in a.posonlyargs + a.args)
                found.append(Signature(node.name, f"{rel}:{node.lineno}", positional, kw))
    return found


def contract_breaches(sig: Signature) -> list[str]:
    """What ``sig`` breaks of the contract (nothing for a conforming function)."""
    out = []
    if sig.name.startswith("run_") and sig.name.endswith("_plan"):  # a plan's runner
        if sig.positional[:1] != ("plan",):
            out.append("a plan runner takes the plan first")
        out += [f"no keyword {k}" for k in ("ledger", "rng") if sig.keywords.get(k, "") != "None"]
        return out
    data = [a for a in sig.positional if a in DATA]
    if list(sig.positional) != data or data != [a for a in DATA if a in data] or "X" not in data:
        out.append(f"positional arguments {sig.positional}: the data only, in {DATA} order")
    if "rho" not in sig.keywords:
        out.append("no keyword rho")
    order = [k for k in sig.keywords if k in CONTRACT]
    for name, default in CONTRACT.items():
        if name not in sig.keywords:
            out.append(f"no keyword {name}")
        elif sig.keywords[name] != default.replace("'", '"') and sig.keywords[name] != default:
            out.append(f"{name} defaults to {sig.keywords[name]}, not {default}")
    if order != [k for k in CONTRACT if k in sig.keywords]:
        out.append(f"keywords {order}, not in the order {list(CONTRACT)}")
    return out


def test_every_trajectory_function_keeps_the_signature_contract():
    sigs = [s for s in trajectory_functions(SRC) if s.name not in NOT_ALGORITHMS]
    assert len(sigs) >= 15  # the scan sees the algorithms
    assert {s.where: contract_breaches(s) for s in sigs if contract_breaches(s)} == {}


def test_every_listed_exception_exists():
    names = {s.name for s in trajectory_functions(SRC)}
    assert set(NOT_ALGORITHMS) <= names


@pytest.mark.parametrize(
    "signature, breach",
    [
        ("X, y, *, rho, n, relation='replace-one', ledger=None, rng=None", "no keyword n_public"),
        ("X, y, *, rho_a, relation='replace-one', n_public=None, ledger=None, rng=None",
         "no keyword rho"),
        ("X, y, *, rho, n_public=None, ledger=None, rng=None", "no keyword relation"),
        ("X, y, *, rho, relation='replace-one', n_public=None, rng=None, ledger=None",
         "not in the order"),
        ("X, y, rho, *, relation='replace-one', n_public=None, ledger=None, rng=None",
         "positional arguments"),
    ],
)  # fmt: skip
def test_the_contract_check_finds_a_planted_breach(tmp_path, signature, breach):
    root = _package(tmp_path, {"algorithms/new.py": f"def new({signature}) -> Trajectory: ..."})
    (sig,) = trajectory_functions(root)
    assert any(breach in b for b in contract_breaches(sig))
    good = "X, y, *, rho, step=1, relation='replace-one', n_public=None, ledger=None, rng=None"
    root = _package(tmp_path / "good", {"algorithms/new.py": f"def new({good}) -> Trajectory: ..."})
    assert contract_breaches(trajectory_functions(root)[0]) == []
