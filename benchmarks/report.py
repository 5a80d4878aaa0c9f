"""Markdown table, PNG chart and raw JSON of one harness run."""

from __future__ import annotations

import json
import math
from pathlib import Path

from .harness import (
    AGREE_TOL,
    TARGET_ABLATION,
    TARGET_AD_PASS_S,
    TARGET_RATIO,
    TARGET_VS_ENZYME,
    final_stage,
    size_label,
)

FD_TOL = 1e-4
PEER_NAMES = [("adolc", "ADOL-C"), ("torch", "PyTorch"), ("jax", "JAX"), ("fd", "central FD")]


def fmt_t(s: float | None) -> str:
    if s is None or s < 0:
        return "—"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} µs"


def short(msg: str, n: int = 110) -> str:
    msg = msg.replace("|", "/").replace("\n", " ")
    return msg if len(msg) <= n else msg[: n - 1] + "…"


def case_label(c: dict) -> str:
    return size_label(c["sizes"]) if "sizes" in c else " ".join(map(str, c["args"]))


def grad_ratio(c: dict) -> float | None:
    e = c["tools"].get("enzyme", {})
    if e.get("ok") and e["primal_s"] > 0:
        return e["grad_s"] / e["primal_s"]
    return None


def ablation(c: dict) -> float | None:
    e, o = c["tools"].get("enzyme", {}), c["tools"].get("enzyme_nopreopt", {})
    # only a correct derivative counts: a wrong one is no speed to compare
    if (e.get("ok") and o.get("ok") and e["grad_s"] > 0 and o.get("agree", 1.0) <= AGREE_TOL
            and not o.get("inputs_modified")):
        return o["grad_s"] / e["grad_s"]
    return None


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt_bytes(n) -> str:
    if n is None or n < 0:
        return "—"
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def trusted(c: dict, tool: str) -> bool:
    """The tool ran, its derivative agrees with EnzymePy's and it left the inputs intact.
    (Two AD tools agreeing to rounding where the sampled central FD does not is FD's
    truncation error on long recurrences; where they disagree, the FD columns say which
    one is off.)"""
    r = c["tools"].get(tool, {})
    return (r.get("ok", False) and r.get("agree", 1.0) <= AGREE_TOL
            and not r.get("inputs_modified"))


def wrong_label(c: dict, tool: str) -> str:
    r, e = c["tools"].get(tool, {}), c["tools"].get("enzyme", {})
    mine, ours = r.get("fd_max_rel_err", -1), e.get("fd_max_rel_err", -1)
    if r.get("inputs_modified"):
        return "**wrote into its inputs**"
    if mine >= 0 and ours >= 0 and mine > 10 * max(ours, FD_TOL):
        return "**wrong ∇** (FD)"
    return "**disagrees with EnzymePy**"


def vs_enzyme(c: dict) -> float | None:
    """EnzymePy's gradient time / real Enzyme's, when both derivatives are right."""
    e, z = c["tools"].get("enzyme", {}), c["tools"].get("enzyme15", {})
    if e.get("ok") and z.get("ok") and z["grad_s"] > 0 and trusted(c, "enzyme15"):
        return e["grad_s"] / z["grad_s"]
    return None


def enzyme15_cell(c: dict) -> str:
    z = c["tools"].get("enzyme15")
    if z is None:
        return "not run"
    if not z.get("ok"):
        if "skip" in z:
            return "skipped: " + short(z["skip"], 60)
        return "**failed**: " + short(z.get("error", "?"), 90)
    s = fmt_t(z["grad_s"])
    if z.get("primal_s", -1) > 0:
        s += f" ({z['grad_s'] / z['primal_s']:.2f}× its primal)"
    if not trusted(c, "enzyme15"):
        return s + " " + wrong_label(c, "enzyme15")
    return s


def vs_enzyme_cell(c: dict) -> str:
    q = vs_enzyme(c)
    if q is None:
        return "—"
    return f"{q:.2f} ({'met' if q <= TARGET_VS_ENZYME else 'missed'})"


def peer_cell(c: dict, tool: str) -> str:
    r = c["tools"].get(tool)
    ours = c["tools"].get("enzyme", {})
    if r is None:
        return "not run"
    if not r.get("ok"):
        if "skip" in r:
            return "skipped: " + short(r["skip"], 60)
        return "**failed**: " + short(r.get("error", "?"), 80)
    s = fmt_t(r["grad_s"]) + (" est." if r.get("estimated") else "")
    if ours.get("ok") and ours["grad_s"] > 0:
        q = r['grad_s'] / ours['grad_s']
        s += f" ({q:.1f}×)" if q >= 0.1 else f" ({q:.2g}×)"
    return s


def agree_cell(c: dict, tool: str) -> str:
    r = c["tools"].get(tool)
    if not r or not r.get("ok") or r.get("agree") is None:
        return "—"
    tol = FD_TOL if tool == "fd" else AGREE_TOL
    a = r["agree"]
    return f"{a:.1e} {'ok' if a <= tol else '**DIFFERS**'}"


def intact_cell(c: dict, tool: str) -> str:
    r = c["tools"].get(tool)
    if not r or not r.get("ok") or "inputs_modified" not in r:
        return "—"
    return "**no: the gradient wrote into its input arrays**" if r["inputs_modified"] else "yes"


def markdown(meta: dict, builds: dict, results: list[dict]) -> str:
    L = []
    L.append(f"Preset `{meta['preset']}`, {meta['opt']}, {meta['reps']} repeats (medians), "
             f"{meta['date']}, {meta['machine']}; run took {meta['seconds']} s.  ")
    v = meta["versions"]
    L.append(f"{v.get('enzyme-cc', '')}; ADOL-C {v.get('adolc')}; PyTorch {v.get('torch')}; "
             f"JAX {v.get('jax')} (all CPU, float64, one thread).  ")
    L.append(f"Real Enzyme: {meta.get('enzyme15', 'not requested')}.  ")
    L.append(f"Machine load: {meta.get('load', '?')} (timings taken while other work shares "
             "the machine move by up to ~2× between runs; ratios taken side by side move less).")
    L.append("")
    L.append("### Gradient time (peers: time and multiple of EnzymePy's)")
    L.append("")
    L.append("| kernel | size | primal | EnzymePy ∇ | ∇/primal (target) | real Enzyme ∇ "
             f"| EnzymePy ÷ Enzyme (target ≤ {TARGET_VS_ENZYME:g}) | no pre-AD opt ∇ "
             "| on/off | ADOL-C | PyTorch | JAX | central FD |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in results:
        e = c["tools"].get("enzyme", {})
        k = c["kernel"]
        if not e.get("ok"):
            L.append(f"| {k} | {case_label(c)} | — | **failed**: {short(e.get('error', '?'))} "
                     f"| — | {enzyme15_cell(c)} | — | — | — | "
                     + " | ".join(peer_cell(c, t) for t, _ in PEER_NAMES) + " |")
            continue
        ratio = grad_ratio(c)
        tgt = TARGET_RATIO.get(k)
        rcell = f"{ratio:.2f}" if ratio is not None else "—"
        if tgt is not None and ratio is not None:
            rcell += f" (≤ {tgt:g} {'met' if ratio <= tgt else 'missed'})"
        o = c["tools"].get("enzyme_nopreopt")
        if o is None:
            ocell = "not run"
        elif o.get("ok"):
            ocell = fmt_t(o["grad_s"])
        else:
            ocell = "**failed**: " + short(o.get("error", "?"), 80)
        ab = ablation(c)
        L.append(f"| {k} | {case_label(c)} | {fmt_t(e['primal_s'])} | {fmt_t(e['grad_s'])} | "
                 f"{rcell} | {enzyme15_cell(c)} | {vs_enzyme_cell(c)} | "
                 f"{ocell} | {f'{ab:.2f}×' if ab else '—'} | "
                 + " | ".join(peer_cell(c, t) for t, _ in PEER_NAMES) + " |")
    L.append("")
    g = geomean([ablation(c) for c in results])
    how = {"raw": "AD on unoptimised clang output (`-fenzyme-preopt=0 -Xclang "
                  "-disable-llvm-passes`), -O2 after AD",
           "flag": "`-fenzyme-preopt=0` only (clang has already optimised each file)"}.get(
        str(meta.get("ablation")), "not run")
    L.append(f"**Ablation** (gradient time with pre-AD optimisation off ÷ on; off = {how}; "
             "only kernels whose off-gradient agrees), geometric mean: "
             + (f"**{g:.2f}×**" if g else "not measurable") + f" (target ≥ {TARGET_ABLATION}×).")
    L.append("")
    L.append("### Agreement with EnzymePy's derivative (max |Δ| / max |∇ours|; "
             f"ok ≤ {AGREE_TOL:g}, FD on {FD_TOL:g} relative per sampled entry)")
    L.append("")
    L.append("| kernel | size | real Enzyme | real Enzyme vs central FD (sampled) "
             "| no pre-AD opt | ADOL-C | PyTorch | JAX | central FD (sampled) "
             "| inputs intact after ∇ (on / off / Enzyme) |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for c in results:
        z = c["tools"].get("enzyme15", {})
        zfd = z.get("fd_max_rel_err", -1) if z.get("ok") else -1
        zfd_cell = (f"{zfd:.1e} {'ok' if zfd <= FD_TOL else '**DIFFERS**'}" if zfd >= 0 else "—")
        L.append(f"| {c['kernel']} | {case_label(c)} | {agree_cell(c, 'enzyme15')} | {zfd_cell} | "
                 + " | ".join(agree_cell(c, t) for t in
                              ("enzyme_nopreopt", "adolc", "torch", "jax", "fd")) + " | "
                 + " / ".join(intact_cell(c, t) for t in ("enzyme", "enzyme_nopreopt", "enzyme15"))
                 + " |")
    L.append("")
    L.append("### Peak heap per call (LD_PRELOAD counter, first call: live bytes above the "
             "start of the call)")
    L.append("")
    if not meta.get("heap"):
        L.append("Not measured (run without the heap counter).")
    else:
        L.append("Tape/cache = the gradient's peak minus the primal's (the gradient also runs "
                 "the primal); shadows of the kernel's own heap blocks count as tape here.  Stack "
                 "memory (small caches a tool keeps in allocas) is not seen.")
        L.append("")
        L.append("| kernel | size | primal | EnzymePy ∇ | EnzymePy tape/cache | real Enzyme ∇ "
                 "| real Enzyme tape/cache | ADOL-C ∇ |")
        L.append("|---|---|---|---|---|---|---|---|")
        for c in results:
            t = c["tools"]

            def peak(tool, key, t=t):
                r = t.get(tool, {})
                return r.get(key, -1) if r.get("ok") else -1

            p = peak("enzyme", "primal_heap_peak")
            pz = peak("enzyme15", "primal_heap_peak")
            g, gz = peak("enzyme", "grad_heap_peak"), peak("enzyme15", "grad_heap_peak")
            L.append(f"| {c['kernel']} | {case_label(c)} | {fmt_bytes(p)} | {fmt_bytes(g)} | "
                     f"{fmt_bytes(g - p if g >= 0 and p >= 0 else -1)} | {fmt_bytes(gz)} | "
                     f"{fmt_bytes(gz - pz if gz >= 0 and pz >= 0 else -1)} | "
                     f"{fmt_bytes(peak('adolc', 'grad_heap_peak'))} |")
    L.append("")
    L.append(f"### Compile side (enzyme-cc {meta['opt']} -v; "
             f"AD pass target < {TARGET_AD_PASS_S:g} s)")
    L.append("")
    L.append("| kernel | IR parse | pre-AD opt | AD transform | AD pass total | print | "
             "final -O2 + codegen | enzyme-cc wall | IR insts before → after AD |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for k, b in builds.items():
        on = b["on"]
        if not on.get("ok"):
            L.append(f"| {k} | **failed**: {short(on.get('error', '?'))} ||||||||")
            continue
        st = on["stages"]

        def s(name, st=st):
            return f"{st[name]:.3f} s" if name in st else "—"
        ad = st.get("AD pass")
        adcell = s("AD pass")
        if ad is not None:
            adcell += " (met)" if ad < TARGET_AD_PASS_S else " (**missed**)"
        ib, ia = on.get("insts_before"), on.get("insts_after")
        icell = f"{ib} → {ia}" if ib and ia else "—"
        L.append(f"| {k} | {s('IR parse')} | {s('pre-AD opt')} | {s('AD transform')} | {adcell} | "
                 f"{s('print')} | {final_stage(st)} | {on['wall_s']:.2f} s | "
                 f"{icell} |")
    L.append("")
    return "\n".join(L)


def chart(path: Path, results: list[dict]) -> str | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib not installed: no PNG"
    labels = [f"{c['kernel']}\n" + case_label(c).replace(" ", "\n") for c in results]
    tools = [("enzyme", "EnzymePy"), ("enzyme_nopreopt", "EnzymePy, no pre-AD opt"),
             ("adolc", "ADOL-C"), ("torch", "PyTorch"), ("jax", "JAX"), ("fd", "central FD")]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(8, 1.6 * len(results)), 9))
    width = 0.8 / len(tools)
    for j, (key, name) in enumerate(tools):
        xs, ys = [], []
        for i, c in enumerate(results):
            e, r = c["tools"].get("enzyme", {}), c["tools"].get(key, {})
            tol = FD_TOL if key == "fd" else AGREE_TOL
            if (e.get("ok") and r.get("ok") and r.get("grad_s", -1) > 0
                    and r.get("agree", 0.0) <= tol and not r.get("inputs_modified")):
                xs.append(i + (j - len(tools) / 2 + 0.5) * width)
                ys.append(r["grad_s"] / e["grad_s"])
        ax1.bar(xs, ys, width, label=name)
    ax1.set_yscale("log")
    ax1.axhline(1.0, color="k", lw=0.8)
    ax1.set_ylabel("gradient time ÷ EnzymePy's")
    ax1.set_xticks(range(len(results)), labels, fontsize=7)
    ax1.legend(fontsize=7, ncol=3)
    ax1.set_title("Gradient time relative to EnzymePy (lower is faster)")
    ratios = [grad_ratio(c) or 0.0 for c in results]
    ax2.bar(range(len(results)), ratios, 0.6, color="tab:blue", label="EnzymePy ∇ / primal")
    for i, c in enumerate(results):
        t = TARGET_RATIO.get(c["kernel"])
        if t:
            ax2.plot([i - 0.35, i + 0.35], [t, t], color="tab:red", lw=2,
                     label="target" if i == 0 else None)
        if not c["tools"].get("enzyme", {}).get("ok"):
            ax2.text(i, 0.1, "build\nfailed", ha="center", fontsize=7, color="tab:red")
    ax2.set_xticks(range(len(results)), labels, fontsize=7)
    ax2.set_ylabel("gradient / primal time")
    ax2.set_title("EnzymePy gradient/primal ratio (-O2) and targets")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def write_report(out: Path, meta: dict, builds: dict, results: list[dict], png: bool = True) -> str:
    md = markdown(meta, builds, results)
    stem = f"{meta['preset']}"
    if png:
        why = chart(out / f"{stem}.png", results)
        md += f"\n![chart]({stem}.png)\n" if why is None else f"\n({why})\n"
    (out / f"{stem}.md").write_text(md)
    slim_builds = {k: {w: {kk: vv for kk, vv in b.items() if kk != "exe"} for w, b in v.items()}
                   for k, v in builds.items()}
    (out / f"{stem}.json").write_text(json.dumps(
        {"meta": meta, "builds": slim_builds, "results": results}, indent=1))
    return md
