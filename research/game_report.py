"""``occustream game-report`` — the post-demo evaluation of IoT-DETECTIVE (thesis §3.2).

§3.2 ("Post-demo empirical evaluation"): the demo recorded traces of every game, and
their analysis shows how much noise each task tolerates — accuracy per task and ε. This
command reads those traces (the ``game:traces`` stream the dashboard's game writes,
read through :func:`readmodel.reader.game_traces`, or a JSONL export of them) and
reports, per unit of privacy, mechanism, ε and task: the rounds played, the mean
accuracy with its 95 % interval, the median error and the share solved (accuracy ≥
:data:`SOLVED`), with one figure of accuracy against ε per task.

``--bots N`` adds N rounds per (mechanism, ε) played by a scripted analyst that reads
the released stream only (:func:`bot_answers`, post-processing of the public round):
a reference curve, and a way to see the figure before any person has played. Bot
rounds are seeded (``--seed``): the simulated day of round i is seed + i and its noise
comes from ``numpy.random.default_rng([seed, i, cell])``, so a report is reproducible;
they are never written to the leaderboard. See docs/game.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dashboards import game_rounds as gr
from mechanisms.accounting import DEVICE_DAY_UNIT, UNIT_OF_PRIVACY
from mechanisms.errors import InvalidParameterError
from occupancy.buildings import load_site
from readmodel.reader import game_traces
from research.report import Report, new_figure
from simulator.cli import HelpFormatter

log = logging.getLogger(__name__)

#: A task counts as solved at this accuracy or more.
SOLVED = 0.75
BOT = "bot:analyst"
BROKEN_WINDOW = 7
TASK_LABELS = {"threshold": "ticks over a threshold", "night_region": "night region",
               "broken_sensor": "broken sensor", "routine_event": "routine event"}


# -- traces ----------------------------------------------------------------------------------
def traces_from_redis(url: str) -> list[dict[str, Any]]:
    """Every trace in the read model's ``game:traces`` stream, oldest first."""
    import redis.asyncio as aioredis

    async def read() -> list[dict[str, Any]]:
        client = aioredis.Redis.from_url(url)
        try:
            return await game_traces(client)
        finally:
            await client.aclose()

    return asyncio.run(read())


def traces_from_file(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Traces from a JSONL file (one trace per line, as ``--save-traces`` writes)."""
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            raise InvalidParameterError(f"{path}:{n} must be a JSON trace, not {line[:60]!r}"
                                        ) from None
        if not isinstance(doc, dict) or "tasks" not in doc:
            raise InvalidParameterError(f"{path}:{n} must be a trace with tasks, not {doc!r}")
        out.append(doc)
    return out


# -- the scripted analyst ------------------------------------------------------------------------
def _smooth(x: np.ndarray, w: int) -> np.ndarray:
    """Centred moving average of width w (shorter at the ends)."""
    k = np.ones(w)
    return np.convolve(x, k, "same") / np.convolve(np.ones(len(x)), k, "same")


def _median(x: np.ndarray, w: int) -> np.ndarray:
    """Centred moving median of odd width w (shorter at the ends)."""
    h = w // 2
    return np.array([np.median(x[max(i - h, 0):i + h + 1]) for i in range(len(x))])


def bot_answers(public: Mapping[str, Any]) -> dict[str, Any]:
    """A simple analyst's answers from a round's public JSON (released values only).

    threshold: ticks whose 3-tick moving median exceeds the threshold; night region:
    the largest mean released total over night ticks; broken sensor: the tick after
    the last one whose 7-tick moving median reaches 2 noise standard deviations of that
    median (at least 1); routine event: the first tick whose 3-tick moving
    average reaches half of its maximum.
    """
    ticks = np.asarray(public["ticks"], float)
    minutes = (ticks - float(public["midnight"])) / 60.0
    rel = {k: np.asarray(v, float) for k, v in public["released"].items()}
    scale = public.get("meta", {}).get("noise_scale")
    sd = math.sqrt(2.0) * float(scale) if scale else 1.0  # Laplace sd = √2 · scale
    out: dict[str, Any] = {}
    for t in public["tasks"]:
        p = t["params"]
        if t["id"] == "threshold":
            med = _median(rel[p["location"]], 3)
            out["threshold"] = int((med > p["threshold"]).sum())
        elif t["id"] == "night_region":
            night = gr.night_mask(ticks, float(public["midnight"]))
            regions = {r["id"]: r["locations"] for r in public["regions"]}
            means = {c["id"]: float(sum(rel[loc] for loc in regions[c["id"]])[night].mean())
                     for c in p["choices"]}
            out["night_region"] = max(means, key=lambda k: means[k])
        elif t["id"] == "broken_sensor":
            s = _median(rel[p["location"]], BROKEN_WINDOW)
            # the median of w noise draws has sd ≈ 1.25 sd / √w (robust to single spikes)
            above = np.flatnonzero(s >= max(1.0, 2 * 1.25 * sd / math.sqrt(BROKEN_WINDOW)))
            i = min(int(above[-1]) + 1, len(ticks) - 1) if len(above) else 0
            out["broken_sensor"] = gr.hhmm(minutes[i])
        elif t["id"] == "routine_event":
            s = _smooth(rel[p["location"]], 3)
            i = int(np.flatnonzero(s >= s.max() / 2)[0]) if s.max() > 0 else 0
            out["routine_event"] = gr.hhmm(minutes[i])
    return out


def play_bots(site_name: str, rounds: int, mechanisms: Sequence[str], seed: int = 0
              ) -> list[dict[str, Any]]:
    """``rounds`` rounds per (mechanism, ε) played by :func:`bot_answers`; their traces."""
    site = gr.game_site(load_site(site_name))
    out = []
    cells = [(m, e) for m in mechanisms for e in gr.epsilons_for(m)]
    for c, (mech, eps) in enumerate(cells):
        for i in range(rounds):
            rnd = gr.make_round(site, mechanism=mech, epsilon=eps, seed=seed + i,
                                round_id=f"bot-{c}-{i}",
                                rng=np.random.default_rng([seed, i, c]))
            public = rnd.public()
            answers = gr.parse_answers({t.id: t.params for t in rnd.tasks},
                                       bot_answers(public))
            res = gr.score(rnd, answers, 0.0, 0)
            out.append(gr.trace(rnd, BOT, res, 0, 0.0))
        log.info("game-report: bots played %s at ε=%g", mech, eps)
    return out


# -- the evaluation ----------------------------------------------------------------------------
def summarise(traces: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per (who, unit, mechanism, ε, task): n, mean accuracy ± 95 %, median error, solved.

    ``who`` is ``"players"`` for people and ``"bot"`` for the scripted analyst.
    """
    groups: dict[tuple[str, str, str, float, str], list[tuple[float, float | None]]] = \
        defaultdict(list)
    for tr in traces:
        who = "bot" if str(tr.get("player", "")).startswith("bot:") else "players"
        for t in tr.get("tasks", []):
            key = (who, str(tr.get("unit", UNIT_OF_PRIVACY)), str(tr["mechanism"]),
                   float(tr["epsilon"]), str(t["task"]))
            groups[key].append((float(t["accuracy"]), t.get("error")))
    rows = []
    order = {k: i for i, k in enumerate(gr.TASKS)}
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2], k[3], order.get(k[4], 9))):
        acc = np.array([a for a, _ in groups[key]])
        errs = [float(e) for _, e in groups[key] if e is not None]
        half = 1.96 * float(acc.std(ddof=1)) / math.sqrt(len(acc)) if len(acc) > 1 else math.nan
        rows.append({"who": key[0], "unit": key[1], "mechanism": key[2], "epsilon": key[3],
                     "task": key[4], "n": len(acc), "accuracy": float(acc.mean()),
                     "ci95": half, "median_error": float(np.median(errs)) if errs else math.nan,
                     "solved": float((acc >= SOLVED).mean())})
    return rows


def figure(rows: Sequence[Mapping[str, Any]], unit: str, who: str) -> Any:
    """Accuracy against ε per task (one panel each), a line per mechanism."""
    fig, axes = new_figure(12.0, 3.4, ncols=len(gr.TASKS), sharey=True)
    for ax, task in zip(axes, gr.TASKS, strict=True):
        sel = [r for r in rows if r["unit"] == unit and r["who"] == who and r["task"] == task]
        for mech in sorted({r["mechanism"] for r in sel}):
            pts = sorted((r["epsilon"], r["accuracy"], r["ci95"]) for r in sel
                         if r["mechanism"] == mech)
            x, y, ci = (np.array(v, float) for v in zip(*pts, strict=True))
            ax.errorbar(x, y, yerr=np.nan_to_num(ci), marker="o", capsize=3, label=mech)
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(TASK_LABELS[task], fontsize=10)
        ax.set_xlabel("ε per device-day" if unit == DEVICE_DAY_UNIT else "ε per tick")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean accuracy")
    axes[-1].legend(fontsize=8, loc="lower right")
    return fig


def build_report(traces: Sequence[Mapping[str, Any]]) -> tuple[Report, list[dict[str, Any]]]:
    """The report: what was played, the table and a figure per (who, unit)."""
    rows = summarise(traces)
    rep = Report("IoT-DETECTIVE: accuracy per task and ε (thesis §3.2)")
    people = sum(1 for t in traces if not str(t.get("player", "")).startswith("bot:"))
    rep.paragraph(f"{len(traces)} rounds: {people} played by people, {len(traces) - people} by "
                  f"the scripted analyst. Accuracy in [0, 1] per task as scored in the game "
                  f"(docs/game.md); solved = accuracy ≥ {SOLVED}; ± is a 95 % normal "
                  "interval of the mean.")
    for who in ("players", "bot"):
        for unit in sorted({r["unit"] for r in rows if r["who"] == who}):
            sel = [r for r in rows if r["who"] == who and r["unit"] == unit]
            title = "people" if who == "players" else "scripted analyst"
            rep.heading(f"{title}, unit of privacy: {unit}")
            rep.table(["mechanism", "ε", "task", "rounds", "accuracy", "± 95 %",
                       "median error", "solved"],
                      [[r["mechanism"], r["epsilon"], r["task"], r["n"], r["accuracy"],
                        r["ci95"], r["median_error"], r["solved"]] for r in sel],
                      caption="errors: ticks (threshold), ranks (night region), minutes "
                              "(broken sensor, routine event)")
            rep.figure(figure(rows, unit, who), f"accuracy against ε per task, {title}, {unit}",
                       name=f"accuracy-{who}-{re.sub(r'[^a-z]+', '-', unit.lower())[:10]}")
    return rep, rows


def build_parser() -> argparse.ArgumentParser:
    """The ``occustream game-report`` argument parser."""
    p = argparse.ArgumentParser(
        prog="occustream game-report", formatter_class=HelpFormatter,
        description="Accuracy per task and ε from the IoT-DETECTIVE traces of play "
                    "(thesis §3.2 post-demo evaluation), with a figure.")
    p.add_argument("--redis-url", default=os.environ.get("REDIS_URL", ""),
                   help="read the traces the dashboard's game wrote (default $REDIS_URL)")
    p.add_argument("--traces", default=None, help="read traces from a JSONL file instead")
    p.add_argument("--bots", type=int, default=0,
                   help="also play this many rounds per (mechanism, ε) with the scripted "
                        "analyst")
    p.add_argument("--building", default="dbh", help="the bots' building")
    p.add_argument("--mechanisms", default=",".join(gr.game_mechanisms()),
                   help="the bots' mechanisms, comma-separated")
    p.add_argument("--seed", type=int, default=0, help="the bots' first simulated day")
    p.add_argument("--out", default="game-report", help="output directory")
    p.add_argument("--format", choices=("html", "md"), default="md", help="report format")
    p.add_argument("--save-traces", default=None,
                   help="also write every trace used to this JSONL file")
    return p


def main(argv: list[str] | None = None) -> int:
    """Read / play the traces, write the report and print the table's path."""
    args = build_parser().parse_args(argv)
    if args.bots < 0:
        raise InvalidParameterError(f"--bots must be >= 0, not {args.bots!r}")
    mechs = [m.strip() for m in args.mechanisms.split(",") if m.strip()]
    unknown = sorted(set(mechs) - set(gr.game_mechanisms()))
    if unknown:
        raise InvalidParameterError(
            f"--mechanisms must be among {gr.game_mechanisms()}, not {unknown}")
    traces: list[dict[str, Any]] = []
    if args.traces:
        traces += traces_from_file(args.traces)
    elif args.redis_url:
        traces += traces_from_redis(args.redis_url)
    if args.bots:
        traces += play_bots(args.building, args.bots, mechs, args.seed)
    if not traces:
        raise InvalidParameterError(
            "traces must come from somewhere: no trace in --redis-url / --traces and "
            "--bots 0 (play a round at /game, or add --bots N)")
    if args.save_traces:
        Path(args.save_traces).write_text(
            "".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    rep, rows = build_report(traces)
    path = rep.write(args.out, args.format, stem="game-report")
    (Path(args.out) / "game-report.json").write_text(json.dumps(rows, indent=1) + "\n",
                                                     encoding="utf-8")
    print(f"game-report: {len(traces)} rounds → {path}")
    for r in rows:
        print(f"  {r['who']:<7} {r['unit']:<10} {r['mechanism']:<12} ε={r['epsilon']:<6g} "
              f"{r['task']:<14} n={r['n']:<3} accuracy={r['accuracy']:.2f} "
              f"solved={r['solved']:.2f}")
    return 0
