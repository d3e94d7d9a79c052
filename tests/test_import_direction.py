"""Dependencies point one way: triage ──HTTP──▶ inference ──▶ kernels, with the studies on top
(docs/architecture.md, "Which package may import which").

Every Python file of kernels/, inference/, triage/ and studies/ is parsed (tests and scripts
included, and imports inside functions too: a lazy import couples the packages all the same),
and each import is checked against the rules below. A failure names the file, the line and the
import, so the fix starts where the coupling is.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kernels", "inference", "triage", "studies")

# Which of our packages each package must not import.
FORBIDDEN = {
    "kernels": {"inference", "triage", "studies"},  # kernels know nothing of the engine or the app
    "inference": {"triage", "studies"},             # the engine serves any client; studies use it
    "triage": {"inference", "kernels", "studies"},  # the app talks to an engine over HTTP
    "studies": {"triage"},                          # studies measure the engine and its kernels
}

# The exceptions, each one module for the files under one path, with the reason it is allowed.
ALLOWED = [
    ("triage", "kernels.settings",
     "the kernel-settings schema, pure Python without torch: the app validates profiles and requests "
     "with the very code the engine runs"),
    ("triage/tests", "inference.testing",
     "the tests start the bundled inference server as a subprocess (spawn_server) and talk to it over HTTP"),
    ("triage/management/commands/bench_experiment.py", "inference.testing",
     "the benchmark starts the bundled server as a subprocess (spawn_server) and talks to it over HTTP"),
    ("triage/management/commands/bench_experiment.py", "inference.demo_data",
     "the benchmark's conversation: the demo data's long chats (pure Python text, no engine)"),
    ("triage/tests", "inference.gguf_loader",
     "the external-backend tests give llama.cpp the bundled model file (default_model_path)"),
    ("triage/degeneration/testdata", "inference.engine",
     "offline scripts that generate the detector's held-out data with the bundled engine, run by hand; "
     "no part of the app"),
]


def _python_files(root: Path = ROOT):
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "__pycache__" not in path.parts:
                yield path


def imports_of(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, dotted module) of every import in `path`, in line order, relative imports
    resolved; for `from package import name`, `package.name` when that is a module of ours."""

    def is_module(dotted: str) -> bool:
        base = root.joinpath(*dotted.split("."))
        return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()

    parts = list(path.relative_to(root).with_suffix("").parts)
    package = parts[:-1]  # (of an __init__.py too: its package is the folder)
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base_parts = package[: len(package) - node.level + 1] if node.level else []
            base = ".".join(base_parts + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.append((node.lineno, full if is_module(full) else base))
    return sorted(found)


def _allowed(rel: str, imported: str) -> bool:
    return any((rel == where or rel.startswith(where + "/"))
               and (imported == module or imported.startswith(module + "."))
               for where, module, _why in ALLOWED)


def violations(paths, root: Path = ROOT) -> list[str]:
    """'file:line imports module' for every forbidden import in `paths`."""
    out = []
    for path in paths:
        rel = path.relative_to(root).as_posix()
        forbidden = FORBIDDEN[rel.split("/")[0]]
        out += [f"{rel}:{line} imports {imported}" for line, imported in imports_of(path, root)
                if imported.split(".")[0] in forbidden and not _allowed(rel, imported)]
    return out


def test_no_package_imports_against_the_direction():
    found = violations(_python_files())
    assert not found, (
        "imports against the dependency direction (kernels import none of our packages, inference "
        "imports kernels only, triage reaches inference over HTTP; ALLOWED above lists the few "
        "exceptions, docs/architecture.md says why):\n  " + "\n  ".join(found))


def test_the_checker_catches_plain_from_and_function_local_imports(tmp_path):
    """The checker itself, on a made-up tree: each kind of import is caught and named by file
    and line; relative imports stay inside their package; an allowed module is not reported."""
    (tmp_path / "kernels" / "sub").mkdir(parents=True)
    (tmp_path / "triage").mkdir()
    for name in ("kernels/__init__.py", "kernels/sub/__init__.py", "kernels/sub/helper.py", "kernels/settings.py"):
        (tmp_path / name).write_text("")
    bad = tmp_path / "kernels" / "sub" / "bad.py"
    bad.write_text("import os\nimport inference.engine\nfrom . import helper\n\n"
                   "def f():\n    from triage import models\n    import studies.kv_formats as kv\n")
    app = tmp_path / "triage" / "app.py"
    app.write_text("from kernels.settings import KernelSettings\nfrom kernels import settings\n"
                   "from kernels import selector\n")
    assert imports_of(bad, tmp_path) == [(1, "os"), (2, "inference.engine"), (3, "kernels.sub.helper"),
                                         (6, "triage"), (7, "studies.kv_formats")]
    assert violations([bad, app], tmp_path) == [
        "kernels/sub/bad.py:2 imports inference.engine",
        "kernels/sub/bad.py:6 imports triage",
        "kernels/sub/bad.py:7 imports studies.kv_formats",
        "triage/app.py:3 imports kernels",
    ]


@pytest.mark.parametrize("where,module,why", ALLOWED, ids=[f"{w}->{m}" for w, m, _ in ALLOWED])
def test_every_exception_is_still_used(where, module, why):
    """An exception nobody needs any more is dropped from ALLOWED, so the list stays true."""
    base = ROOT / where
    paths = [base] if base.suffix == ".py" else [p for p in base.rglob("*.py") if "__pycache__" not in p.parts]
    used = any(imported == module or imported.startswith(module + ".")
               for path in paths for _, imported in imports_of(path))
    assert used, f"nothing under {where} imports {module} any more: drop it from ALLOWED ({why})"
