"""The benchmark harness: build every kernel with enzyme-cc (pre-AD optimisation on and
off), with real Enzyme (the LLVM 15 plugin, ``enzyme_peer.py``) and with ADOL-C, run
each kernel and size once per tool, check every tool's derivative against EnzymePy's,
and write the Markdown table, the PNG chart and the raw JSON under
``benchmarks/results/``.  The C tools run with a heap counter preloaded
(``memcount.c``), which gives the peak heap bytes of one gradient and one primal call.

    python -m benchmarks                 # default preset (a few minutes)
    python -m benchmarks --quick         # tiny sizes, seconds
    python -m benchmarks --full          # ADBench's larger sizes (tens of minutes)
    python -m benchmarks --kernels gmm,ba --peers adolc,torch
    python -m benchmarks --kernels gmm_adbench --peers enzyme15,fd

Each tool runs in its own process; within one process the primal and the derivative
are timed in interleaved batches (warm-up first, then ``--reps`` repeats, medians), so the
gradient/primal ratio is computed from numbers taken side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .dumpfile import max_rel_diff, read_vector

HERE = Path(__file__).resolve().parent
KERNELS_DIR = HERE / "kernels"
KERNELS = ["gmm", "ba", "lstm", "gmm_adbench", "ba_adbench", "lstm_adbench",
           "heat1d", "heat2d", "rk4", "scan", "spmv"]
PEERS = ["enzyme15", "adolc", "torch", "jax", "fd"]
# kernels written over plain double, as their published C is: no ADOL-C version
NO_ADOLC = {"gmm_adbench", "ba_adbench", "lstm_adbench"}

# (kernel, sizes) per preset.  ADBench's GMM sizes are d in {2..64}, k in {5..200},
# n in {1k, 10k}; BA's smallest data set has 21 cameras, 11315 points, 36455
# observations; LSTM has l in {2, 4}, c = 1024, b = 14 symbols.
PRESETS: dict[str, list[tuple[str, tuple[int, ...]]]] = {
    "quick": [
        ("gmm", (2, 5, 100)), ("ba", (5, 100, 500)), ("lstm", (2, 32)),
        ("gmm_adbench", (2, 5, 100)), ("ba_adbench", (5, 100, 500)), ("lstm_adbench", (2, 32)),
        ("heat1d", (200, 50)), ("heat2d", (16, 20)), ("rk4", (20, 100)),
        ("scan", (10000,)), ("spmv", (1000, 8, 2)),
    ],
    "default": [
        ("gmm", (10, 25, 1000)), ("ba", (21, 11315, 36455)), ("lstm", (2, 1024)),
        ("gmm_adbench", (10, 25, 1000)), ("ba_adbench", (21, 11315, 36455)),
        ("lstm_adbench", (2, 1024)),
        ("heat1d", (1000, 1000)), ("heat2d", (64, 200)), ("rk4", (40, 2000)),
        ("scan", (1000000,)), ("spmv", (100000, 8, 4)),
    ],
    "full": [
        ("gmm", (10, 25, 1000)), ("gmm", (20, 50, 10000)), ("gmm", (64, 200, 1000)),
        ("ba", (21, 11315, 36455)), ("ba", (257, 65132, 225911)),
        ("lstm", (2, 1024)), ("lstm", (4, 1024)),
        ("gmm_adbench", (10, 25, 1000)), ("gmm_adbench", (10, 25, 10000)),
        ("ba_adbench", (21, 11315, 36455)), ("lstm_adbench", (2, 1024)),
        ("heat1d", (10000, 5000)), ("heat2d", (256, 500)), ("rk4", (100, 20000)),
        ("scan", (10000000,)), ("spmv", (1000000, 16, 4)),
    ],
}

TARGET_RATIO = {"gmm": 3.0, "ba": 3.0, "lstm": 3.0, "gmm_adbench": 3.0, "ba_adbench": 3.0,
                "lstm_adbench": 3.0, "heat1d": 4.0, "heat2d": 4.0, "rk4": 4.0}
TARGET_VS_ENZYME = 1.0  # EnzymePy's gradient time / real Enzyme's
TARGET_ABLATION = 4.5
TARGET_AD_PASS_S = 2.0
AGREE_TOL = 1e-6  # max |g_tool - g_ours| / max |g_ours|


def size_label(sizes: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in sizes.items())


def first_error(text: str) -> str:
    """The compiler's one-line diagnostic (the first line with 'error:')."""
    for line in text.splitlines():
        if "error:" in line.lower():
            return line.strip()[:300]
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return (lines[-1].strip() if lines else "failed with no message")[:300]


# ---------------------------------------------------------------- building ----

STAGE_RE = re.compile(r"([A-Za-z][\w+ -]*?)\s+(\d+(?:\.\d+)?)s\b")


def parse_stage_times(stderr: str) -> dict[str, float]:
    """Per-stage seconds from ``enzyme-cc -v``: 'IR parse', 'AD pass', 'print',
    'link+print', 'EnzymePy', 'pre-AD optimisation', 'AD transform', and the final
    pipeline's: 'llvmlite -O2' and 'codegen', or 'clang -O2 and codegen' where a clang
    of llvmlite's LLVM major runs both."""
    out: dict[str, float] = {}
    for line in stderr.splitlines():
        if not line.startswith("enzyme-cc: "):
            continue
        body = line[len("enzyme-cc: "):]
        m = re.match(r"pre-AD optimi[sz]ation of \d+ function\(s\): (\d+\.\d+)s", body)
        if m:
            out["pre-AD opt"] = out.get("pre-AD opt", 0.0) + float(m.group(1))
            continue
        m = re.match(r"AD: .*differentiated in (\d+\.\d+)s", body)
        if m:
            out["AD transform"] = out.get("AD transform", 0.0) + float(m.group(1))
            continue
        if re.match(r"(IR parse|link\+print) ", body):
            for name, sec in STAGE_RE.findall(body):
                out[name.strip()] = out.get(name.strip(), 0.0) + float(sec)
    return out


def final_stage(stages: dict[str, float]) -> str:
    """The final -O pipeline and code generation, with who ran them, as a table cell."""
    both = [(k, v) for k, v in stages.items() if k.startswith("clang -O")]
    if both:
        return f"{both[0][1]:.3f} s (clang)"
    if "codegen" in stages:
        opt = sum(v for k, v in stages.items() if k.startswith("llvmlite -O"))
        return f"{opt + stages['codegen']:.3f} s (llvmlite)"
    return "—"


def count_instructions(ll_path: Path) -> int | None:
    """Instructions in the function bodies of a textual IR file."""
    if not ll_path.exists():
        return None
    n = 0
    in_body = False
    with open(ll_path) as f:
        for line in f:
            if line.startswith("define "):
                in_body = True
            elif line.startswith("}"):
                in_body = False
            elif in_body and line.startswith("  ") and not line.lstrip().startswith(";"):
                n += 1
    return n


# How the ablation's "pre-AD optimisation off" build is made.  enzyme-cc compiles each
# translation unit with clang at the -O level before linking, so -fenzyme-preopt=0 alone
# still differentiates clang-optimised IR ("flag"); "raw" also keeps clang from
# optimising (-Xclang -disable-llvm-passes), so the AD pass sees unoptimised IR and the
# -O2 pipeline runs only after AD: the Enzyme paper's ablation.
ABLATION_FLAGS = {"raw": ["-fenzyme-preopt=0", "-Xclang", "-disable-llvm-passes"],
                  "flag": ["-fenzyme-preopt=0"]}


def build_enzyme(kernel: str, build: Path, preopt: bool, opt: str, mode: str = "raw") -> dict:
    exe = build / f"{kernel}_{'on' if preopt else 'off'}"
    cmd = ["enzyme-cc", opt, "-v", "-save-temps", str(KERNELS_DIR / f"{kernel}.c"),
           "-o", str(exe), "-lm"]
    if not preopt:
        cmd[2:2] = ABLATION_FLAGS[mode]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": "enzyme-cc timed out after 900 s", "cmd": cmd}
    wall = time.perf_counter() - t0
    res = {"ok": p.returncode == 0 and exe.exists(), "exe": str(exe), "wall_s": wall,
           "cmd": " ".join(cmd), "stages": parse_stage_times(p.stderr)}
    if not res["ok"]:
        res["error"] = first_error(p.stderr + p.stdout)
        return res
    res["insts_before"] = count_instructions(Path(f"{exe}.merged.ll"))
    res["insts_after"] = count_instructions(Path(f"{exe}.enzyme.ll"))
    return res


def find_cxx() -> str | None:
    for c in (os.environ.get("CXX"), "g++", "clang++", "c++"):
        if c and shutil.which(c):
            return c
    return None


def build_adolc(kernel: str, build: Path) -> dict:
    if kernel in NO_ADOLC:
        return {"ok": False, "skip": "written over double, as its published C (no ADOL-C version)"}
    if not Path("/usr/include/adolc/adolc.h").exists():
        return {"ok": False, "skip": "ADOL-C not installed (apt-get install libadolc-dev)"}
    cxx = find_cxx()
    if cxx is None:
        return {"ok": False, "skip": "no C++ compiler"}
    exe = build / f"{kernel}_adolc"
    cmd = [cxx, "-O2", "-DBENCH_ADOLC", "-x", "c++", str(KERNELS_DIR / f"{kernel}.c"), "-x", "none",
           "-o", str(exe), "-ladolc", "-lm"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"ok": False, "error": first_error(p.stderr)}
    return {"ok": True, "exe": str(exe)}


# Real Enzyme reads a global that is not marked inactive through a shadow global, which
# the kernels that keep their data in globals (gmm, lstm, ...) do not have: by default
# their gradients crash.  Enzyme's own flag for such programs marks unmarked globals
# inactive; the ADBench-as-written kernels read no globals, so it changes nothing there.
ENZYME15_FLAGS = ["-enzyme-globals-default-inactive=1"]


def build_enzyme15(kernel: str, build: Path, plugin, opt: str) -> dict:
    from . import enzyme_peer
    if isinstance(plugin, enzyme_peer.Skip):
        return {"ok": False, "skip": plugin.reason}
    r = enzyme_peer.build(plugin, [KERNELS_DIR / f"{kernel}.c"], build / f"{kernel}_enzyme15",
                          opt, libs=["-lm"], enzyme_flags=ENZYME15_FLAGS)
    if not r["ok"]:
        r["error"] = r.get("error", "no executable")
    return r


def build_memcount(build: Path) -> str | None:
    """The LD_PRELOAD heap counter (memcount.c), or None when no C compiler builds it."""
    cc = next((c for c in (os.environ.get("CC"), "cc", "gcc", "clang") if c and shutil.which(c)),
              None)
    if cc is None:
        return None
    so = build / "libbenchmem.so"
    p = subprocess.run([cc, "-O2", "-shared", "-fPIC", str(HERE / "memcount.c"), "-o", str(so)],
                       capture_output=True, text=True)
    return str(so) if p.returncode == 0 and so.exists() else None


# ----------------------------------------------------------------- running ----

def run_json(cmd: list[str], cwd: Path, timeout: float, preload: str | None = None) -> dict:
    env = None
    if preload:
        env = dict(os.environ, LD_PRELOAD=preload)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                           env=env)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {timeout:.0f} s"}
    if p.returncode != 0:
        how = f"exit {p.returncode}" if p.returncode > 0 else f"killed by signal {-p.returncode}"
        return {"ok": False, "error": f"{how}: " + first_error(p.stderr + p.stdout)}
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            d = json.loads(line)
            d["ok"] = True
            return d
    return {"ok": False, "error": "no result line: " + first_error(p.stderr + p.stdout)}


ADOLC_RC = "".join(f'"{b}BUFSIZE" "16777216"\n' for b in "OLVT")


def python_peer_available(tool: str) -> str | None:
    """None if the peer can be imported, else the reason it is skipped."""
    mod = {"torch": "torch", "jax": "jax"}[tool]
    p = subprocess.run([sys.executable, "-c", f"import {mod}"], capture_output=True, text=True)
    if p.returncode != 0:
        return f"{mod} not installed"
    return None


def run_case(kernel: str, sizes: tuple[int, ...], builds: dict, peers: list[str], args,
             workdir: Path) -> dict:
    case = {"kernel": kernel, "args": list(sizes), "tools": {}}
    workdir.mkdir(parents=True, exist_ok=True)
    szargs = [str(s) for s in sizes]
    common = ["--reps", str(args.reps), "--min-time", str(args.min_time)]
    t = case["tools"]

    on = builds[kernel]["on"]
    if not on["ok"]:
        t["enzyme"] = {"ok": False, "error": "build failed: " + on.get("error", "?")}
    else:
        fd = ["--fd-samples", str(args.fd_samples), "--fd-budget", str(args.fd_budget)]
        if "fd" not in peers:
            fd = ["--fd-samples", "0"]
        t["enzyme"] = run_json([on["exe"], *common, *fd, "--dump", str(workdir), *szargs],
                               workdir, args.timeout, args.memcount)
    ours = None
    if t["enzyme"].get("ok"):
        ours = read_vector(workdir / "grad.bin")
        case["sizes"] = t["enzyme"]["sizes"]
        if "fd" in peers:
            e = t["enzyme"]
            t["fd"] = {"ok": e["fd_max_rel_err"] >= 0, "grad_s": e["fd_s"],
                       "estimated": e["fd_estimated"], "agree": e["fd_max_rel_err"],
                       "agree_kind": "sampled entries, central FD"}
            if not t["fd"]["ok"]:
                t["fd"]["error"] = "no FD sample"

    if args.ablation:
        off = builds[kernel]["off"]
        if not off["ok"]:
            t["enzyme_nopreopt"] = {"ok": False, "error": "build failed: " + off.get("error", "?")}
        else:
            sub = workdir / "nopreopt"
            sub.mkdir(exist_ok=True)
            r = run_json([off["exe"], *common, "--fd-samples", "0", "--dump", str(sub), *szargs],
                         sub, args.timeout)
            if r.get("ok") and ours is not None:
                r["agree"] = max_rel_diff(read_vector(sub / "grad.bin"), ours)
            t["enzyme_nopreopt"] = r

    if "enzyme15" in peers:
        b = builds[kernel]["enzyme15"]
        if not b["ok"]:
            t["enzyme15"] = {"ok": False, **({"skip": b["skip"]} if "skip" in b else
                                             {"error": "build failed: " + b.get("error", "?")})}
        else:
            sub = workdir / "enzyme15"
            sub.mkdir(exist_ok=True)
            # its own FD check on sampled entries (no full-FD timing: that is EnzymePy's run)
            fd = ["--fd-samples", str(args.fd_samples), "--fd-budget", "0"]
            r = run_json([b["exe"], *common, *fd, "--dump", str(sub), *szargs], sub, args.timeout,
                         args.memcount)
            if r.get("ok") and ours is not None:
                r["agree"] = max_rel_diff(read_vector(sub / "grad.bin"), ours)
            t["enzyme15"] = r

    if "adolc" in peers:
        b = builds[kernel]["adolc"]
        if not b["ok"]:
            t["adolc"] = {"ok": False, **({"skip": b["skip"]} if "skip" in b else
                                          {"error": "build failed: " + b.get("error", "?")})}
        else:
            sub = workdir / "adolc"
            sub.mkdir(exist_ok=True)
            (sub / ".adolcrc").write_text(ADOLC_RC)
            r = run_json([b["exe"], *common, "--fd-samples", "0", "--no-primal", "--dump", str(sub),
                          *szargs], sub, args.timeout, args.memcount)
            if r.get("ok") and ours is not None:
                r["agree"] = max_rel_diff(read_vector(sub / "grad.bin"), ours)
            for tape in sub.glob("ADOLC-*"):
                tape.unlink()
            t["adolc"] = r

    for tool in ("torch", "jax"):
        if tool not in peers:
            continue
        why = args.peer_skip.get(tool)
        if why:
            t[tool] = {"ok": False, "skip": why}
            continue
        if ours is None:
            t[tool] = {"ok": False, "skip": "no EnzymePy inputs to run on"}
            continue
        out = workdir / f"grad_{tool}.bin"
        env_cmd = [sys.executable, "-m", "benchmarks.peers", tool, kernel,
                   str(workdir / "inputs.bin"), str(out), "--reps", str(args.reps),
                   "--min-time", str(args.min_time)]
        r = run_json(env_cmd, HERE.parent, args.timeout)
        if r.get("ok"):
            r["agree"] = max_rel_diff(read_vector(out), ours)
        elif "not natural" in r.get("error", ""):
            r = {"ok": False, "skip": r["error"].split(": ", 1)[-1]}
        t[tool] = r
    return case


# ------------------------------------------------------------------ driver ----

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_const", dest="preset", const="quick",
                   help="tiny sizes (seconds)")
    g.add_argument("--full", action="store_const", dest="preset", const="full",
                   help="ADBench's larger sizes (tens of minutes)")
    g.add_argument("--preset", choices=sorted(PRESETS))
    ap.add_argument("--kernels", default=",".join(KERNELS), help="comma-separated subset")
    ap.add_argument("--peers", default=",".join(PEERS),
                    help="comma-separated subset of " + ",".join(PEERS) + " (or 'none')")
    ap.add_argument("--no-ablation", dest="ablation", action="store_false",
                    help="skip the pre-AD-optimisation-off build and run")
    ap.add_argument("--ablation-mode", choices=sorted(ABLATION_FLAGS), default="raw",
                    help="raw: AD on unoptimised clang output (the paper's ablation, default); "
                         "flag: only -fenzyme-preopt=0")
    ap.add_argument("--reps", type=int, default=None, help="timed repeats (default 7; quick 3)")
    ap.add_argument("--min-time", type=float, default=0.02,
                    help="seconds per timed batch (tiny kernels run several calls per batch)")
    ap.add_argument("--fd-samples", type=int, default=16, help="FD-checked entries")
    ap.add_argument("--fd-budget", type=float, default=2.0,
                    help="time the full FD gradient when it fits in this many seconds, "
                         "else extrapolate (marked est.)")
    ap.add_argument("--timeout", type=float, default=600.0, help="per tool and case, seconds")
    ap.add_argument("-O", dest="opt", default="-O2", help="optimisation level (default -O2)")
    ap.add_argument("--out", default=str(HERE / "results"), help="results folder")
    ap.add_argument("--build-dir", default=str(HERE / ".build"))
    ap.add_argument("--no-png", dest="png", action="store_false")
    ap.add_argument("--no-heap", dest="heap", action="store_false",
                    help="run the C tools without the LD_PRELOAD heap counter")
    ap.add_argument("--enzyme15-cache", default=None,
                    help="where the Enzyme plugin is downloaded and patched "
                         "(default $ENZYMEPY_BENCH_CACHE or ~/.cache/enzyme-py-bench)")
    args = ap.parse_args(argv)
    args.preset = args.preset or "default"
    if args.reps is None:
        args.reps = 3 if args.preset == "quick" else 7
    kernels = [k for k in args.kernels.split(",") if k]
    bad = [k for k in kernels if k not in KERNELS]
    if bad:
        ap.error(f"unknown kernel {bad[0]} (known: {', '.join(KERNELS)})")
    peers = [] if args.peers == "none" else [p for p in args.peers.split(",") if p]
    bad = [p for p in peers if p not in PEERS]
    if bad:
        ap.error(f"unknown peer {bad[0]} (known: {', '.join(PEERS)})")
    if not shutil.which("enzyme-cc"):
        print("enzyme-cc not on PATH: pip install the project first", file=sys.stderr)
        return 2
    args.peer_skip = {p: python_peer_available(p) for p in ("torch", "jax") if p in peers}

    build = Path(args.build_dir) / args.preset
    if build.exists():
        shutil.rmtree(build)
    build.mkdir(parents=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cases = [(k, s) for k, s in PRESETS[args.preset] if k in kernels]
    started = time.time()
    load_at_start = load_line()

    args.memcount = build_memcount(build) if args.heap else None
    plugin = None
    if "enzyme15" in peers:
        from . import enzyme_peer
        print("[setup] real Enzyme (LLVM 15 plugin)", file=sys.stderr, flush=True)
        plugin = enzyme_peer.setup(Path(args.enzyme15_cache) if args.enzyme15_cache else None)
        if isinstance(plugin, enzyme_peer.Skip):
            print(f"  skipped: {plugin.reason}", file=sys.stderr)

    builds: dict[str, dict] = {}
    for k in dict.fromkeys(k for k, _ in cases):
        print(f"[build] {k}", file=sys.stderr, flush=True)
        builds[k] = {"on": build_enzyme(k, build, True, args.opt),
                     "off": build_enzyme(k, build, False, args.opt, args.ablation_mode)
                     if args.ablation
                     else {"ok": False, "error": "ablation not requested"},
                     "adolc": build_adolc(k, build) if "adolc" in peers else {"ok": False},
                     "enzyme15": build_enzyme15(k, build, plugin, args.opt)
                     if "enzyme15" in peers else {"ok": False}}
        b = builds[k]["enzyme15"]
        if "enzyme15" in peers and not b["ok"] and "skip" not in b:
            print(f"  real Enzyme failed: {b['error']}", file=sys.stderr)
        for which in ("on", "off"):
            b = builds[k][which]
            if not b["ok"] and b.get("error") != "ablation not requested":
                print(f"  enzyme-cc ({which}) failed: {b['error']}", file=sys.stderr)

    results = []
    for i, (k, s) in enumerate(cases):
        print(f"[run {i + 1}/{len(cases)}] {k} {' '.join(map(str, s))}", file=sys.stderr,
              flush=True)
        results.append(run_case(k, s, builds, peers, args, build / f"case{i}_{k}"))

    from .report import write_report
    meta = {"preset": args.preset, "opt": args.opt, "reps": args.reps, "peers": peers,
            "ablation": args.ablation and args.ablation_mode,
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "seconds": round(time.time() - started, 1), "machine": machine_line(),
            "load": f"{load_at_start} at the start, {load_line()} at the end",
            "heap": bool(args.memcount),
            "enzyme15": enzyme15_line(plugin), "versions": versions()}
    md = write_report(out, meta, builds, results, png=args.png)
    print(md)
    return 0


def machine_line() -> str:
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores"


def load_line() -> str:
    """The load average: other work on the machine moves the timings."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "?"
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def enzyme15_line(plugin) -> str:
    if plugin is None:
        return "not requested"
    from . import enzyme_peer
    if isinstance(plugin, enzyme_peer.Skip):
        return "skipped: " + plugin.reason
    return (f"Enzyme LLVM 15 plugin from PyPI {enzyme_peer.WHEEL_REQ} (LLVMEnzyme-15.so "
            f"sha256 {enzyme_peer.PLUGIN_SHA256[:12]}…) on the system's LLVM 15; flags "
            + " ".join(ENZYME15_FLAGS))


def versions() -> dict[str, str]:
    v = {}
    p = subprocess.run(["enzyme-cc", "--version"], capture_output=True, text=True)
    v["enzyme-cc"] = " ".join(p.stdout.split())[:160]
    for mod in ("torch", "jax"):
        q = subprocess.run([sys.executable, "-c", f"import {mod}; print({mod}.__version__)"],
                           capture_output=True, text=True)
        v[mod] = q.stdout.strip() if q.returncode == 0 else "not installed"
    q = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libadolc-dev"], capture_output=True,
                       text=True)
    v["adolc"] = q.stdout.strip() if q.returncode == 0 else "not installed"
    return v
