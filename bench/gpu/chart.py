#!/usr/bin/env python3
"""chart.py - the GPU suite's chart, from run.py's results (no torch needed).

    python3 bench/gpu/chart.py RESULTS.json OUT.png

Two panels, one group of bars per case, every bar inside its case's group:

  top     the fraction of the hardware ceiling (copy bandwidth for
          memory-bound cases, the dense matmul rate for GEMMs) reached by
          our kernel (the one the case's target names) and by the best
          torch variant, side by side, each annotated with its percentage
          (and the torch bar with which variant it is); the MLIR default
          lowering as a thin grey bar for scale.
  bottom  every variant's median time in ms (log axis), one colour per
          variant across the whole chart, the group centred on its case;
          the axis starts below the smallest bar so no bar is cut.

Needs matplotlib (the GPU machine has it); run.py calls draw() itself.
"""
import json
import sys

ORDER = ["ours", "ours_alt", "ours_alt2", "ours_alt3", "ours_alt4", "ours_sm90a",
         "ours_tf32", "mlir_default", "eager", "compile", "compile_max_autotune",
         "eager_tf32", "compile_tf32"]
LABEL = {"ours": "ours", "ours_alt": "ours alt", "ours_alt2": "ours alt2",
         "ours_alt3": "ours alt3", "ours_alt4": "ours alt4", "ours_sm90a": "ours sm_90a",
         "mlir_default": "MLIR default", "eager": "torch eager", "compile": "torch.compile",
         "compile_max_autotune": "torch.compile max-autotune", "ours_tf32": "ours TF32",
         "eager_tf32": "torch eager TF32", "compile_tf32": "torch.compile TF32"}
TORCH = ("eager", "compile", "compile_max_autotune")
# One colour per variant: ours in blues/greens, torch in oranges/reds, MLIR grey.
COLOR = {"ours": "#1f4e9c", "ours_alt": "#4a7fd4", "ours_alt2": "#86b0ec",
         "ours_alt3": "#2a9d8f", "ours_alt4": "#7fcdbb", "ours_sm90a": "#0b2a5b",
         "mlir_default": "#9e9e9e", "eager": "#f4a261", "compile": "#e76f51",
         "compile_max_autotune": "#9b2226", "ours_tf32": "#6a3d9a",
         "eager_tf32": "#fdd49e", "compile_tf32": "#fc8d59"}


def ours_key(case):
    v = case["variants"]
    k = case.get("target", {}).get("ours") or "ours"
    return k if k in v else ("ours" if "ours" in v else None)


def best_torch_key(case):
    v = case["variants"]
    ks = [k for k in TORCH if k in v]
    return min(ks, key=lambda k: v[k]["median"]) if ks else None


def draw(results, path, meta=None):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except Exception as e:
        return "no PNG: matplotlib unavailable (%s)" % e
    cases = [c for c in results if c.get("variants")]
    n = len(cases)
    fig, (top, bot) = plt.subplots(2, 1, figsize=(max(12, 1.35 * n), 10),
                                   gridspec_kw={"height_ratios": [1, 1.15]})
    names = [c["name"] for c in cases]

    # Top: fraction of the ceiling, ours and best torch side by side.
    w = 0.36
    for j, c in enumerate(cases):
        v = c["variants"]
        o, t = ours_key(c), best_torch_key(c)
        if o and "fraction" in v[o]:
            f = v[o]["fraction"]
            top.bar(j - w / 2, 100 * f, w, color=COLOR["ours"], edgecolor="black", lw=0.4)
            which = "" if o == "ours" else "\n" + LABEL[o].replace("ours ", "")
            top.text(j - w / 2, 100 * f + 1.5, "%.0f%%%s" % (100 * f, which), ha="center",
                     va="bottom", fontsize=7 if not which else 6)
        if t and "fraction" in v[t]:
            f = v[t]["fraction"]
            top.bar(j + w / 2, 100 * f, w, color=COLOR[t], edgecolor="black", lw=0.4)
            top.text(j + w / 2, 100 * f + 1.5, "%.0f%%\n%s" % (100 * f, {"eager": "eager",
                     "compile": "compile", "compile_max_autotune": "max-at"}[t]),
                     ha="center", va="bottom", fontsize=6)
        if o and "fraction" not in v[o]:
            # An end-to-end case (KernelBench L3 P44): no hardware ceiling;
            # the speed-ups over torch eager instead, per precision mode.
            lines = ["end to end: x eager"]
            for k in ("ours", "compile", "ours_tf32", "compile_tf32"):
                if k in v and v[k].get("x_eager"):
                    lines.append("%s %.2fx" % (LABEL[k].replace("torch.", ""), v[k]["x_eager"]))
            top.text(j, 50, "\n".join(lines), ha="center", va="center", fontsize=7,
                     bbox=dict(boxstyle="round", fc="#f4f4f4", ec="#bbbbbb"))
        if "mlir_default" in v and "fraction" in v["mlir_default"]:
            top.bar(j, 100 * v["mlir_default"]["fraction"], 0.08, color=COLOR["mlir_default"])
    top.set_xlim(-0.6, n - 0.4)
    # Room for the tallest bar and its label: the exact f32 GEMMs (3xTF32 on
    # tensor cores) run well past the f32 SIMT rate that is their ceiling.
    fr = [100 * c["variants"][k]["fraction"] for c in cases
          for k in (ours_key(c), best_torch_key(c)) if k and "fraction" in c["variants"][k]]
    top.set_ylim(0, max([118] + [f * 1.15 + 8 for f in fr]))
    top.axhline(100, color="black", lw=0.6, ls=":")
    top.set_xticks(range(n))
    top.set_xticklabels(names, rotation=25, ha="right", fontsize=8)
    top.set_ylabel("% of the ceiling\n(copy bandwidth or matmul rate)")
    top.set_title("Fraction of the hardware ceiling: our kernel (left) and the best torch "
                  "variant (right); thin grey: MLIR default lowering")
    top.legend(handles=[Patch(color=COLOR["ours"],
                              label="ours (the kernel the case's target names; "
                                    "its variant noted when not the default)"),
                        Patch(color=COLOR["eager"], label="best torch: eager"),
                        Patch(color=COLOR["compile"], label="best torch: torch.compile"),
                        Patch(color=COLOR["compile_max_autotune"],
                              label="best torch: max-autotune"),
                        Patch(color=COLOR["mlir_default"], label="MLIR default")],
               fontsize=7, loc="upper left", ncol=3 if n < 8 else 5)

    # Bottom: every variant's time, grouped and centred on its case.
    present = [k for k in ORDER if any(k in c["variants"] for c in cases)]
    lo = min(c["variants"][k]["median"] for c in cases for k in c["variants"])
    hi = max(c["variants"][k]["median"] for c in cases for k in c["variants"])
    gw = 0.84
    for j, c in enumerate(cases):
        ks = [k for k in ORDER if k in c["variants"]]
        bw = gw / max(len(ks), 1)
        for i, k in enumerate(ks):
            x = j - gw / 2 + (i + 0.5) * bw
            bot.bar(x, c["variants"][k]["median"], bw * 0.92, color=COLOR[k],
                    edgecolor="black", lw=0.3)
    bot.set_yscale("log")
    bot.set_ylim(lo / 2.0, hi * 2.0)
    bot.set_xlim(-0.6, n - 0.4)
    for j in range(1, n):
        bot.axvline(j - 0.5, color="#dddddd", lw=0.6, zorder=0)
    bot.set_xticks(range(n))
    bot.set_xticklabels(names, rotation=25, ha="right", fontsize=8)
    bot.set_ylabel("median time per call (ms, log)")
    bot.set_title("Every variant's median time, lower is faster (one colour per variant)")
    bot.legend(handles=[Patch(color=COLOR[k], label=LABEL[k]) for k in present],
               fontsize=7, ncol=min(len(present), 7), loc="upper left")
    sub = ""
    if meta:
        sub = ": %s, %s, torch %s" % (meta.get("device", "?"), meta.get("date", "?"),
                                       meta.get("torch", "?"))
    fig.suptitle("llm-fuse GPU suite%s" % sub, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return "chart: " + path


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: chart.py RESULTS.json OUT.png")
    d = json.load(open(sys.argv[1]))
    print(draw(d["cases"], sys.argv[2], d.get("meta")))


if __name__ == "__main__":
    main()
