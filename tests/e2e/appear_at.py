"""Run `replay` and make a folder appear at TARGET (holding one file, someone else's) right before replay renames
something onto TARGET: the output folder made by someone else while the command ran (a Python audit hook: no mock).

    python appear_at.py TARGET replay-args...
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    target = os.path.abspath(sys.argv[1])
    args = sys.argv[2:]

    def hook(event: str, hook_args: tuple) -> None:
        if event == "os.rename" and os.path.abspath(os.fsdecode(hook_args[1])) == target and not os.path.exists(target):
            os.mkdir(target)
            with open(os.path.join(target, "theirs.txt"), "wb") as theirs:
                theirs.write(b"someone else's\n")

    sys.addaudithook(hook)
    from replay.pipeline.cli.app import main as replay_main

    sys.argv = ["replay", *args]
    replay_main()


if __name__ == "__main__":
    main()
