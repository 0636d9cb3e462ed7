"""The wheels that ``benchmarks.gpu_node`` needs on a GPU node without network:
the node has Python 3.12, PyTorch with CUDA, numba, numpy, pyarrow and pandas, but not Ray
nor a few of the project's pure-Python dependencies.

    python -m benchmarks.node_wheels [--out .whl] [--python-version 3.12]

Downloads, for CPython ``--python-version`` on manylinux x86-64, Ray (the version of
``constraints.txt``) and what the node lacks (``NODE_MISSING``), and rebuilds Ray's
wheel without what a single-node embedded Ray never loads: Java support (``ray/jars``,
31 MB), the dashboard's web front end (a Ray started with ``include_dashboard=False``
serves none), RLlib and Ray's LLM library. The result is about 41 MB, under the 64 MiB a
device call carries (``.whl`` must be ignored by git: ``echo /.whl/ >> .git/info/exclude``).
On the node: ``python3 -m pip install --no-index --no-deps --target /tmp/site .whl/*.whl``
and ``PYTHONPATH=/tmp/site:$PWD`` (``benchmarks/gpu_node_device.sh`` does both).
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Ray's requirements that the node's image lacks (jsonschema and its own), and sgfmill,
# which the evaluation suites import; versions from constraints.txt.
NODE_MISSING = ("jsonschema", "jsonschema-specifications", "referencing", "rpds-py", "sgfmill")
RAY_UNUSED = ("ray/jars/", "ray/dashboard/client/build/", "ray/rllib/", "ray/llm/")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64")


def pinned(name: str) -> str:
    """``name==version`` as constraints.txt pins it."""
    text = (ROOT / "constraints.txt").read_text()
    match = re.search(rf"^{re.escape(name)}==([^\s;]+)", text, re.MULTILINE | re.IGNORECASE)
    if match is None:
        raise SystemExit(f"node_wheels: {name} is not pinned in constraints.txt")
    return f"{name}=={match.group(1)}"


def download(requirement: str, dest: Path, python_version: str) -> Path:
    before = set(dest.iterdir())
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", python_version, "--implementation", "cp", *platforms,
                    "-d", str(dest), requirement], check=True)
    new = set(dest.iterdir()) - before
    if new:
        return sorted(new)[0]
    prefix = re.sub("[-_]", "_", requirement.split("==")[0]).lower()  # already there: pip kept it
    return sorted(p for p in dest.iterdir() if p.name.lower().startswith(prefix))[0]


def slim(wheel: Path, out: Path, drop: tuple[str, ...] = RAY_UNUSED) -> int:
    """``wheel`` rewritten to ``out`` without the entries under ``drop``, and without their
    lines in RECORD (pip checks that every listed file exists); returns entries dropped."""
    with zipfile.ZipFile(wheel) as zin:
        infos = zin.infolist()
        record = [i.filename for i in infos if i.filename.count("/") == 1 and i.filename.endswith(".dist-info/RECORD")]
        if len(record) != 1:
            raise SystemExit(f"node_wheels: {wheel.name} has {len(record)} RECORD files")
        rows = [r for r in csv.reader(io.StringIO(zin.read(record[0]).decode())) if r and not r[0].startswith(drop)]
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows)
        dropped = 0
        tmp = out.with_suffix(".tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zout:
            for info in infos:
                if info.filename.startswith(drop):
                    dropped += 1
                    continue
                data = text.getvalue().encode() if info.filename == record[0] else zin.read(info)
                entry = zipfile.ZipInfo(info.filename, date_time=info.date_time)
                entry.external_attr, entry.create_system = info.external_attr, info.create_system  # keep +x
                zout.writestr(entry, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    os.replace(tmp, out)
    return dropped


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.node_wheels", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / ".whl")
    p.add_argument("--python-version", default="3.12")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        raw = download(pinned("ray"), Path(tmp), args.python_version)
        dropped = slim(raw, args.out / raw.name)
        print(f"{raw.name}: {raw.stat().st_size / 2**20:.1f} MiB -> "
              f"{(args.out / raw.name).stat().st_size / 2**20:.1f} MiB ({dropped} entries dropped)")
    for name in NODE_MISSING:
        print(download(pinned(name), args.out, args.python_version).name)
    total = sum(f.stat().st_size for f in args.out.glob("*.whl"))
    print(f"{args.out}: {total / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
