"""`replay incident import DIR --out OUT`: every export in a folder, each its own import, in parallel worker processes.

Each export is one run of the usual import graph (spec ``incident-import``: load, redact with a fresh
secret, evaluate, write) into ``OUT/<name>/``, ``<name>`` being the export's path under DIR without
its suffix, as ``run_files.file_stem`` writes it (``bundle.folder_name``). Runs are spread over
``--workers`` processes or a Dask cluster (``cli.scale.run_over``); one summary line per imported
export comes out on stdout in input order.

Refused before anything is written (exit 2, no OUT): what every export would refuse (the shared
``--rules`` file, a ``--redact`` pointer's syntax), two exports that would get one folder, OUT inside
DIR or DIR inside OUT (E_OUTPUT_UNWRITABLE, as `heal --in DIR --out` refuses it), an OUT that is neither new nor
empty (the incident specification: "Every output folder must be new or empty"; a folder an earlier import
wrote too). An export refused on its own (an invalid export) does not stop the others: its error is printed in
its place, naming it, the others are imported, and the command exits 2 at the end. OUT then holds every export that could be
imported; import the fixed export on its own, or the folder again into a fresh OUT.

A new OUT is filled as ``.OUT.partial.replay.tmp`` beside it and renamed into place when every export
is done (it appears whole, or not at all when no export could be imported); ``OUT/.replay-manifest.json``
(``io.manifest``) is written last. A run that was interrupted removes that partial folder (``cli.scale.filling``;
with ``--engine dask`` it stays); the run after one that was killed resumes from it (OUT is still new then): it imports
only the exports the partial folder's manifest does not record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replay.pipeline.cli.app import package_version
from replay.pipeline.cli.scale import cli_work, filling, holding_stdout, publish_and_list, run_over
from replay.pipeline.cli.scale_flags import Scale
from replay.pipeline.engine.errors import EXIT_FAILED, EXIT_OK, EXIT_REFUSED, ReplayError, counted_before, empty_value
from replay.pipeline.engine.parallel import Outcome
from replay.pipeline.engine.preflight import refuse_overlap, refuse_stdout_into_an_input
from replay.pipeline.engine.spec import bind, load_spec
from replay.pipeline.io.journals import expand_paths
from replay.pipeline.io.manifest import Manifest, work_key
from replay.pipeline.io.staging import partial_sibling
from replay.pipeline.model.incident.bundle import check_output_folder, folder_name
from replay.pipeline.model.incident.export import EXPORT_SUFFIXES, Limits, given_rules
from replay.stages.write_incident import EMPTY_OUT

COMMAND = "incident-import"


def import_many(folder: str, out: str, format_: str, bindings: dict[str, Any], limits: Limits, scale: Scale) -> int:
    """Import every export under ``folder`` into ``out/<name>/``; the exit code is the worst of the exports'."""
    if not out:  # (as for one export: ``Path("")`` is the current folder, and each export was refused as a config's)
        raise empty_value("--out", "--out", by_flag=True, option="out", **EMPTY_OUT)
    walked = expand_paths([folder], once=False)
    files = exports_in(walked, format_)
    if not files:
        raise nothing_to_import(folder, format_, walked)
    if format_ != "canonical":
        given_rules(format_, bindings["load.rules"].value, limits, check=True)
    target = Path(out)
    refuse_stdout_into_an_input(files)
    # OUT inside DIR would be read as exports by the next run; DIR inside OUT would mix inputs into outputs
    refuse_overlap(out, [folder], "--out", what="the export folder",
                   how_to_fix="Import into a folder beside the exports, e.g. --out imported.")
    refuse_shared_folders(files, folder)
    doc = bind(load_spec(COMMAND), set=bindings | {"load.path": "", "folder.out": "", "folder.into": out, "folder.root": folder})
    key = work_key(doc, package_version())
    work_dir = place_to_write(target)
    work = cli_work(bind(doc, set={"folder.write_dir": str(work_dir)}), digest=True, inputs=len(files))
    # (the manifest's sweep leaves the export folders and the manifest only)
    held: list[bytes] = []  # the summary lines wait for OUT: they name folders that appear with it (as heal's do)
    hold = holding_stdout(held)
    unreadable: list[str] = []

    def take(outcome: Outcome) -> None:
        # an export that could not be read (a link to nothing, no permission) is reported by the run's digest of it as
        # `read` reports an input, exit 1; here it is an invalid export, refused as one: exit 2, as it is alone
        if outcome.failure is None and outcome.codes.get("E_INPUT_UNREADABLE"):
            unreadable.append(outcome.path)
        hold(outcome)

    with filling(work_dir, target, flag="--out", resume_after_interrupt=scale.engine == "dask"):
        totals = run_over(work, files, scale, label="incident import", manifest=Manifest(work_dir, key, folder, COMMAND),
                          preflight=None, keep_going=True, take=take)
        refused = totals.refused + len(unreadable)
        # a new (or empty) OUT appears whole; nothing could be imported: nothing appears
        with counted_before(totals.errors + refused):
            publish_and_list(work_dir, target, held, publish=refused < totals.inputs)
    if refused:
        return EXIT_REFUSED
    return EXIT_FAILED if totals.errors else EXIT_OK


def exports_in(walked: list[str], format_: str) -> list[str]:
    """The exports among the files of a folder (``walked`` as `replay read` walks one: sorted, temp names skipped)
    that ``--format`` reads: ``*.json`` for canonical, ``*.jsonl`` / ``*.ndjson`` logs for runledger and replay."""
    return [f for f in walked if f.endswith(EXPORT_SUFFIXES[format_])]


def nothing_to_import(folder: str, format_: str, walked: list[str]) -> ReplayError:
    """An import that found nothing to import in ``folder`` (``walked``: its files) is refused (the incident
    specification: invalid input exits 2), not a success that wrote nothing; the files of another --format there are
    named by count, with the flag to read them."""
    suffixes = EXPORT_SUFFIXES[format_]
    other = [(name, len(exports_in(walked, name))) for name in EXPORT_SUFFIXES if EXPORT_SUFFIXES[name] != suffixes]
    found = [(name, n) for name, n in other if n]
    fix = (f"The folder holds {found[0][1]} {'/'.join(EXPORT_SUFFIXES[found[0][0]])} file(s): give "
           + " or ".join(f"--format {name}" for name, _ in found) + " to import them." if found else
           "Give the folder that holds the exports, or one export file.")
    return ReplayError("E_INCIDENT_EXPORTS_NOT_FOUND", f"{folder!r} holds no {'/'.join(suffixes)} file to import "
                       f"(--format {format_}); nothing was written", path=folder,
                       expected=f"a folder with {'/'.join(suffixes)} exports", received="no such file", howToFix=fix)


def refuse_shared_folders(files: list[str], folder: str) -> None:
    """Refuse two exports that would share one folder (``a.jsonl`` and ``a.ndjson``)."""
    claimed: dict[str, str] = {}
    for path in files:
        name = folder_name(path, folder)
        if name in claimed:
            raise ReplayError("E_USAGE_INVALID", f"{claimed[name]!r} and {path!r} would both be imported into {name!r}",
                              received=[claimed[name], path], howToFix="Import one of them on its own, or rename it.")
        claimed[name] = path


def place_to_write(target: Path) -> Path:
    """Where this run writes: the partial sibling of OUT (a killed run's, to resume), inside OUT when it is an existing
    empty folder (filled in place). OUT itself must be new or empty, as for one export (``check_output_folder``): an
    import never writes into a used folder, its own either."""
    check_output_folder(str(target), "--out")
    return partial_sibling(target, inside=target.is_dir())
