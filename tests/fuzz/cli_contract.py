"""The CLI's error and output contract, fuzzed: the real `replay` executable run with generated argv and inputs.

One example (``run_example``) builds a fresh temp folder, writes generated inputs into it (journals from
examples/journals and the real corpus, mutated: bytes flipped, cut, CRLF, a BOM, bytes that are not UTF-8,
huge integers, deep nesting, keys written twice, blank lines; .gz whole and cut; empty files), draws a
command, its arguments and its flags from the command's own click definition (what its ``--help`` prints:
choices, ranges, flags) with odd values (empty, ``-``, folders, missing files, numbers at and past bounds,
unicode), runs ``replay`` as a process in that folder, and returns every way the run broke the contract:

- no traceback: every stderr line is one JSON object; no ``E_UNHANDLED`` nor ``E_STAGE_FAILED``;
- every ``{"error": ...}`` carries a code ERROR_CODES.md lists, a message and a ``howToFix``;
- the exit code is one README's "Errors and exit codes" allows: 0 with no error, 1 with one (or a gate:
  ``report --fail-on-error``, ``incident --gate``), 2 with one and nothing on stdout; a usage error or a
  missing input is 2;
- stdout is data: each line JSON for the commands that write JSONL, one JSON document for those that write one;
- the inputs (every file in the folder that is no output) are byte for byte as they were;
- an output (``--out``, ``--log``, ``--to``) is as it was after a refused run (2), whole after a run that
  wrote it, and no ``*.replay.tmp`` or ``.partial`` is left anywhere in the folder.

``tests/fuzz/test_cli_contract.py`` runs a few derandomized examples in `make test`; ``fuzz_cli.py`` runs
thousands and collects the distinct findings (`make fuzz`).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import orjson
from hypothesis import strategies as st

from replay.pipeline.cli.app import cli as CLI_GROUP

ROOT = Path(__file__).resolve().parents[2]
REPLAY = str(Path(sys.executable).parent / "replay")
CODES = frozenset(line.split("`")[1] for line in (ROOT / "ERROR_CODES.md").read_text().splitlines()
                  if line.startswith("| `E_"))
BUGS = frozenset({"E_UNHANDLED", "E_STAGE_FAILED", "E_STAGE_RESULT_INVALID"})
TIMEOUT = 60

# The commands fuzzed, as click paths; what their stdout holds (jsonl: lines of JSON; doc: one JSON document).
COMMANDS: dict[tuple[str, ...], str] = {
    ("read",): "jsonl", ("heal",): "jsonl", ("validate",): "jsonl", ("report",): "report", ("walk",): "walk",
    ("write",): "write", ("diff",): "diff", ("script",): "doc", ("export",): "jsonl", ("schema",): "schema",
    ("stages",): "stages", ("golden", "check"): "jsonl", ("incident", "import"): "jsonl",
    ("incident", "inspect"): "jsonl", ("incident", "promote"): "jsonl", ("incident", "replay"): "jsonl",
}
# Not fuzzed: --follow (reads forever), a Dask cluster (--engine dask, --scheduler: seconds to start, and a
# scheduler address is a network contact), and --workers above 2 (the machine's cores are shared).
SKIPPED_OPTIONS = frozenset({"follow", "engine", "scheduler"})
OUTPUT_OPTIONS = {"out", "log", "to"}

EXAMPLE_FILES = sorted((ROOT / "examples" / "journals").glob("*.jsonl")) + sorted(
    p for p in (ROOT / "tests" / "fixtures" / "corpus").rglob("*") if p.suffix in (".jsonl", ".json"))
SESSIONS = sorted((ROOT / "examples" / "echo-agent" / "scenarios").rglob("session.jsonl"))
INCIDENTS = [ROOT / "examples" / "incidents" / "refund-export.json",
             ROOT / "examples" / "incidents" / "raw-logs" / "refund-run.jsonl"]
RULES = ROOT / "examples" / "incidents" / "rules.json"
MAX_SEED = 6 * 1024


def _seed_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if len(data) > MAX_SEED:
        cut = data.rfind(b"\n", 0, MAX_SEED)
        data = data[: cut + 1] if cut > 0 else data[:MAX_SEED]
    return data


def _bundles() -> list[bytes]:
    """An incident bundle (`incident import`'s incident.json) and its promoted fixture, made once by replay itself."""
    with tempfile.TemporaryDirectory(prefix="replay-cli-fuzz-seed-") as tmp:
        subprocess.run([REPLAY, "incident", "import", str(INCIDENTS[0]), "--out", f"{tmp}/imported"], cwd=tmp,
                       capture_output=True, check=True)
        subprocess.run([REPLAY, "incident", "promote", f"{tmp}/imported/incident.json", "--to", f"{tmp}/case.json"],
                       cwd=tmp, capture_output=True, check=True)
        return [Path(f"{tmp}/imported/incident.json").read_bytes(), Path(f"{tmp}/case.json").read_bytes()]


BUNDLES = _bundles()
SEEDS = [_seed_bytes(p) for p in [*EXAMPLE_FILES, *SESSIONS, *INCIDENTS, RULES]] + BUNDLES
AGENT = ROOT / "examples" / "incidents" / "replay_agent.py"


def command_of(path: tuple[str, ...]) -> click.Command:
    command: click.Command = CLI_GROUP
    with click.Context(CLI_GROUP) as ctx:
        for name in path:
            assert isinstance(command, click.Group)
            found = command.get_command(ctx, name)
            assert found is not None, name
            command = found
    return command


# ---------------------------------------------------------------------------------------------- inputs


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A seed journal with a few mutations."""
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2, 3]))):
        kind = draw(st.sampled_from(["flip", "cut", "crlf", "bom", "utf8", "hugeint", "deep", "dupkey", "blank",
                                     "line", "nothing"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "cut":
            del data[at:]
        elif kind == "crlf":
            data = bytearray(bytes(data).replace(b"\n", b"\r\n"))
        elif kind == "bom":
            data[0:0] = b"\xef\xbb\xbf"
        elif kind == "utf8":
            data[at:at] = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x00"]))
        elif kind == "hugeint":
            digits = draw(st.sampled_from([19, 20, 400, 5000]))
            data[at:at] = b"9" * digits
        elif kind == "deep":
            depth = draw(st.sampled_from([20, 21, 1023, 1024, 1025, 3000]))
            line = b'{"seq":1,"type":"x","payload":' + b"[" * depth + b"]" * depth + b"}\n"
            data[at:at] = line if draw(st.booleans()) else line[:-1]
        elif kind == "dupkey":
            data[at:at] = b'{"seq":1,"seq":2,"type":"run_started","type":"x","runId":"r1","payload":{}}\n'
        elif kind == "blank":
            data[at:at] = draw(st.sampled_from([b"\n", b"\n\n", b"   \n", b"\t\r\n"]))
        elif kind == "line":
            data[at:at] = draw(st.sampled_from([
                b'{"$record":"run","runId":"r1"}\n', b'[1,2]\n', b'"text"\n', b'null\n', b'1e400\n',
                b'{"seq":-1,"timestamp":"x","type":"tool_completed","runId":"","payload":[]}\n',
                b'{"type":"user","uuid":"u","sessionId":"s","message":{"role":"user","content":"\\ud83d"}}\n',
                b'{"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{"type":"message"}}\n',
            ]))
    return bytes(data)


DIALECT_LOGS = sorted(str(p) for p in (ROOT / "tests" / "fixtures" / "corpus").rglob("*") if p.suffix in (".jsonl", ".json"))


@functools.cache
def _mapped(log: str, command: str) -> bytes:
    """Another agent's log as `replay read` (or `heal`) maps it: canonical events that keep their `$origin`."""
    return subprocess.run([REPLAY, command, log], capture_output=True, check=False, cwd=tempfile.gettempdir()).stdout


def _mutate_json(draw: st.DrawFn, data: bytes) -> bytes:
    """A JSON document with one value changed: a field dropped, a type changed, a number at a bound."""
    doc = orjson.loads(data)
    node: Any = doc
    for _ in range(draw(st.integers(0, 4))):
        keys = list(node) if isinstance(node, dict) else list(range(len(node))) if isinstance(node, list) else []
        if not keys:
            break
        key = draw(st.sampled_from(keys))
        if not isinstance(node[key], (dict, list)) or draw(st.booleans()):
            node[key] = draw(st.sampled_from([None, -1, 0, 2**64, "", "ünï", [], {}, True, 1.5]))
            break
        node = node[key]
    return json.dumps(doc).encode()  # (not orjson: 2**64 is an integer it does not write)


@st.composite
def input_file(draw: st.DrawFn) -> tuple[str, bytes]:
    """(suffix, bytes): a mutated journal, an empty file, or one gzipped (whole or cut)."""
    kind = draw(st.sampled_from(["journal", "journal", "journal", "mapped", "empty", "gz", "gzcut", "binary"]))
    if kind == "empty":
        return draw(st.sampled_from([".jsonl", ".json", ""])), b""
    if kind == "binary":
        return ".jsonl", draw(st.binary(max_size=300))
    data = draw(mutated()) if kind != "mapped" else _mapped(draw(st.sampled_from(DIALECT_LOGS)),
                                                                 draw(st.sampled_from(["read", "heal"])))
    if kind.startswith("gz"):
        packed = gzip.compress(data, mtime=0)
        if kind == "gzcut":
            packed = packed[: draw(st.integers(0, max(0, len(packed) - 1)))]
        return draw(st.sampled_from([".jsonl.gz", ".gz", ".json.gz"])), packed
    return draw(st.sampled_from([".jsonl", ".jsonl", ".json", ".ndjson", ".txt", ""])), data


NAMES = ["run", "a b", "ünïcode-日本", "-dash", "run.replay.tmp.x", "x" * 120, "emoji-\U0001f600", "q'uote\"s", "semi;colon"]


@dataclass
class Example:
    """One run: where, what argv, what stdin, and what the run may change."""

    folder: Path
    argv: list[str]
    stdin: bytes
    command: tuple[str, ...]
    outputs: list[str] = field(default_factory=list)  # as given on the command line (relative to folder)
    output_kinds: dict[str, str] = field(default_factory=dict)  # what each holds: jsonl, doc, report, folder, any
    files: list[str] = field(default_factory=list)  # the inputs written (relative to folder)
    named: list[str] = field(default_factory=list)  # the paths given as inputs (arguments, --in)
    missing_inputs: bool = False
    usage_error: bool = False
    exit_code: int | None = None
    first_error: str | None = None
    stdout_into: str | None = None  # stdout appended to this file (relative to folder), not a pipe


def _name(draw: st.DrawFn, suffix: str) -> str:
    return draw(st.sampled_from(NAMES)) + suffix


@st.composite
def example(draw: st.DrawFn, folder: Path) -> Example:
    command = draw(st.sampled_from(list(COMMANDS)))
    work = folder / "work"
    (work / "dir").mkdir(parents=True)
    (work / "emptydir").mkdir()
    (work / "afile").write_bytes(b'{"seq":1}\n')
    files: list[str] = []
    for i in range(draw(st.integers(1, 4))):
        suffix, data = draw(input_file())
        where = draw(st.sampled_from(["", "", "dir/", "dir/sub/"]))
        name = f"{where}{i}{_name(draw, suffix)}"
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_bytes(data)
        files.append(name)
    bundle, case = BUNDLES
    (work / "incident.json").write_bytes(draw(st.sampled_from([bundle, bundle, _mutate_json(draw, bundle)])))
    (work / "case.json").write_bytes(draw(st.sampled_from([case, case, _mutate_json(draw, case)])))
    (work / "link.jsonl").symlink_to(files[0])
    (work / "linkdir").symlink_to("dir")
    (work / "rules.json").write_bytes(draw(st.sampled_from([RULES.read_bytes(), b"[]", b"{", b'[{"id":1}]'])))
    ex = Example(work, [], b"", command, files=files)
    argv: list[str] = []
    if draw(st.integers(0, 9)) == 0:
        argv += ["--max-errors", draw(st.sampled_from(["0", "1", "-1", "99999999999999999999", "x", ""]))]
    if draw(st.integers(0, 9)) == 0:
        argv += ["--log-level", draw(st.sampled_from(["debug", "info", "error", "loud", ""]))]
    cmd = command_of(command)
    arguments = _arguments(draw, cmd, command, files, ex)
    options: list[str] = ["--otlp"] if command == ("export",) and draw(st.integers(0, 4)) else []
    required = [o for o in _options(cmd) if o.required and draw(st.integers(0, 9))]
    drawn = draw(st.lists(st.sampled_from(_options(cmd)), max_size=4, unique_by=lambda o: o.name))
    for option in required + [o for o in drawn if o not in required]:
        options += _option(draw, option, command, files, ex)
    ex.argv = argv + list(command) + (options + arguments if draw(st.booleans()) else arguments + options)
    ex.stdin = draw(st.sampled_from([b"", b"", draw(mutated())]))
    if draw(st.integers(0, 9)) == 0:  # stdout into a file: a new one, or an input (`replay read x >> x`)
        ex.stdout_into = draw(st.sampled_from(["stdout.txt", *ex.named, *files]))
        if ex.stdout_into == "stdout.txt":
            (work / "stdout.txt").write_bytes(b"")
    return ex


def _options(cmd: click.Command) -> list[click.Option]:
    return [p for p in cmd.params if isinstance(p, click.Option) and p.name not in SKIPPED_OPTIONS
            and "--help" not in p.opts] or [click.Option(["--help"])]


def _path_value(draw: st.DrawFn, files: list[str], ex: Example) -> str:
    value = _a_path(draw, files, ex)
    ex.named.append(value)
    return value


def _a_path(draw: st.DrawFn, files: list[str], ex: Example) -> str:
    kind = draw(st.sampled_from(["file"] * 8 + ["dir", "dir", "emptydir", "-", "", "missing", "afile/under", "unicode",
                                                 "link", "/dev/null"]))
    if kind in ("link", "/dev/null"):
        return {"link": "link.jsonl"}.get(kind, kind)
    if kind == "file":
        return draw(st.sampled_from(files))
    if kind == "missing":
        ex.missing_inputs = True
        return draw(st.sampled_from(["missing.jsonl", "nope/x.json", "gone.jsonl.gz"]))
    if kind == "afile/under":
        ex.missing_inputs = True
        return "afile/under.jsonl"
    if kind == "unicode":
        ex.missing_inputs = True
        return "ünï\u200bcode.jsonl"
    return {"dir": "dir", "emptydir": "emptydir", "-": "-", "": ""}[kind]


def _arguments(draw: st.DrawFn, cmd: click.Command, command: tuple[str, ...], files: list[str],
               ex: Example) -> list[str]:
    out: list[str] = []
    for param in cmd.params:
        if not isinstance(param, click.Argument):
            continue
        if command == ("schema",):
            out += draw(st.sampled_from([[], ["event"], ["stream"], ["replay-artifact"], ["nope"], [""], ["../x"]]))
            continue
        if command == ("walk",) or command == ("diff",):
            count = 1 if command == ("walk",) else 2
            for _ in range(draw(st.sampled_from([count, count, count - 1, count + 1]))):
                out.append(draw(st.one_of(st.just("RUNID"), st.sampled_from(
                    ["run_20260301T120000_3fa9c1", "r1", "../etc", "", "-", "a" * 300]))) if draw(
                    st.integers(0, 3)) == 0 else _path_value(draw, files, ex))
            out = [o for o in out if o != "RUNID"]
            continue
        many = param.nargs == -1
        count = draw(st.integers(0, 3)) if many else (draw(st.sampled_from([1, 1, 1, 0])) if param.required
                                                      else draw(st.integers(0, 1)))
        if not many and param.nargs > 1:
            count = param.nargs
        if command in (("incident", "inspect"), ("incident", "promote"), ("incident", "replay")) and count:
            out.append(draw(st.sampled_from(["incident.json", "incident.json", "case.json", *files, "afile", "dir"])))
            ex.named.append(out[-1])
            continue
        out += [_path_value(draw, files, ex) for _ in range(count)]
    return out


def _output_kind(command: tuple[str, ...], name: str) -> str:
    if name == "log":
        return "jsonl"
    if name == "to" or command == ("script",):
        return "doc"
    if command == ("report",):
        return "report"
    if command in (("write",), ("export",)):
        return "jsonl"  # (write --dialect: see check)
    return "folder"


def _option(draw: st.DrawFn, option: click.Option, command: tuple[str, ...], files: list[str],
            ex: Example) -> list[str]:
    flag = draw(st.sampled_from(option.opts))
    if option.is_flag:
        if option.secondary_opts and draw(st.booleans()):
            return [option.secondary_opts[0]]
        return [flag]
    name = next((o for o in option.opts if o.startswith("--")), "--x")[2:].replace("-", "_")  # (the flag: dests vary)
    kind = option.type
    if name in OUTPUT_OPTIONS:
        value = draw(st.sampled_from(["out.jsonl", "out.json", "out.html", "out.md", "out.xml", "outdir", "newdir/x",
                                      "new/a/b", "new/a/b.jsonl", "new/a/b.html", "afile", "emptydir", "dir", "", "-",
                                      "afile/under", "/dev/null", "out-ünï.jsonl", "link.jsonl", "linkdir", "out/",
                                      files[0]]))
        ex.outputs.append(value)
        ex.output_kinds[value] = _output_kind(command, name)
        return [flag, value]
    if isinstance(kind, click.Choice):
        value = draw(st.sampled_from(list(kind.choices))) if draw(st.integers(0, 4)) else draw(
            st.sampled_from(["", "nope", "AUTO", "-"]))
        if value not in kind.choices:
            ex.usage_error = True
        return [flag, value]
    if isinstance(kind, click.types._NumberRangeBase) or kind is click.INT or isinstance(kind, click.types.IntParamType):
        low = getattr(kind, "min", None)
        candidates = ["0", "1", "2", "-1", "-99999999999999999999", "99999999999999999999", "2147483648", "1e3", "x",
                      "", "٣"]
        if name == "workers":
            candidates = ["1", "2", "0", "-1", "x", ""]
        if low is not None:
            candidates += [str(low), str(low - 1)]
        sane = [str(low if low is not None else 1), "2", "100", "65536"] if name != "workers" else ["1", "2"]
        value = draw(st.sampled_from(sane if draw(st.integers(0, 3)) else candidates))
        try:
            number = int(value)
        except ValueError:
            ex.usage_error = True
        else:
            if low is not None and number < low:  # (Python's int: '٣' is 3, as click reads it)
                ex.usage_error = True
        return [flag, value]
    if name in ("rules", "override", "in", "data_dir", "redact", "agent_command", "ignore", "time_key", "id_key",
                "ignore_key", "graph", "case", "title", "at", "timeout_ms"):
        value = {
            "rules": lambda: draw(st.sampled_from(["rules.json", "missing.json", "dir", "", "-", files[0]])),
            "override": lambda: draw(st.sampled_from(["rules.json", "missing.json", "dir", "", files[0]])),
            "in": lambda: _path_value(draw, files, ex),
            "data_dir": lambda: draw(st.sampled_from(["dir", "missing", "", ".", "afile"])),
            "redact": lambda: draw(st.sampled_from(["/input", "/events/*/args", "", "x", "/", "/~2"])),
            "agent_command": lambda: draw(st.sampled_from(["[]", "x", '["/nonexistent/agent"]', '["true"]', '[1]',
                                                          '["' + sys.executable + '","-c","pass"]',
                                                          orjson.dumps([sys.executable, str(AGENT)]).decode(),
                                                          orjson.dumps([sys.executable, str(AGENT)]).decode()])),
            "case": lambda: draw(st.sampled_from(["refund-case", "greeting-case", "r1", "", "nope"])),
            "graph": lambda: draw(st.sampled_from(["heal", "read", "walk-log", "nope", ""])),
            "timeout_ms": lambda: draw(st.sampled_from(["1", "0", "-5", "1000", "x", "99999999999999999999"])),
        }.get(name, lambda: draw(st.sampled_from(["x", "", "-", "payload.model", "**", "ünï", "a" * 200, "c1"])))()
        return [flag, value]
    return [flag, draw(st.sampled_from(["x", "", "-", "1", "ünï"]))]


# ---------------------------------------------------------------------------------------------- the contract


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under folder: a file's SHA-256, None for a folder, a link's target."""
    out: dict[str, bytes | None] = {}
    for path in folder.rglob("*"):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            out[rel] = os.readlink(path).encode()
        else:
            out[rel] = None if path.is_dir() else hashlib.sha256(path.read_bytes()).digest()
    return out


def _error_lines(stderr: bytes, problems: list[str]) -> list[dict[str, Any]]:
    errors: list[dict[str, Any]] = []
    for line in stderr.splitlines():
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            problems.append(f"stderr line is not JSON: {line[:160]!r}")
            continue
        if isinstance(value, dict) and "error" in value:
            errors.append(value["error"])
    return errors


def _check_stdout(kind: str, argv: list[str], code: int, out: bytes, problems: list[str]) -> None:
    if code == 2 or not out or "--help" in argv or "-h" in argv:
        return
    if kind == "report":
        fmt = argv[argv.index("--format") + 1] if "--format" in argv else "text"
        kind = "doc" if fmt == "json" else "text"
    elif kind == "walk":
        kind = "jsonl" if "--json" in argv else "text"
    elif kind == "diff":
        kind = "doc" if "--json" in argv else "text"
    elif kind in ("schema", "stages"):
        kind = "doc" if (kind == "schema" and len(argv) > argv.index("schema") + 1) or "--json" in argv else "text"
    elif kind == "write":
        kind = "text" if "--dialect" in argv else "jsonl"
    if kind == "jsonl":
        if not out.endswith(b"\n"):
            problems.append(f"stdout does not end with a newline: ...{out[-80:]!r}")
        for line in out.splitlines():
            try:
                orjson.loads(line)
            except orjson.JSONDecodeError:
                problems.append(f"stdout line is not JSON: {line[:160]!r}")
                return
    elif kind == "doc":
        try:
            orjson.loads(out)
        except orjson.JSONDecodeError:
            problems.append(f"stdout is not one JSON document: {out[:160]!r}")


def _complete(path: Path, kind: str) -> str | None:
    """Why the output at path is not whole (None: it is). ``kind``: what it holds (folder: each file by its name)."""
    if path.is_dir():
        for inner in path.rglob("*"):
            if inner.is_file():
                why = _complete(inner, {".jsonl": "jsonl", ".json": "doc", ".html": "html"}.get(inner.suffix, "any"))
                if why:
                    return f"{inner.name}: {why}"
        return None
    data = path.read_bytes()
    if kind == "jsonl" and data:
        if not data.endswith(b"\n"):
            return "a JSONL output that does not end with a newline"
        for line in data.splitlines():
            try:
                orjson.loads(line)
            except orjson.JSONDecodeError:
                return f"a line that is not JSON: {line[:120]!r}"
    if kind == "doc" and data:
        try:
            orjson.loads(data)
        except orjson.JSONDecodeError:
            if not all(_loads(line) for line in data.splitlines() if line.strip()):  # JSON lines in a .json name
                return f"not JSON: {data[:120]!r}"
    if kind == "html" and data and b"</html>" not in data[-200:]:
        return "an HTML report that does not end in </html>"
    return None


def _loads(line: bytes) -> bool:
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


def _bounded_files() -> None:
    """No file of more than 64 MiB (a run that writes without end fails, EFBIG, and is found, not a full disk)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 26, 1 << 26))


def check(ex: Example) -> list[str]:
    """Run the example; every way it broke the contract."""
    problems: list[str] = []
    before = _snapshot(ex.folder.parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DASK_", "REPLAY_"))}
    env.update(HOME=str(ex.folder.parent), TMPDIR=str(ex.folder.parent))
    try:
        if ex.stdout_into is None or not (ex.folder / ex.stdout_into).is_file():
            ex.stdout_into = None
            done = subprocess.run([REPLAY, *ex.argv], input=ex.stdin, capture_output=True, cwd=ex.folder, env=env,
                                  timeout=TIMEOUT, check=False, preexec_fn=_bounded_files)
        else:
            with open(ex.folder / ex.stdout_into, "ab") as into:
                done = subprocess.run([REPLAY, *ex.argv], input=ex.stdin, stdout=into, stderr=subprocess.PIPE,
                                      cwd=ex.folder, env=env, timeout=TIMEOUT, check=False, preexec_fn=_bounded_files)
    except subprocess.TimeoutExpired:
        return [f"no end within {TIMEOUT} s"]
    code, out, err = done.returncode, done.stdout or b"", done.stderr
    ex.exit_code = code
    if b"Traceback (most recent call last)" in err:
        problems.append("a Python traceback on stderr")
    errors = _error_lines(err, problems)
    ex.first_error = str(errors[0].get("code")) if errors else None
    for error in errors:
        code_name = error.get("code")
        if code_name in BUGS:
            problems.append(f"{code_name}: {str(error.get('message'))[:200]}")
        elif code_name not in CODES:
            problems.append(f"code {code_name!r} is not in ERROR_CODES.md")
        if not error.get("howToFix") or not error.get("message"):
            problems.append(f"{code_name} without a message or howToFix")
    gate = "--fail-on-error" in ex.argv or "--gate" in ex.argv
    if code not in (0, 1, 2):
        problems.append(f"exit {code}")
    if code == 0 and errors:
        problems.append(f"exit 0 with an error: {errors[0].get('code')}")
    if code == 1 and not errors and not gate:
        problems.append("exit 1 without an error on stderr")
    if code == 2:
        if not errors:
            problems.append("exit 2 without an error on stderr")
        if out:
            problems.append(f"exit 2 (refused) after writing to stdout: {out[:80]!r}")
    if ex.missing_inputs and code != 2 and not {"-h", "--help"} & set(ex.argv):
        problems.append(f"an input that is not there, exit {code} (not 2)")
    if ex.usage_error and code != 2:
        problems.append(f"a bad option value, exit {code} (not 2)")
    _check_stdout(COMMANDS[ex.command], ex.argv, code, out, problems)
    _check_files(ex, before, code, problems)
    return problems


def _check_files(ex: Example, before: dict[str, bytes | None], code: int, problems: list[str]) -> None:
    root = ex.folder.parent
    after = _snapshot(root)
    prefix = ex.folder.name + "/"
    outputs = {rel for rel in map(lambda o: _inside(ex, o), [*ex.outputs, *([ex.stdout_into] if ex.stdout_into
                                                                            else [])]) if rel is not None}
    named = {prefix + f for f in ex.files if any(f == n or f.startswith(n.rstrip("/") + "/") or n in (".", "./")
                                                 for n in ex.named)}
    for rel, digest in before.items():
        if rel in named and after.get(rel, b"gone") != digest:
            problems.append(f"the input {rel!r} was {'removed' if rel not in after else 'changed'}")
            continue
        if any(rel == o or rel.startswith(o + "/") for o in outputs) and code != 2:
            continue
        if after.get(rel, b"gone") != digest:
            problems.append(f"{rel!r} changed ({'removed' if rel not in after else 'rewritten'})"
                            f"{' by a refused run' if any(rel == o for o in outputs) else ''}")
    for rel in after:
        name = rel.rsplit("/", 1)[-1]
        if name.endswith(".replay.tmp") or ".partial" in name:
            problems.append(f"a temp left behind: {rel!r}")
        elif rel not in before and code == 2:
            problems.append(f"a refused run created {rel!r}")
        elif rel not in before and not any(rel == o or rel.startswith(o + "/") or o.startswith(rel + "/")
                                           for o in outputs):
            problems.append(f"a run created {rel!r}, which is no output it was given")
    for value in ex.outputs:
        rel = _inside(ex, value)
        if rel is None:
            continue
        path = root / rel
        if rel in after and after[rel] != before.get(rel, b"-"):
            why = _complete(path, _resolved_kind(ex, value))
            if why:
                problems.append(f"output {rel!r} is not whole: {why}")


def _inside(ex: Example, value: str) -> str | None:
    """The output ``value`` names, relative to the example's root (None: stdout, a device, or outside it)."""
    root = ex.folder.parent.resolve()
    if value in ("", "-", "/dev/null") or not (ex.folder / value).resolve().is_relative_to(root):
        return None
    return str((ex.folder / value).resolve().relative_to(root))


def _resolved_kind(ex: Example, value: str) -> str:
    kind = ex.output_kinds.get(value, "any")
    if kind == "jsonl" and ex.command == ("write",) and "--dialect" in ex.argv:
        return "any"  # (OpenHands, mini-swe-agent: a document per run)
    if kind == "report":
        fmt = ex.argv[ex.argv.index("--format") + 1] if "--format" in ex.argv else {
            ".json": "json", ".html": "html"}.get(Path(value).suffix, "text")
        return {"json": "doc", "html": "html"}.get(fmt, "any")
    return kind


def run_example(ex_factory: Any) -> tuple[Example, list[str]]:
    """Draw an example in a new temp folder, run it, and remove the folder."""
    base = Path(tempfile.mkdtemp(prefix="replay-cli-fuzz-"))
    try:
        ex = ex_factory(base)
        return ex, check(ex)
    finally:
        shutil.rmtree(base, ignore_errors=True)
