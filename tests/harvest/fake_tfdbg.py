"""A stand-in for a script under tfdbg's readline CLI, speaking the same prompt protocol.

Live mode: `fake_tfdbg.py SPEC.json` behaves like a training script wrapped in
`LocalCLIDebugWrapperSession(sess, ui_type="readline")`. Offline mode:
`fake_tfdbg.py [--ui_type=readline] --dump_dir=DIR [--validate_graph=false]` behaves like
`python -m tensorflow.python.debug.cli.offline_analyzer` and reads `DIR/fake_spec.json`.

What it prints follows TensorFlow 2.21's tfdbg (checked against the real one): the
run-start screen, `tfdbg> ` after an empty line (readline `input`), `run` ending in the
run-end title and the `lt` listing, the failed-run intro, `lt > FILE` ("Wrote output to"),
`pt NAME -n K -w PATH` (np.save, "Saved value to: PATH (NB)"), tfdbg's `ERROR: ` messages,
and `exit` (live: "Note: user exited from debugger CLI: Calling sys.exit(1)." and status 1).
The live dump root is made under TMPDIR like tfdbg's `mkdtemp(prefix="tfdbg_")`, with
files named `<node>_<slot>_DebugIdentity_<timestamp>`.

Spec keys: `t0` (int us), `tensors` [{name, op_type, dumps: [{rel_us, value, dtype}]}],
`startup` ok|crash|hang, `run` ok|error|hang|crash, `pt_hang_at`/`pt_crash_at` (index of
the pt command), `pt_refuse` (names: "did not generate any dumps"), `pt_pickle` (names:
written as a pickled object array), `lt_file_fails`, `dump_root` tmp|elsewhere,
`linger_after_exit` (seconds before exiting).
"""

from __future__ import annotations

import json
import os
import re
import readline  # noqa: F401  (input() on a tty goes through readline, as in tfdbg)
import shutil
import sys
import tempfile
import time

import numpy as np

PROMPT = "tfdbg> "
DEVICE_DIR = "_tfdbg_device_,job_localhost,replica_0,task_0,device_CPU_0"
_QUOTES = re.compile(r"(\"[^\"]*\"|'[^']*')")


def parse_command(command: str) -> list[str]:
    """tfdbg's splitting: blanks split, except inside quotes; paired quotes are stripped."""
    quoted = [m.span() for m in _QUOTES.finditer(command)]
    args, start = [], 0
    for blank in [*re.finditer(r"\s+", command), None]:
        at, end = blank.span() if blank else (len(command), None)
        if any(a < at < b for a, b in quoted):
            continue
        arg = command[start:at]
        if len(arg) > 1 and arg[0] == arg[-1] and arg[0] in "\"'":
            arg = arg[1:-1]
        args.append(arg)
        start = end
    return args


class FakeTfdbg:
    def __init__(self, spec: dict, offline_dir: str | None) -> None:
        self.spec = spec
        self.offline_dir = offline_dir
        self.t0 = int(spec.get("t0", 1_600_000_000_000_000))
        dumps = []
        for tensor in spec["tensors"]:
            for index, dump in enumerate(tensor["dumps"]):
                dumps.append((dump["rel_us"], tensor, index, dump))
        dumps.sort(key=lambda d: d[0])
        self.dumps = dumps
        self.pt_count = 0
        self.run_number = 1
        self.dump_root: str | None = None

    # -- screens ---------------------------------------------------------------------
    def run_start_screen(self) -> None:
        print("run-start: run #1: 1 fetch (out/Softmax:0); 1 feed (x:0)")
        for line in ["", "TTTTTT FFFF DDD  BBBB   GGG ", "  TT   F    D  D B   B G    "]:
            print(line)
        print("")
        print("TensorFlow version: 2.21.0")
        print("")
        print("Select one of the following commands to proceed ---->")
        print("  run:")
        print("    Execute the run() call with debug tensor-watching")

    def tensor_list(self) -> list[str]:
        rows = []
        for rel_us, tensor, _index, dump in self.dumps:
            size = str(np.asarray(dump["value"], dtype=dump.get("dtype", "float32")).nbytes + 150)
            rows.append(("[%.3f]" % (rel_us / 1000.0), size, tensor["op_type"], tensor["name"]))
        time_w = max([len("t (ms)") + 1] + [len(r[0]) + 2 for r in rows])
        size_w = max([len("Size (B)") + 1] + [len(r[1]) + 1 for r in rows])
        type_w = max([len("Op type") + 1] + [len(r[2]) + 1 for r in rows])
        lines = [f"{len(rows)} dumped tensor(s):", ""]
        lines.append(
            "t (ms)".ljust(time_w)
            + "Size (B)".ljust(size_w)
            + "Op type".ljust(type_w)
            + "Tensor name"
        )
        for stamp, size, op_type, name in rows:
            lines.append(stamp.ljust(time_w) + size.ljust(size_w) + op_type.ljust(type_w) + name)
        return lines

    def error_intro(self) -> list[str]:
        return [
            "--------------------------------------",
            "!!! An error occurred during the run !!!",
            "",
            "You may use the following commands to debug:",
            "  ni -a -d -t bad:",
            "    Inspect information about the failing op.",
            "",
            "Op name:    bad",
            "Error type: <class 'tensorflow.python.framework.errors_impl.InvalidArgumentError'>",
            "",
            "Details:",
            "boom : Tensor had NaN values",
            "--------------------------------------",
            "",
            "lt",
            "  Aliases: list_tensors",
        ]

    # -- dump root -------------------------------------------------------------------
    def make_dump_root(self) -> None:
        if self.spec.get("dump_root", "tmp") != "tmp":
            return
        self.dump_root = tempfile.mkdtemp(prefix="tfdbg_")
        for rel_us, tensor, _index, _dump in self.dumps:
            node, slot = tensor["name"].rsplit(":", 1)
            scopes, _, base = node.rpartition("/")
            directory = (
                os.path.join(self.dump_root, DEVICE_DIR, *scopes.split("/"))
                if scopes
                else os.path.join(self.dump_root, DEVICE_DIR)
            )
            os.makedirs(directory, exist_ok=True)
            name = f"{base}_{slot}_DebugIdentity_{self.t0 + rel_us}"
            open(os.path.join(directory, name), "wb").close()
        open(os.path.join(self.dump_root, DEVICE_DIR, "_tfdbg_graph_hash1_1"), "wb").close()

    def remove_dump_root(self) -> None:
        if self.dump_root:
            shutil.rmtree(self.dump_root, ignore_errors=True)

    # -- commands --------------------------------------------------------------------
    def print_tensor(self, args: list[str]) -> list[str]:
        position = self.pt_count
        self.pt_count += 1
        if self.spec.get("pt_hang_at") == position:
            time.sleep(3600)
        if self.spec.get("pt_crash_at") == position:
            sys.stdout.flush()
            os.abort()
        name, number, write_path = args[0], -1, None
        rest = args[1:]
        while rest:
            flag = rest.pop(0)
            if flag in ("-n", "--number"):
                number = int(rest.pop(0))
            elif flag in ("-w", "--write_path"):
                write_path = rest.pop(0)
        node = name.rsplit(":", 1)[0]
        tensor = next((t for t in self.spec["tensors"] if t["name"] == name), None)
        if tensor is None and not any(
            t["name"].rsplit(":", 1)[0] == node for t in self.spec["tensors"]
        ):
            return [f'ERROR: Node "{node}" does not exist in partition graphs']
        if tensor is None or name in self.spec.get("pt_refuse", []):
            return [f'ERROR: Tensor "{name}" did not generate any dumps.']
        dumps = tensor["dumps"]
        if len(dumps) == 1 and number > 0:
            return [
                f"ERROR: Invalid number ({number}) for tensor {name}, which generated one dump."
            ]
        if number >= len(dumps):
            return [
                f"ERROR: Specified number ({number}) exceeds the number of available dumps "
                f"({len(dumps)}) for tensor {name}"
            ]
        dump = dumps[max(number, 0)]
        value = np.asarray(dump["value"], dtype=dump.get("dtype", "float32"))
        if name in self.spec.get("pt_pickle", []):
            value = np.array([b"a", None], dtype=object)
        label = f"{name}:DebugIdentity" + (f" (dump #{number})" if len(dumps) > 1 else "")
        lines = [f'Tensor "{label}":', f"  dtype: {value.dtype}", f"  shape: {value.shape}", ""]
        if write_path:
            with open(write_path, "wb") as handle:
                np.save(handle, value)  # tfdbg's own call: allow_pickle left at its default
            lines += [f"Saved value to: {write_path} ({os.path.getsize(write_path)}B)", ""]
        lines.append(repr(value))
        return lines

    def dispatch(self, command: str) -> list[str] | None:
        args = parse_command(command)
        if not args:
            return []
        output_file = None
        if len(args) > 2 and args[-2] == ">":
            output_file, args = args[-1], args[:-2]
        prefix, rest = args[0], args[1:]
        if prefix in ("lt", "list_tensors"):
            lines = self.tensor_list()
        elif prefix in ("pt", "print_tensor"):
            lines = self.print_tensor(rest)
        elif prefix in ("run", "r") and self.offline_dir is None:
            self.run_number = int(rest[1]) if rest[:1] in (["-t"], ["--times"]) else 1
            return None
        else:
            lines = [f'ERROR: Invalid command prefix "{prefix}"']
        for line in lines:
            print(line)
        if output_file:
            try:
                if self.spec.get("lt_file_fails"):
                    raise OSError("refused")
                with open(output_file, "w") as handle:
                    handle.write("\n".join(lines) + "\n")
                print(f"Wrote output to {output_file}")
            except OSError:
                print(f"Failed to write output to {output_file}")
        return lines

    def loop(self) -> str:
        """Read commands until `exit` or `run`; which one ended the loop."""
        while True:
            print("")
            command = input(PROMPT).strip()
            if command in ("exit", "quit"):
                return "exit"
            if self.dispatch(command) is None:
                return "run"

    # -- sessions --------------------------------------------------------------------
    def live(self) -> int:
        print("step -1: building the graph")
        startup = self.spec.get("startup", "ok")
        if startup == "crash":
            print("Traceback (most recent call last):\nRuntimeError: the model failed to build")
            return 3
        if startup == "hang":
            time.sleep(3600)
        self.run_start_screen()
        if self.loop() == "exit":
            return 1
        behaviour = self.spec.get("run", "ok")
        if behaviour == "hang":
            time.sleep(3600)
        if behaviour == "crash":
            sys.stdout.flush()
            os.abort()
        self.make_dump_root()
        print(f"run-end: run #{self.run_number}: 1 fetch (out/Softmax:0); 1 feed (x:0)")
        for line in self.error_intro() if behaviour == "error" else self.tensor_list():
            print(line)
        self.loop()
        self.remove_dump_root()
        print("step 0 [[0.1 0.9]]")
        time.sleep(float(self.spec.get("linger_after_exit", 0)))
        print("Note: user exited from debugger CLI: Calling sys.exit(1).", file=sys.stderr)
        return 1

    def offline(self) -> int:
        print(f"tfdbg offline: FLAGS.dump_dir = {self.offline_dir}")
        print(f"tfdbg offline @ {self.offline_dir}")
        for line in self.tensor_list():
            print(line)
        self.loop()
        return 0


def main(argv: list[str]) -> int:
    dump_dirs = [a.split("=", 1)[1] for a in argv if a.startswith("--dump_dir=")]
    if dump_dirs:
        with open(os.path.join(dump_dirs[0], "fake_spec.json"), encoding="utf-8") as handle:
            return FakeTfdbg(json.load(handle), dump_dirs[0]).offline()
    with open(argv[0], encoding="utf-8") as handle:
        return FakeTfdbg(json.load(handle), None).live()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
