"""`replay incident import DIR` as real processes: two worker processes import what one does (every output equal once
the aliases, fresh per import by design, are mapped), a Dask cluster too, and no sensitive value in any file written."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import errors_of, jsonl, run_replay
from incident_support import ALIAS, make_exports, map_aliases, same_after_mapping_aliases, sensitive_export, tree, value_forms

from replay.pipeline.io.manifest import MANIFEST


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_exports(tmp_path_factory.mktemp("incident-many") / "exports", count=4)


@pytest.fixture(scope="module")
def one_worker(exports: Path) -> tuple[Path, list[dict]]:
    out = exports.parent / "one"
    done = run_replay("incident", "import", str(exports), "--out", str(out), "--workers", "1", process=True)
    assert done.returncode == 0 and errors_of(done.stderr) == [], done.stderr
    return out, jsonl(done.stdout)


def without_manifest(folder: Path) -> dict[str, bytes]:
    return {name: data for name, data in tree(folder).items() if name != MANIFEST}


def comparable(line: dict, out: Path) -> dict:
    """A summary line without what is fresh per import (its id) and with OUT written as OUT."""
    return {**{k: v for k, v in line.items() if k != "incident_id"}, "out": line["out"].replace(str(out), "OUT")}


def test_two_worker_processes_import_what_one_imports(exports: Path, one_worker: tuple[Path, list[dict]], tmp_path: Path) -> None:
    one, lines_one = one_worker
    two = tmp_path / "two"
    done = run_replay("incident", "import", str(exports), "--out", str(two), "--workers", "2", process=True)
    assert done.returncode == 0 and errors_of(done.stderr) == [], done.stderr
    lines_two = jsonl(done.stdout)
    inputs = sorted(str(p) for p in exports.rglob("*.json"))
    assert [line["source"] for line in lines_two] == [line["source"] for line in lines_one] == inputs  # input order
    assert [comparable(line, two) for line in lines_two] == [comparable(line, one) for line in lines_one]
    assert {line["summary"] for line in lines_two} == {"business rules FAIL", "business rules PASS", "business rules INCONCLUSIVE"}
    # the same files, and every one equal once one run's aliases are written as the other's
    a, b = without_manifest(one), without_manifest(two)
    assert len(a) == 6 * len(inputs)
    same_after_mapping_aliases(a, b)
    # ... which are not the same aliases: each import drew its own secret
    mapping = map_aliases(a, b)
    assert mapping and not set(mapping) & set(mapping.values())
    # value-free counts and verdicts equal as they are
    for name in a:
        if name.endswith(("redaction.json", "evaluation.json")):
            strip = lambda doc: orjson.loads(ALIAS.sub(b"x", doc))  # noqa: E731
            assert strip(a[name]) == strip(b[name]), name
    manifests = [orjson.loads((folder / MANIFEST).read_bytes()) for folder in (one, two)]
    shape = [[(e["input"], [(o["path"], o["size"]) for o in e["outputs"]], e["diagnostics"]) for e in m["inputs"]] for m in manifests]
    assert shape[0] == shape[1] and len(shape[0]) == len(inputs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["two"]  # no staging folder left beside it


def test_a_dask_cluster_imports_what_one_worker_imports(exports: Path, one_worker: tuple[Path, list[dict]], thread_cluster: str,
                                                        tmp_path: Path) -> None:
    one, lines_one = one_worker
    out = tmp_path / "dask"
    done = run_replay("incident", "import", str(exports), "--out", str(out), "--engine", "dask", "--scheduler", thread_cluster)
    assert done.returncode == 0, done.stderr
    assert [comparable(line, out) for line in jsonl(done.stdout)] == [comparable(line, one) for line in lines_one]
    same_after_mapping_aliases(without_manifest(one), without_manifest(out))


def test_no_original_sensitive_value_is_in_any_file_of_an_import_of_many(tmp_path: Path) -> None:
    exports = make_exports(tmp_path / "exports", count=2, sensitive=True)
    _, originals = sensitive_export()
    out = tmp_path / "imported"
    done = run_replay("incident", "import", str(exports), "--out", str(out), "--workers", "2", process=True)
    assert done.returncode == 0, done.stderr
    files = [p for p in out.rglob("*") if p.is_file()]
    assert (out / "sensitive" / "report.html") in files and (out / MANIFEST) in files  # the manifest holds the stdout lines
    blobs = {str(p.relative_to(out)): p.read_bytes() for p in files} | {"<stdout>": done.stdout, "<stderr>": done.stderr}
    leaks = [(value[:40], name) for value in originals for name, blob in blobs.items()
             if any(form in blob for form in value_forms(value))]
    assert leaks == []
    audit = orjson.loads((out / "sensitive" / "redaction.json").read_bytes())
    assert all(count > 0 for count in audit["detectors"].values())
