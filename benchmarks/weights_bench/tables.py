"""The ``report`` task: the tables of ``results/weights.md`` from the raw rows."""

from __future__ import annotations

import numpy as np

from weights_bench.notes import CLASSIFICATION_NOTES, NOTES
from weights_bench.rows import CLASSIFICATION, N_TREES, REGRESSION, RESULTS, read_rows


def report(args):
    """Tables of weights.md from the raw rows (the last row of each key wins)."""
    lines = ["## Feature weights (issue 12)", "",
             f"n_estimators={N_TREES}, n_jobs=1, random_state=0; CPU seconds of one fit per "
             "split (shared 2-core machine: read the ratios). RF/ET NLL: tree spread + 0.01 "
             "var(y_train). MF-<method>: feature_weights=<method> (\"auto\" = extra_trees); "
             "its fit time includes the weight search.", ""]
    rows = {}
    for row in read_rows(RESULTS / "weights_regression.jsonl"):
        rows[(row["dataset"], row["split"], row["model"])] = row
    if rows:
        models = sorted({k[2] for k in rows}, key=lambda m: (not m.startswith("MF"), m))
        lines += ["### Regression (UCI standard splits)", "",
                  "| dataset | splits | model | RMSE | RMSE / RF | NLL | NLL - RF | fit / RF | "
                  "power |", "|---|---|---|---|---|---|---|---|---|"]
        summary = {m: {"ratio": [], "nll_better": 0, "n": 0, "fit": []} for m in models}
        for name in REGRESSION:
            splits = sorted({k[1] for k in rows if k[0] == name and (name, k[1], "RF") in rows})
            if not splits:
                continue
            for model in models:
                got = [rows[(name, s, model)] for s in splits if (name, s, model) in rows]
                if len(got) != len(splits):
                    continue
                rf = [rows[(name, s, "RF")] for s in splits]
                ratio = np.mean([g["rmse"] / r["rmse"] for g, r in zip(got, rf, strict=True)])
                fit = np.mean([g["fit_s"] / r["fit_s"] for g, r in zip(got, rf, strict=True)])
                nll = [g["nll"] for g in got]
                has_nll = all(v is not None for v in nll)
                dnll = (np.mean([g["nll"] - r["nll"] for g, r in zip(got, rf, strict=True)])
                        if has_nll else None)
                powers = [g.get("power") for g in got if g.get("power") is not None]
                summary[model]["ratio"].append(ratio)
                summary[model]["fit"].append(fit)
                if has_nll:
                    summary[model]["n"] += 1
                    summary[model]["nll_better"] += int(dnll < 0)
                lines.append(
                    f"| {name} | {len(splits)} | {model} | {np.mean([g['rmse'] for g in got]):.4g}"
                    f" | {ratio:.3f} | {np.mean(nll):.3f} | {dnll:+.3f} | {fit:.2f} | "
                    f"{','.join(f'{p:g}' for p in powers)} |" if has_nll else
                    f"| {name} | {len(splits)} | {model} | {np.mean([g['rmse'] for g in got]):.4g}"
                    f" | {ratio:.3f} | — | — | {fit:.2f} | |")
        lines += ["", "| model | sets | mean RMSE / RF | NLL better than RF | mean fit / RF |",
                  "|---|---|---|---|---|"]
        for model in models:
            s = summary[model]
            if s["ratio"]:
                nll = f"{s['nll_better']} of {s['n']}" if s["n"] else "—"
                lines.append(f"| {model} | {len(s['ratio'])} | {np.mean(s['ratio']):.3f} | "
                             f"{nll} | {np.mean(s['fit']):.2f} |")
        lines.append("")
    lines += classification_report()
    orows = {}
    for row in read_rows(RESULTS / "weights_online.jsonl"):
        orows[(row["dataset"], row["split"], row["weights"], row["mode"])] = row
    if orows:
        lines += ["### Online regression vs batch (first batch of 128 rows, then chunks of 32)",
                  "", "| dataset | splits | feature_weights | RMSE batch | RMSE online | "
                  "NLL batch | NLL online |", "|---|---|---|---|---|---|---|"]
        for name in REGRESSION:
            for weights in ("None", "auto"):
                splits = sorted({k[1] for k in orows if k[0] == name and k[2] == weights
                                 and (name, k[1], weights, "online") in orows
                                 and (name, k[1], weights, "batch") in orows})
                if not splits:
                    continue
                got = {mode: [orows[(name, s, weights, mode)] for s in splits]
                       for mode in ("batch", "online")}
                lines.append(
                    f"| {name} | {len(splits)} | {weights} | "
                    f"{np.mean([r['rmse'] for r in got['batch']]):.4g} | "
                    f"{np.mean([r['rmse'] for r in got['online']]):.4g} | "
                    f"{np.mean([r['nll'] for r in got['batch']]):.3f} | "
                    f"{np.mean([r['nll'] for r in got['online']]):.3f} |")
        lines.append("")
    lines += NOTES.strip("\n").split("\n")
    text = "\n".join(lines)
    (RESULTS / "weights.md").write_text(text + "\n")
    print(text)


WAS = {("dna", "MF"): 0.6644, ("dna", "MF-auto"): 0.9359, ("satimage", "MF"): 0.9015,
       ("satimage", "MF-auto"): 0.9005, ("letter", "MF"): 0.9620, ("letter", "MF-auto"): 0.9654,
       ("usps", "MF"): 0.9292, ("usps", "MF-auto"): 0.9312}


def classification_report():
    """The classification tables: per dataset and model, seed 0 (the issue's figure) and the
    mean over the seeds run (points vs RF paired by seed), then the satimage diagnosis."""
    rows = {}
    for row in read_rows(RESULTS / "weights_classification.jsonl"):
        rows[(row["dataset"], row.get("seed", 0), row["model"])] = row
    if not rows:
        return []
    lines = ["### Classification (fixed splits)", "",
             "Seed 0 is the issue's figure; the mean is over the forest seeds 0..n-1 (every "
             "model the same seed; points vs RF paired by seed). \"was\": seed 0 in the "
             "previous report.", "",
             "| dataset | model | accuracy (seed 0) | points vs RF | was | seeds | mean accuracy "
             "| mean points vs RF | fit / RF | powers (map) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name in CLASSIFICATION:
        seeds = sorted({k[1] for k in rows if k[0] == name and k[2] == "RF"})
        if 0 not in seeds:
            continue
        models = sorted({k[2] for k in rows if k[0] == name})
        for model in models:
            got = [s for s in seeds if (name, s, model) in rows]
            if 0 not in got:
                continue
            first, rf = rows[(name, 0, model)], rows[(name, 0, "RF")]
            acc = [rows[(name, s, model)]["accuracy"] for s in got]
            gap = [100 * (rows[(name, s, model)]["accuracy"] - rows[(name, s, "RF")]["accuracy"])
                   for s in got]
            fit = np.mean([rows[(name, s, model)]["fit_s"] / rows[(name, s, "RF")]["fit_s"]
                           for s in got])
            was = WAS.get((name, model))
            powers = ",".join(
                f"{rows[(name, s, model)]['power']:g}"
                + ("q" if rows[(name, s, model)].get("map") == "quantile" else "")
                for s in got if rows[(name, s, model)].get("power") is not None)
            lines.append(
                f"| {name} | {model} | {first['accuracy']:.4f} | "
                f"{100 * (first['accuracy'] - rf['accuracy']):+.2f} | "
                f"{'' if was is None else f'{was:.4f}'} | {len(got)} | {np.mean(acc):.4f} | "
                f"{np.mean(gap):+.2f} | {fit:.2f} | {powers} |")
    lines.append("")
    drows = {}
    for row in read_rows(RESULTS / "weights_diagnose.jsonl"):
        drows[(row["dataset"], row["seed"], row["variant"])] = row["accuracy"]
    for name in CLASSIFICATION:
        seeds = sorted({k[1] for k in drows if k[0] == name})
        if not seeds:
            continue
        variants = list(dict.fromkeys(k[2] for k in drows if k[0] == name))
        lines += [f"#### Where the gap is: {name} (accuracy per forest seed)", "",
                  "| variant | " + " | ".join(f"seed {s}" for s in seeds)
                  + " | mean | mean points vs RF |",
                  "|---|" + "---|" * (len(seeds) + 2)]
        for variant in ["RF", "ET", *variants]:
            if variant in ("RF", "ET"):
                acc = [rows.get((name, s, variant), {}).get("accuracy") for s in seeds]
            else:
                acc = [drows.get((name, s, variant)) for s in seeds]
            if any(a is None for a in acc):
                continue
            rf = [rows.get((name, s, "RF"), {}).get("accuracy") for s in seeds]
            gap = (f"{100 * np.mean(np.subtract(acc, rf)):+.2f}"
                   if all(r is not None for r in rf) else "")
            lines.append(f"| {variant} | " + " | ".join(f"{a:.4f}" for a in acc)
                         + f" | {np.mean(acc):.4f} | {gap} |")
        lines.append("")
    return lines + CLASSIFICATION_NOTES.strip("\n").split("\n") + [""]
