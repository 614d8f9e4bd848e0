"""Readable output of a fit: a terminal table (rich), a markdown report and one plot per phase.

Plots use matplotlib's Agg backend (no display needed) and are written as PNG files beside the
report; the markdown links them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from analysis.console import console_width
from analysis.dataset import Dataset
from analysis.features.model_features import feature_value
from analysis.fit.groups import GroupFit
from analysis.fit.targets import RESIDUAL, target_value
from analysis.study import STUDY_REPORTED

__all__ = ["print_terminal", "write_markdown"]

_STUDY_PCC = {f.phase: f for f in STUDY_REPORTED["pcc"]}


def _fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _r_cell(entry: dict[str, Any] | None) -> str:
    if not entry or entry.get("r") is None:
        return "-"
    ci = ""
    if entry.get("ci_low") is not None:
        ci = f" [{entry['ci_low']:.2f}, {entry['ci_high']:.2f}]"
    return f"{entry['r']:.2f}{ci}"


def _phase_rows(f: GroupFit) -> list[list[str]]:
    rows = []
    targets = []
    for p in f.models:
        for phase, subs in f.split.items():
            if p == subs[0]:
                targets.append(phase)  # the split phase, then its fitted sub-phases
        targets.append(p)
    targets += [s for s in f.pcc if "." in s and s not in f.models]
    for target in targets:
        m = f.models.get(target)
        entry = f.pcc.get(target) or {}
        study = _STUDY_PCC.get(target)
        if m is not None and m.status != "fit":
            rows.append([target, "not applicable", "-", "-", "-", "-", "-", "-", "-"])
            continue
        if target in f.split:
            rows.append([target, entry.get("feature", "sum of sub-phases"),
                         str(entry.get("n", "-")), _r_cell(entry), "-", "-", "-", "-",
                         ", ".join(entry.get("outliers", [])) or "-"])
            continue
        if m is None:  # a subphase reported for the comparison only
            rows.append([f"  {target.split('.', 1)[1]}", entry.get("feature", "-"),
                         str(entry.get("n", "-")), _r_cell(entry),
                         f"{study.pcc:.2f} ({study.study_name})" if study else "-",
                         "-", "-", "-", ", ".join(entry.get("outliers", [])) or "-"])
            continue
        slope = m.slope_per_unit
        feature = f"{m.feature} [{m.feature_unit}]" if m.feature else "constant"
        rows.append([
            f"  {target.split('.', 1)[1]}" if "." in target else target, feature, str(m.n),
            _r_cell(entry),
            f"{study.pcc:.2f} ({study.study_name})" if study else "-",
            "-" if slope is None else f"{slope:.3g} s per {m.feature_unit or 'unit'}",
            f"{m.coefficients[0]:.2f} s", _fmt(m.r2), ", ".join(m.outliers) or "-",
        ])
    return rows


_PHASE_HEADERS = ["phase", "feature", "n", "r [95% CI]", "study r", "slope", "intercept",
                  "R^2", "outliers"]


def _summary_lines(f: GroupFit) -> list[str]:
    lines = []
    h = f.holdout_eval
    if h and h.get("n"):
        lines.append(
            f"held out ({h['n']}): MSE {h['mse_s']:.2f} s^2, MAE {h['mae_s']:.2f} s, "
            f"max error {h['max_error_s']:.2f} s, MAPE {100 * h['mape']:.1f} % "
            f"(study: MSE {STUDY_REPORTED['holdout_mse_s2']} s^2, "
            f"max {STUDY_REPORTED['holdout_max_error_s']} s)")
    if f.baseline:
        b = f.baseline
        lines.append(f"study's features and method on this data: MSE {b['mse_s']:.1f} s^2, "
                     f"MAE {b['mae_s']:.1f} s, max error {b['max_error_s']:.1f} s")
    cv = f.cv
    if cv.get("mse_s") is not None:
        lines.append(f"leave-one-model-out CV on the {cv['n']} training models: MSE "
                     f"{cv['mse_s']:.2f} s^2, RMSE {cv['rmse_s']:.2f} s, max error "
                     f"{cv['max_error_s']:.2f} s, MAPE {100 * cv['mape']:.1f} %")
        robust = cv.get("excluding_outliers")
        if robust and robust.get("mse_s") is not None and robust["n"] < cv["n"]:
            lines.append(f"  the same on the {robust['n']} models no phase screened out as an "
                         f"outlier: MSE {robust['mse_s']:.2f} s^2, max error "
                         f"{robust['max_error_s']:.2f} s")
    elif cv:
        lines.append(f"cross-validation: {cv.get('note', '-')}")
    # Folds that could not refit a phase's line and used a constant instead.
    lines += [f"  {fb}" for fb in cv.get("fallbacks", [])]
    lines += [f"  not cross-validated: {m}, {why}" for m, why in cv.get("left_out", {}).items()]
    return lines


def print_terminal(fits: list[GroupFit], data: Dataset) -> None:
    """The phase table, the held-out models and the error summary, per configuration."""

    from rich.console import Console
    from rich.table import Table

    console = Console(width=console_width(160))
    for f in fits:
        table = Table(title=f"{f.label}: {len(f.train)} training models", title_justify="left")
        for h in _PHASE_HEADERS:
            table.add_column(h, overflow="fold")
        for row in _phase_rows(f):
            table.add_row(*row)
        console.print(table)
        if f.holdout_eval and f.holdout_eval.get("per_model"):
            ht = Table(title="held-out models", title_justify="left")
            for h in ("model", "predicted s", "95% interval", "measured s", "error s"):
                ht.add_column(h)
            for name, v in f.holdout_eval["per_model"].items():
                ht.add_row(name, f"{v['predicted_s']:.2f}",
                           f"[{v['low_s']:.1f}, {v['high_s']:.1f}]",
                           f"{v['measured_s']:.2f}", f"{v['error_s']:+.2f}")
            console.print(ht)
        for line in _summary_lines(f):
            console.print(line)
        for phase, notes in f.notes.items():
            for n in notes:
                console.print(f"[yellow]{phase}[/yellow]: {n}", highlight=False)
    if data.not_measured:
        console.print("left out (not measured): " + ", ".join(
            f"{n} {state}" for state, n in data.not_measured.items()))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "_", text).strip("_")


def _plot_phase(f: GroupFit, phase: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m = f.models[phase]
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=100)
    pts = []
    for r in f.rows:
        y = target_value(r, phase)
        if y is None:
            continue
        x = 1.0 if m.feature is None else feature_value(r.features, m.feature)
        if x is None:
            continue
        kind = ("holdout" if r.model in f.holdout else
                "outlier" if r.model in m.outliers else "train")
        pts.append((r.model, x / m.feature_scale, y, kind))
    if m.feature is None:
        pts = [(n, float(i), y, k) for i, (n, _, y, k) in enumerate(pts)]
    style = {"train": ("o", "tab:blue", "training"),
             "outlier": ("x", "tab:red", "outlier (not fitted)"),
             "holdout": ("^", "tab:orange", "held out")}
    for kind, (marker, color, label) in style.items():
        sel = [(x, y) for _, x, y, k in pts if k == kind]
        if sel:
            ax.scatter(*zip(*sel), marker=marker, color=color, label=label, zorder=3)
    for name, x, y, _ in pts:
        ax.annotate(name, (x, y), fontsize=6, xytext=(3, 2), textcoords="offset points")
    xs = [x for _, x, _, _ in pts] or [0.0, 1.0]
    grid = np.linspace(min(xs), max(xs), 100) if m.feature else np.array([min(xs), max(xs)])
    preds = [m.predict(g * m.feature_scale if m.feature else None) for g in grid]
    ax.plot(grid, [p.mean_s for p in preds], color="black", lw=1, label="fit")
    ax.fill_between(grid, [p.low_s for p in preds], [p.high_s for p in preds], color="grey",
                    alpha=0.2, label="95 % prediction interval")
    if m.feature:
        ax.set_xlabel(f"{m.feature} [{m.feature_unit}]")
    else:
        ax.set_xlabel("model (constant fit)")
        ax.set_xticks([])
    ax.set_ylabel(f"{phase} [s]")
    r2 = f" R^2={m.r2:.2f}" if m.r2 is not None else ""
    ax.set_title(f"{phase}{r2}", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _md_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in rows]
    return out


def write_markdown(fits: list[GroupFit], data: Dataset, out_dir: Path, *, plots: bool = True,
                   predictor_path: Path | None = None,
                   not_fitted: list[str] | None = None) -> Path:
    """Write ``report.md`` (and the per-phase PNGs) into ``out_dir``; return its path.

    ``not_fitted``: one line per configuration of the input too small to fit.
    """
    lines = ["# Start-up predictor: fit report", ""]
    lines.append("Inputs: " + ", ".join(f"`{i}`" for i in data.inputs))
    if predictor_path:
        lines.append(f"Predictor file: `{predictor_path}`")
    if data.not_measured:
        lines.append("Left out (not measured): " + ", ".join(
            f"{n} {s}" for s, n in data.not_measured.items()))
    if not_fitted:
        lines += ["", "Too small to fit:", ""] + [f"- {line}" for line in not_fitted]
    lines.append("")
    for gi, f in enumerate(fits):
        prefix = "" if len(fits) == 1 else f"g{gi + 1}_"
        lines += [f"## {f.label}", "",
                  f"Training models ({len(f.train)}): {', '.join(f.train)}", ""]
        if f.holdout:
            lines += [f"Held out ({len(f.holdout)}): {', '.join(f.holdout)}", ""]
        lines += ["### Phases", ""]
        lines += _md_table(_PHASE_HEADERS, _phase_rows(f))
        lines += ["", "r is over the points the line was fitted to (outliers left out); a "
                  "phase fitted as the sum of its sub-phases (indented below it) gives r of its "
                  "measured seconds against that sum. r over every training model:"]
        for p, e in f.pcc.items():
            if e.get("r_all") is not None:
                lines.append(f"- {p}: r = {e['r_all']:.2f} (n = {e['n_all']})")
        lines += ["", "### Errors of the summed prediction", ""]
        lines += [f"- {line}" for line in _summary_lines(f)]
        if f.holdout_eval and f.holdout_eval.get("per_model"):
            lines += ["", "### Held-out models", ""]
            phase_names = [p for p in f.models if f.models[p].status == "fit"]
            phase_names += list(f.split)  # the split phases as a whole, after the rest
            rows = []
            for name, v in f.holdout_eval["per_model"].items():
                rows.append([name, f"{v['predicted_s']:.2f}",
                             f"[{v['low_s']:.1f}, {v['high_s']:.1f}]", f"{v['measured_s']:.2f}",
                             f"{v['error_s']:+.2f}"] + [
                    f"{v['phases'][p]['predicted_s']:.2f} / "
                    f"{_fmt(v['phases'][p]['measured_s'])}" for p in phase_names])
            lines += _md_table(["model", "predicted s", "95% interval", "measured s", "error s"]
                               + [f"{p} pred / meas" for p in phase_names], rows)
            if f.baseline:
                lines += ["", "The study's method on the same models: " + ", ".join(
                    f"{n} {v['predicted_s']:.1f} s" for n, v in f.baseline["per_model"].items())]
        if f.cv.get("per_model"):
            lines += ["", "### Leave-one-model-out residuals (measured - predicted)", ""]
            lines += _md_table(["model", "predicted s", "measured s", "residual s"], [
                [n, f"{v['predicted_s']:.2f}", f"{v['measured_s']:.2f}", f"{v['residual_s']:+.2f}"]
                for n, v in sorted(f.cv["per_model"].items(),
                                   key=lambda kv: -abs(kv[1]["residual_s"]))])
        lines += ["", "### How each feature was chosen", "",
                  "Leave-one-model-out errors of the phase on the training models only: the "
                  "lowest mean square wins.", ""]
        sel_rows = []
        for phase, table in f.selection.items():
            for t in table:
                sel_rows.append([phase, t["feature"], _fmt(t["loo_mse_s2"], 4),
                                 "yes" if t["chosen"] else "", t.get("why", "")])
        lines += _md_table(["phase", "candidate", "LOO MSE s^2", "chosen", "note"], sel_rows)
        notes = [(p, n) for p, ns in f.notes.items() for n in ns]
        if notes:
            lines += ["", "### Where the fit is poor, and why", ""]
            lines += [f"- **{p}**: {n}" for p, n in notes]
        if plots:
            lines += ["", "### Plots", ""]
            for phase, m in f.models.items():
                if m.status != "fit" or phase == RESIDUAL:
                    continue
                name = f"{prefix}phase_{_slug(phase)}.png"
                _plot_phase(f, phase, out_dir / name)
                lines.append(f"![{phase}]({name})")
        lines.append("")
    path = out_dir / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
