"""The one byte spool (``engine.bytespool.ByteSpool``): bytes come back as appended, from memory and the file, buffered
or not; a write that fails leaves what was appended before readable (the file cut back)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from replay.pipeline.engine.bytespool import ByteSpool


@pytest.mark.parametrize(("memory", "buffer"), [(0, 0), (10, 0), (10, 7), (0, 1000)])
def test_bytes_come_back_as_appended(memory: int, buffer: int) -> None:
    spool, pieces = ByteSpool(memory=memory, buffer=buffer), [b"abc", b"", b"defgh", b"ijklmnop", b"q" * 50]
    starts = [spool.append(p) for p in pieces]
    whole = b"".join(pieces)
    try:
        assert spool.size == len(whole)
        assert [spool.read(s, s + len(p)) for s, p in zip(starts, pieces, strict=True)] == pieces
        assert spool.read(1, 20) == whole[1:20]  # across appends, memory and file
        assert b"".join(spool.chunks(4)) == whole
        assert (spool._file is not None) == (len(whole) > memory)  # no file unless past the memory
    finally:
        spool.close()


def test_a_write_that_fails_leaves_the_bytes_before_readable() -> None:
    script = textwrap.dedent("""
        import resource, signal
        from replay.pipeline.engine.bytespool import ByteSpool
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
        spool = ByteSpool()
        assert spool.append(b"a" * 600) == 0
        try:
            spool.append(b"b" * 600)
        except OSError:
            pass
        else:
            raise SystemExit("no OSError")
        assert spool.size == 600 and spool.read(0, 600) == b"a" * 600
        assert spool.append(b"c" * 300) == 600 and spool.read(590, 900) == b"a" * 10 + b"c" * 300
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "ok", done.stderr
