"""No ``except ... as NAME`` unbinds a name a nested function reads: Python deletes the handler's name when the handler
ends, so a closure reading that name later fails with NameError (``free variable ... referenced before assignment``).
The executor's ``run_graph`` had ``except BaseExceptionGroup as group`` while ``run_task`` cancels through ``group``:
a worker's double Ctrl-C printed that NameError. Timing made it hard to reproduce; the source says it for sure."""

from __future__ import annotations

import ast
import symtable
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def sources() -> list[Path]:
    return sorted([*(ROOT / "pipeline").rglob("*.py"), *(ROOT / "stages").rglob("*.py")])


def handler_names(function: ast.AST) -> set[str]:
    """The names ``except ... as NAME`` binds in ``function`` itself (not in the functions nested in it)."""
    names: set[str] = set()
    todo = list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        if isinstance(node, (*FUNCTIONS, ast.ClassDef)):
            continue
        if isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        todo.extend(ast.iter_child_nodes(node))
    return names


def read_by_nested(table: symtable.SymbolTable) -> set[str]:
    """The names the functions nested in ``table`` (at any depth) read from an enclosing function."""
    names: set[str] = set()
    for child in table.get_children():
        if isinstance(child, symtable.Function):
            names |= set(child.get_frees())
        names |= read_by_nested(child)
    return names


def tables(table: symtable.SymbolTable) -> Iterator[symtable.SymbolTable]:
    yield table
    for child in table.get_children():
        yield from tables(child)


def unbound_by_a_handler(path: Path) -> list[str]:
    text = path.read_text()
    by_place = {(t.get_name(), t.get_lineno()): t for t in tables(symtable.symtable(text, str(path), "exec"))}
    found = []
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            table = by_place.get((node.name, node.lineno))
            if table is None:  # (a decorated function's table may start at its decorator)
                table = next((t for (name, line), t in by_place.items() if name == node.name
                              and node.decorator_list and node.decorator_list[0].lineno <= line <= node.lineno), None)
            assert table is not None, (path, node.name, node.lineno)
            for name in sorted(handler_names(node) & read_by_nested(table)):
                found.append(f"{path.name}:{node.lineno} {node.name}: `except ... as {name}`")
    return found


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_handler_unbinds_a_name_a_closure_reads(path: Path) -> None:
    assert unbound_by_a_handler(path) == []


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text("async def run():\n    group = []\n    def cancel():\n        group[0].cancel()\n    try:\n"
                      "        pass\n    except BaseExceptionGroup as group:\n        raise\n")
    assert len(unbound_by_a_handler(source)) == 1
