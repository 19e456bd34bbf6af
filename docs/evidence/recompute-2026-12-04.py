#!/usr/bin/env python3
"""Independent recompute of the 2026-12-04 demo bundles (issue #41, "Done when").

Standard library + numpy + pandas only; does NOT import specstack.  Reads only raw
files: vLLM bench's saved JSONs (per-request lists), the acceptance answer records
(acceptance/<task>.jsonl), the /metrics snapshots (snapshots/*.prom); summary.json
only for the method's display label.  Then compares every recomputed figure with
report.md, tables.txt and report/tables/*.csv.

usage: recompute-2026-12-04.py TRAINED_BUNDLE TINY_BUNDLE
"""
import json, math, re, sys
from pathlib import Path
import numpy as np
import pandas as pd

N_CMP = 0
MISMATCH = []
BY_SOURCE = {}


def source(where):
    for key in ("tiny tables.txt", "tiny acceptance.csv", "report.md", "tables.txt", "speed.csv", "acceptance.csv",
                "repetition_loops.csv", "frontier.csv", "crossover.csv", "bench json"):
        if where.startswith(key):
            return key
    return "per-request/bench vs /metrics counter deltas"


def cmp(where, what, mine, theirs, kind="num", fmt=None, rel=1e-9):
    """kind num: |a-b| <= rel*max(|a|,|b|) (csv, full precision);
    kind fmt: theirs is a displayed string, mine formatted with fmt must equal it,
    or lie within half a unit of its last digit (rounding)."""
    global N_CMP
    N_CMP += 1
    ok = True
    if kind == "num":
        if mine is None or theirs is None or (isinstance(theirs, float) and math.isnan(theirs)):
            ok = (mine is None or (isinstance(mine, float) and math.isnan(mine))) and (
                theirs is None or (isinstance(theirs, float) and math.isnan(theirs)))
        else:
            ok = abs(float(mine) - float(theirs)) <= rel * max(1.0, abs(float(mine)), abs(float(theirs)))
    elif kind == "fmt":
        s = fmt.format(mine) if fmt else str(mine)
        t = str(theirs).strip()
        ok = s == t
        if not ok:
            m = re.match(r"^-?[\d,]+(\.\d+)?", t.replace(",", ""))
            if m and isinstance(mine, (int, float)):
                dec = len(m.group(1)) - 1 if m.group(1) else 0
                unit = 10 ** -dec
                scale = 100 if "%" in (fmt or "") and "{:.1%}" in (fmt or "") else 1
                ok = abs(float(m.group(0)) - mine * scale) <= unit / 2 + 1e-9
        mine = s
    elif kind == "in":  # the recomputed text appears within the stated cell
        ok = mine in theirs
    elif kind == "abs":  # the csv stores it rounded to 6 decimals
        ok = theirs is not None and abs(float(mine) - float(theirs)) <= 5e-7 + 1e-12
    else:  # exact equality
        ok = mine == theirs
    BY_SOURCE[source(where)] = BY_SOURCE.get(source(where), 0) + 1
    if not ok:
        MISMATCH.append((where, what, mine, theirs))
    return ok


def prom(path):
    out = {}
    for line in Path(path).read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([^{\s]+)(\{[^}]*\})?\s+(\S+)$", line)
        if not m:
            continue
        name, labels, val = m.group(1), m.group(2) or "", float(m.group(3))
        pos = re.search(r'position="(\d+)"', labels)
        key = (name, int(pos.group(1))) if pos else name
        out[key] = out.get(key, 0.0) + val
    return out


def pdiff(snapdir, window):
    a = prom(snapdir / f"{window}.after.prom")
    b = prom(snapdir / f"{window}.before.prom")
    return {k: a[k] - b.get(k, 0.0) for k in a}


def pct(xs, p):
    return float(np.percentile(np.asarray(xs, dtype=float), p)) if len(xs) else float("nan")


def loop_of(tokens):
    """Longest trailing run repeating with a period 1..64 (>= 2 periods and >= 32 tokens)."""
    best = None
    n = len(tokens)
    for p in range(1, 65):
        k = 0
        i = n - 1
        while i - p >= 0 and tokens[i] == tokens[i - p]:
            k += 1
            i -= 1
        run = k + p if k else 0
        if run >= 2 * p and run >= 32 and (best is None or run > best[1]):
            best = (p, run)
    return best


# ---------------------------------------------------------------- acceptance
def acceptance(mdir, task):
    recs = [json.loads(l) for l in (mdir / "acceptance" / f"{task}.jsonl").read_text().splitlines() if l.strip()]
    acc = dr = st = 0
    hist = None
    k = None
    ge = None          # steps accepting >= p+1
    drafted_ge = None  # steps drafting >= p+1
    answers, finish, comp = [], {}, 0
    per_req = []
    for r in recs:
        ch = r["response"]["choices"][0]
        toks = ch.get("token_ids") or []
        answers.append(tuple(toks))
        fr = ch.get("finish_reason")
        finish[fr] = finish.get(fr, 0) + 1
        comp += r["response"]["usage"]["completion_tokens"]
        sd = ((r["response"].get("metrics") or {}).get("speculative_decoding")) or None
        if not sd:
            per_req.append((r["id"], toks, fr, None))
            continue
        k = sd["num_spec_tokens"]
        if ge is None:
            ge, drafted_ge, hist = [0] * k, [0] * k, [0] * (k + 1)
        acc += sd["num_accepted_draft_tokens"]; dr += sd["num_draft_tokens"]; st += sd["num_spec_steps"]
        for j, h in enumerate(sd["acceptance_histogram"]):
            hist[j] += h
        for a_, d_ in zip(sd["per_step_accepted"], sd["per_step_drafted"]):
            for p in range(k):
                if a_ >= p + 1:
                    ge[p] += 1
                if d_ >= p + 1:
                    drafted_ge[p] += 1
        per_req.append((r["id"], toks, fr, sd))
    res = dict(requests=len(recs), distinct=len(set(answers)), finish=finish, completion_tokens=comp,
               per_req=per_req, k=k)
    if st:
        res.update(accepted=acc, drafted=dr, steps=st, rate=acc / dr if dr else None,
                   length=1 + acc / st, no_accept=hist[0] / st, hist=hist,
                   per_position=[g / st for g in ge],
                   per_position_conditional=[(g / d if d else None) for g, d in zip(ge, drafted_ge)], ge=ge)
    return res


def loops(a, max_tokens_reason="length"):
    out = []
    for rid, toks, fr, sd in a["per_req"]:
        if fr == max_tokens_reason:
            lp = loop_of(toks)
            if lp:
                out.append((rid, lp))
    return out


# ---------------------------------------------------------------- bench
def bench(path):
    d = json.loads(Path(path).read_text())
    ok = [i for i, e in enumerate(d["errors"]) if not e]
    ol = [d["output_lens"][i] for i in ok]
    ttft = [d["ttfts"][i] * 1000 for i in ok]
    lat = [d["latencies"][i] * 1000 for i in ok]
    itls = [d["itls"][i] for i in ok]
    tpot = [(lat[j] - ttft[j]) / (ol[j] - 1) for j in range(len(ok)) if ol[j] > 1]
    itl_flat = [x * 1000 for xs in itls for x in xs]
    chunks = sum(len(x) + 1 for x in itls)
    r = dict(raw=d, completed=len(ok), out_tokens=sum(ol), duration=d["duration"],
             tput=sum(ol) / d["duration"], e2el_mean=float(np.mean(lat)), tpot_mean=float(np.mean(tpot)),
             tokens_per_chunk=sum(ol) / chunks, chunks=chunks,
             burst=sum(1 for j in range(len(ok)) if ttft[j] >= 0.9 * lat[j]),
             e2el_max_over_median=max(lat) / float(np.median(lat)),
             ttft_max_over_median=max(ttft) / float(np.median(ttft)))
    for name, xs in (("tpot", tpot), ("itl", itl_flat), ("ttft", ttft), ("e2el", lat)):
        for p in (50, 95, 99):
            r[f"{name}_p{p}"] = pct(xs, p)
    return r


# ---------------------------------------------------------------- report.md parsing
def md_tables(text):
    """{(task or '', heading): [rows as list of cells]}"""
    out = {}
    task, head = "", ""
    lines = text.splitlines()
    for i, l in enumerate(lines):
        if l.startswith("## "):
            m = re.match(r"## Task: (\S+)", l)
            task = m.group(1) if m else ""
            head = l[3:]
        elif l.startswith("### "):
            head = l[4:]
        elif l.startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                rows.append([c.strip() for c in lines[j].strip().strip("|").split("|")])
                j += 1
            out[(task, head.split(" (")[0])] = ([c.strip() for c in l.strip().strip("|").split("|")], rows)
    return out


def txt_tables(text):
    """tables.txt: {task: {label: cells}}"""
    out, task = {}, None
    for l in text.splitlines():
        m = re.match(r"^task: (\S+)", l)
        if m:
            task = m.group(1); out[task] = {}
        elif l.startswith("│") and task:
            cells = [c.strip() for c in l.strip("│").split("│")]
            out[task][cells[0]] = cells
    return out


def x(v):
    return f"{v:.2f}×"


def main(trained, tiny):
    trained, tiny = Path(trained), Path(tiny)
    report = (trained / "report.md").read_text()
    T = md_tables(report)
    TX = txt_tables((trained / "tables.txt").read_text())
    csv = lambda n, b=trained: pd.read_csv(b / "report" / "tables" / f"{n}.csv")
    speed, acc_csv, loops_csv, frontier, cross = (csv("speed"), csv("acceptance"), csv("repetition_loops"),
                                                  csv("frontier"), csv("crossover"))
    methods = sorted(p.name for p in trained.iterdir() if (p / "summary.json").exists())
    label = {m: json.loads((trained / m / "summary.json").read_text()).get("label", m) for m in methods}
    tasks = ["edit", "chat"]
    conc = [1, 4]
    A, BN, ID = {}, {}, []
    print(f"== trained bundle {trained.name}: methods {methods}")
    # ---- acceptance per method x task; per-request vs counter identities
    for m in methods:
        for t in tasks:
            a = acceptance(trained / m, t)
            A[(m, t)] = a
            dd = pdiff(trained / m / "snapshots", f"acceptance_{t}")
            if "steps" in a:
                for what, mine, key in (("steps = Δnum_drafts", a["steps"], "vllm:spec_decode_num_drafts_total"),
                                        ("drafted = Δdraft_tokens", a["drafted"], "vllm:spec_decode_num_draft_tokens_total"),
                                        ("accepted = Δaccepted", a["accepted"], "vllm:spec_decode_num_accepted_tokens_total")):
                    ok = cmp(f"{m}/{t} acceptance window", what, mine, dd.get(key, 0.0))
                    ID.append((m, t, what, mine, dd.get(key), ok))
                for p in range(a["k"]):
                    key = ("vllm:spec_decode_num_accepted_tokens_per_pos_total", p)
                    ok = cmp(f"{m}/{t} acceptance window", f"per position {p}", a["ge"][p], dd.get(key, 0.0))
                    ID.append((m, t, f"pos {p}", a["ge"][p], dd.get(key), ok))
            ok = cmp(f"{m}/{t} acceptance window", "completion tokens = Δgeneration_tokens",
                     a["completion_tokens"], dd.get("vllm:generation_tokens_total"))
            ID.append((m, t, "completion tokens", a["completion_tokens"], dd.get("vllm:generation_tokens_total"), ok))
            # csv
            row = acc_csv[(acc_csv.method == m) & (acc_csv.task == t)].iloc[0]
            cmp(f"acceptance.csv {m}/{t}", "requests", a["requests"], row.requests)
            cmp(f"acceptance.csv {m}/{t}", "distinct", a["distinct"], row.distinct_outputs)
            cmp(f"acceptance.csv {m}/{t}", "completion_tokens", a["completion_tokens"], row.completion_tokens)
            cmp(f"acceptance.csv {m}/{t}", "finish_reasons", a["finish"], json.loads(row.finish_reasons), kind="eq")
            if "steps" in a:
                for col, v in (("acceptance_rate", a["rate"]), ("mean_acceptance_length", a["length"]),
                               ("no_accept_share", a["no_accept"]), ("num_spec_steps", a["steps"]),
                               ("num_draft_tokens", a["drafted"]), ("num_accepted_draft_tokens", a["accepted"]),
                               ("k", a["k"])):
                    cmp(f"acceptance.csv {m}/{t}", col, v, row[col])
                cmp(f"acceptance.csv {m}/{t}", "histogram", a["hist"], json.loads(row.histogram), kind="eq")
                pp = json.loads(row.per_position)
                for p, v in enumerate(a["per_position"]):
                    cmp(f"acceptance.csv {m}/{t}", f"per_position[{p}] (csv: 6 decimals)", v, pp[p], "abs")
                pc = json.loads(row.per_position_conditional)
                for p, v in enumerate(a["per_position_conditional"]):
                    cmp(f"acceptance.csv {m}/{t}", f"per_position_conditional[{p}] (csv: 6 decimals)", v, pc[p], "abs" if v is not None else "eq")
                # report.md acceptance table
                hdr, rows = T[(t, "Acceptance")]
                r = next(rr for rr in rows if rr[0] == label[m])
                cmp(f"report.md {t} Acceptance {m}", "rate", a["rate"] * 100, r[2], "fmt", "{:.1f} %")
                cmp(f"report.md {t} Acceptance {m}", "length", a["length"], r[3], "fmt", "{:.2f}")
                cmp(f"report.md {t} Acceptance {m}", "no-accept", a["no_accept"] * 100, r[4], "fmt", "{:.1f} %")
                cmp(f"report.md {t} Acceptance {m}", "histogram", str(a["hist"]), r[5], "eq")
                cmp(f"report.md {t} Acceptance {m}", "per position",
                    ", ".join(f"{v:.2f}" for v in a["per_position"]), r[6], "eq")
                cmp(f"report.md {t} Acceptance {m}", "per position conditional",
                    ", ".join("—" if v is None else f"{v:.2f}" for v in a["per_position_conditional"]), r[7], "eq")
                cmp(f"report.md {t} Acceptance {m}", "steps/drafts/accepted",
                    f"{a['steps']:,} | {a['drafted']:,} | {a['accepted']:,}", " | ".join(r[8:11]), "eq")
                cmp(f"report.md {t} Acceptance {m}", "requests (distinct)",
                    f"{a['requests']} ({a['distinct']} distinct)", r[11], "eq")
                tx = TX[t][label[m]]
                cmp(f"tables.txt {t} {m}", "acceptance", a["rate"] * 100, tx[2], "fmt", "{:.1f} %")
                cmp(f"tables.txt {t} {m}", "acc. length", a["length"], tx[3], "fmt", "{:.2f}")
            # repetition loops
            lp = loops(a)
            lrow = loops_csv[(loops_csv.method == m) & (loops_csv.task == t)].iloc[0]
            cmp(f"repetition_loops.csv {m}/{t}", "loops", len(lp), lrow.loops)
            ids = " ".join(f"{rid} (period {p}, last {n} tokens)" for rid, (p, n) in lp)
            cmp(f"repetition_loops.csv {m}/{t}", "loop_ids", ids, "" if pd.isna(lrow.loop_ids) else lrow.loop_ids, "eq")
            a["loops"] = lp
            if "steps" in a:
                looped = {rid for rid, _ in lp}
                keep = [sd for rid, _, _, sd in a["per_req"] if rid not in looped and sd]
                acc_ = sum(s["num_accepted_draft_tokens"] for s in keep)
                dr_ = sum(s["num_draft_tokens"] for s in keep)
                st_ = sum(s["num_spec_steps"] for s in keep)
                a["rate_wo"], a["len_wo"] = acc_ / dr_, 1 + acc_ / st_
                cmp(f"repetition_loops.csv {m}/{t}", "acceptance_rate_without_loops", a["rate_wo"],
                    lrow.acceptance_rate_without_loops)
                cmp(f"repetition_loops.csv {m}/{t}", "mean_acceptance_length_without_loops", a["len_wo"],
                    lrow.mean_acceptance_length_without_loops)
                if lp:
                    hdr, rows = T[(t, "Repetition loops")]
                    r = next(rr for rr in rows if rr[0] == label[m])
                    cmp(f"report.md {t} Repetition loops {m}", "rate all / without",
                        f"{a['rate']*100:.1f} % / {a['rate_wo']*100:.1f} %", r[3], "eq")
                    cmp(f"report.md {t} Repetition loops {m}", "length all / without",
                        f"{a['length']:.2f} / {a['len_wo']:.2f}", r[4], "eq")
                    cmp(f"report.md {t} Repetition loops {m}", "requests that looped", ids, r[5], "eq")
    # ---- greedy output equality against the baseline (acceptance phase, token ids)
    EQ = {}
    for t in tasks:
        base_tok = {rid: toks for rid, toks, _, _ in A[("baseline", t)]["per_req"]}
        for m in methods:
            if m == "baseline":
                continue
            eq = sum(1 for rid, toks, _, _ in A[(m, t)]["per_req"] if base_tok.get(rid) == toks)
            EQ[(m, t)] = (eq, len(A[(m, t)]["per_req"]))
            hdr, rows = T[(t, "Output equality against the baseline")]
            r = next(rr for rr in rows if rr[0] == label[m])
            cmp(f"report.md {t} equality {m}", "compared / equal", f"{len(A[(m, t)]['per_req'])} / {eq}",
                f"{r[2]} / {r[4]}", "eq")
    # ---- bench cells
    for m in methods:
        for t in tasks:
            for c in conc:
                b = bench(trained / m / "bench" / f"{t}-c{c}-r0.json")
                BN[(m, t, c)] = b
                d = b["raw"]
                dd = pdiff(trained / m / "snapshots", f"bench_{t}-c{c}-r0")
                b["delta"] = dd
                # bench's own aggregates vs its per-request lists
                cmp(f"bench json {m}/{t}/c{c}", "output_throughput", b["tput"], d["output_throughput"])
                for name in ("tpot", "itl", "ttft", "e2el"):
                    for p in (50, 95, 99):
                        cmp(f"bench json {m}/{t}/c{c}", f"p{p}_{name}_ms", b[f"{name}_p{p}"], d[f"p{p}_{name}_ms"], rel=1e-6)
                # completeness vs counters
                cmp(f"{m}/{t}/c{c} bench window", "Σ output_lens = Δgeneration_tokens", b["out_tokens"],
                    dd.get("vllm:generation_tokens_total"))
                succ = sum(v for k_, v in dd.items() if k_ == "vllm:request_success_total")
                cmp(f"{m}/{t}/c{c} bench window", "completed = Δrequest_success", b["completed"], succ)
                if d.get("spec_decode_num_drafts") is not None:
                    cmp(f"{m}/{t}/c{c} bench window", "bench num_drafts = Δ", d["spec_decode_num_drafts"],
                        dd.get("vllm:spec_decode_num_drafts_total"))
                    cmp(f"{m}/{t}/c{c} bench window", "bench accepted = Δ", d["spec_decode_accepted_tokens"],
                        dd.get("vllm:spec_decode_num_accepted_tokens_total"))
                    cmp(f"{m}/{t}/c{c} bench window", "bench draft tokens = Δ", d["spec_decode_draft_tokens"],
                        dd.get("vllm:spec_decode_num_draft_tokens_total"))
                    decode = b["out_tokens"] - b["completed"]
                    acc_ = dd.get("vllm:spec_decode_num_accepted_tokens_total", 0)
                    steps = dd.get("vllm:spec_decode_num_drafts_total", 0)
                    passes = max(decode - acc_, steps)
                    b["B"], b["draft_share"] = decode / passes, steps / passes
                    b["acc_len"] = 1 + acc_ / steps if steps else None
                else:
                    b["B"] = None
    for t in tasks:
        for c in conc:
            base = BN[("baseline", t, c)]
            for m in methods:
                b = BN[(m, t, c)]
                row = speed[(speed.method == m) & (speed.task == t) & (speed.concurrency == c)].iloc[0]
                W = f"speed.csv {m}/{t}/c{c}"
                for col, v in (("output_throughput", b["tput"]), ("e2el_mean_ms", b["e2el_mean"]),
                               ("tokens_per_chunk", b["tokens_per_chunk"])):
                    cmp(W, col, v, row[col])
                for name in ("tpot", "itl", "ttft", "e2el"):
                    for p in (50, 95, 99):
                        cmp(W, f"{name}_p{p}_ms", b[f"{name}_p{p}"], row[f"{name}_p{p}_ms"], rel=1e-6)
                hdr, lrows = T[(t, "Latency percentiles, ms")]
                lr = next(rr for rr in lrows if rr[0] == label[m] and rr[1] == str(c))
                for ci, name in ((4, "tpot"), (5, "itl"), (7, "ttft"), (8, "e2el")):
                    cells = [s.strip().rstrip("†").strip() for s in lr[ci].split("/")]
                    for p, s in zip((50, 95, 99), cells):
                        cmp(f"report.md {t} latency {m} c={c}", f"{name} p{p}", b[f"{name}_p{p}"], s, "fmt", "{:.1f}")
                cmp(f"report.md {t} latency {m} c={c}", "tokens per chunk", b["tokens_per_chunk"],
                    lr[6].replace("⚠", "").strip(), "fmt", "{:.2f}")
                hdr, srows = T[(t, "Speed against the baseline")]
                sr = next(rr for rr in srows if rr[0] == label[m] and rr[2] == str(c))
                S = f"report.md {t} speed {m} c={c}"
                cmp(S, "out tok/s", b["tput"], sr[5], "fmt", "{:.1f}")
                cmp(S, "TPOT p50 ms", b["tpot_p50"], sr[8], "fmt", "{:.2f}")
                if m == "baseline":
                    cmp(f"tables.txt {t} baseline", f"c={c}", b["tput"], TX[t]["baseline"][5 + conc.index(c)], "fmt", "{:.1f}")
                    continue
                tr = b["tput"] / base["tput"]
                ts = base["tpot_p50"] / b["tpot_p50"]
                tm = base["tpot_mean"] / b["tpot_mean"]
                t95 = base["tpot_p95"] / b["tpot_p95"]
                es = base["e2el_p50"] / b["e2el_p50"]
                em = base["e2el_mean"] / b["e2el_mean"]
                e95 = base["e2el_p95"] / b["e2el_p95"]
                b.update(tr=tr, ts=ts)
                for col, v in (("throughput_speedup", tr), ("tpot_speedup", ts), ("tpot_mean_speedup", tm),
                               ("tpot_p95_speedup", t95), ("e2el_speedup", es), ("e2el_mean_speedup", em),
                               ("e2el_p95_speedup", e95), ("baseline_output_throughput", base["tput"]),
                               ("baseline_tpot_p50_ms", base["tpot_p50"]), ("tokens_per_target_pass", b["B"]),
                               ("drafting_share", b["draft_share"]), ("bench_acceptance_length", b["acc_len"]),
                               ("efficiency", ts / b["B"]), ("efficiency_verify_steps", ts / b["acc_len"])):
                    if col == "efficiency_verify_steps" and pd.isna(row[col]):
                        continue
                    cmp(W, col, v, row[col], rel=1e-6)
                cmp(S, "throughput ×", x(tr), sr[6], "eq")
                cmp(S, "TPOT speedup", f"{x(ts)}; mean {x(tm)}, p95 {x(t95)}", sr[9], "eq")
                cmp(S, "E2EL speedup", f"{x(es)}; mean {x(em)}, p95 {x(e95)}", sr[11], "eq")
                cmp(S, "acc. length per verify step", b["acc_len"], sr[15], "fmt", "{:.2f}")
                cmp(S, "tokens per target pass", f"{b['B']:.2f} ({b['draft_share']*100:.0f} %)", sr[16], "eq")
                eff = f"{ts/b['B']*100:.0f} %"
                if b["draft_share"] < 0.999:
                    eff += f" ({ts/b['acc_len']*100:.0f} % per verify step)"
                cmp(S, "efficiency", eff, sr[17], "eq")
                # verdict table
                hdr, vrows = T[("", "Verdict")]
                vr = next(rr for rr in vrows if rr[0] == label[m])
                col = hdr.index(f"{t} c={c}")
                cmp(f"report.md verdict {m} {t} c={c}", "TPOT/tput (within the cell)",
                    f"TPOT p50 {x(ts)} (mean {x(tm)}, p95 {x(t95)}) · tput {x(tr)}", vr[col], "in")
                # drafting cost table
                hdr, crows = T[(t, "Cost of drafting per target pass")]
                cr = next(rr for rr in crows if rr[0] == label[m] and rr[1] == str(c))
                free = base["tpot_p50"] / b["B"]; pas = b["tpot_p50"] * b["B"]; cost = pas - base["tpot_p50"]
                C = f"report.md {t} drafting cost {m} c={c}"
                cmp(C, "baseline TPOT", base["tpot_p50"], cr[3], "fmt", "{:.2f}")
                cmp(C, "free drafting TPOT", free, cr[5], "fmt", "{:.2f}")
                cmp(C, "one target pass", pas, cr[6], "fmt", "{:.2f}")
                cmp(C, "drafting cost", cost, cr[7], "fmt", "{:.2f}")
                cmp(C, "share of plain step", f"{cost/base['tpot_p50']*100:.0f} %", cr[8], "eq")
                cmp(W, "free_drafting_tpot_ms", free, row.free_drafting_tpot_ms, rel=1e-6)
                cmp(W, "pass_ms", pas, row.pass_ms, rel=1e-6)
                cmp(W, "drafting_cost_ms_per_pass", cost, row.drafting_cost_ms_per_pass, rel=1e-6)
                # tables.txt
                cmp(f"tables.txt {t} {m}", f"c={c}", f"{b['tput']:.1f} ({x(tr)})", TX[t][label[m]][5 + conc.index(c)], "eq")
    # ---- frontier.csv (system tok/s, per-user tok/s = 1000 / TPOT p50, served req/s, mean in flight,
    #      the queueing flag: TTFT p50 > 3x the same server's c=1 cell)
    for _, fr in frontier.iterrows():
        m, t, c = fr.method, fr.task, int(fr.concurrency)
        b = BN[(m, t, c)]; d = b["raw"]
        F = f"frontier.csv {m}/{t}/c{c}"
        cmp(F, "system_tok_s", b["tput"], fr.system_tok_s, rel=1e-6)
        cmp(F, "per_user_tok_s", 1000 / b["tpot_p50"], fr.per_user_tok_s, rel=1e-6)
        cmp(F, "ttft_p50_ms", b["ttft_p50"], fr.ttft_p50_ms, rel=1e-6)
        cmp(F, "served_req_s", b["completed"] / b["duration"], fr.served_req_s, rel=1e-6)
        cmp(F, "mean_in_flight", sum(d["latencies"]) / b["duration"], fr.mean_in_flight, rel=1e-6)
        q = c > 1 and b["ttft_p50"] > 3 * BN[(m, t, 1)]["ttft_p50"]
        cmp(F, "queueing flag", q, "queueing" in ("" if pd.isna(fr["flags"]) else fr["flags"]), "eq")
    # ---- crossover (point estimates: a win is a ratio > 1.0)
    for _, cr in cross.iterrows():
        m, t = cr.method, cr.task
        for basis, key, col in (("latency", "ts", "tpot_text"), ("throughput", "tr", "throughput_text")):
            wins = [BN[(m, t, c)][key] > 1.0 for c in conc]
            if not any(wins):
                want = "never beats the baseline (tested 1, 4)"
            elif all(wins):
                want = "beats the baseline at every tested concurrency"
            else:
                first_loss = next(c for c, w in zip(conc, wins) if not w and any(wins[:conc.index(c)]))
                last_win = max(c for c, w in zip(conc, wins) if w and c < first_loss)
                want = f"stops beating the baseline at concurrency {first_loss} (last win at {last_win})"
            cmp(f"crossover.csv {m}/{t}", basis, want, cr[col], "in")
            hdr, rows = T[(t, "Crossover concurrency")]
            r = next(rr for rr in rows if rr[0] == label[m])
            cmp(f"report.md {t} crossover {m}", basis, want, r[2 if basis == "latency" else 3], "in")
    # ---- tiny bundle: acceptance only
    print(f"== tiny bundle {tiny.name}")
    tacc = pd.read_csv(tiny / "report" / "tables" / "acceptance.csv")
    TTX = txt_tables((tiny / "tables.txt").read_text())
    TA = {}
    for m in sorted(p.name for p in tiny.iterdir() if (p / "summary.json").exists()):
        for t in tasks:
            a = acceptance(tiny / m, t)
            TA[(m, t)] = a
            row = tacc[(tacc.method == m) & (tacc.task == t)].iloc[0]
            cmp(f"tiny acceptance.csv {m}/{t}", "requests", a["requests"], row.requests)
            cmp(f"tiny acceptance.csv {m}/{t}", "distinct", a["distinct"], row.distinct_outputs)
            cmp(f"tiny acceptance.csv {m}/{t}", "finish", a["finish"], json.loads(row.finish_reasons), kind="eq")
            if "steps" not in a:
                continue
            dd = pdiff(tiny / m / "snapshots", f"acceptance_{t}")
            for what, mine, key in (("steps = Δnum_drafts", a["steps"], "vllm:spec_decode_num_drafts_total"),
                                    ("drafted = Δdraft_tokens", a["drafted"], "vllm:spec_decode_num_draft_tokens_total"),
                                    ("accepted = Δaccepted", a["accepted"], "vllm:spec_decode_num_accepted_tokens_total")):
                ok = cmp(f"tiny {m}/{t} acceptance window", what, mine, dd.get(key, 0.0))
                ID.append(("tiny " + m, t, what, mine, dd.get(key), ok))
            for p in range(a["k"]):
                ok = cmp(f"tiny {m}/{t} acceptance window", f"per position {p}", a["ge"][p],
                         dd.get(("vllm:spec_decode_num_accepted_tokens_per_pos_total", p), 0.0))
                ID.append(("tiny " + m, t, f"pos {p}", a["ge"][p], dd.get(("vllm:spec_decode_num_accepted_tokens_per_pos_total", p)), ok))
            for col, v in (("acceptance_rate", a["rate"]), ("mean_acceptance_length", a["length"]),
                           ("no_accept_share", a["no_accept"]), ("num_spec_steps", a["steps"]),
                           ("num_draft_tokens", a["drafted"]), ("num_accepted_draft_tokens", a["accepted"])):
                cmp(f"tiny acceptance.csv {m}/{t}", col, v, row[col])
            cmp(f"tiny acceptance.csv {m}/{t}", "histogram", a["hist"], json.loads(row.histogram), kind="eq")
            for p, v in enumerate(a["per_position"]):
                cmp(f"tiny acceptance.csv {m}/{t}", f"per_position[{p}] (csv: 6 decimals)", v, json.loads(row.per_position)[p], "abs")
            cmp(f"tiny tables.txt {t} {m}", "acceptance", a["rate"] * 100, TTX[t][m][2], "fmt", "{:.1f} %")
            cmp(f"tiny tables.txt {t} {m}", "acc. length", a["length"], TTX[t][m][3], "fmt", "{:.2f}")

    # ------------------------------------------------------------ print figures
    print("\n-- acceptance (Σ accepted / Σ drafted; 1 + accepted/steps), trained set")
    for (m, t), a in A.items():
        if "steps" in a:
            lw = f"; without loops {a['rate_wo']*100:.1f} % / {a['len_wo']:.2f}" if a["loops"] else ""
            print(f"  {m:12s} {t:5s} {a['accepted']:4d}/{a['drafted']:5d} = {a['rate']*100:5.1f} %  len {a['length']:.2f}  "
                  f"steps {a['steps']}  loops {len(a['loops'])}{lw}")
        else:
            print(f"  {m:12s} {t:5s} no drafts; loops {len(a['loops'])} {[r for r, _ in a['loops']]}")
    print("-- acceptance, tiny set")
    for (m, t), a in TA.items():
        if "steps" in a:
            print(f"  {m:12s} {t:5s} {a['accepted']:4d}/{a['drafted']:5d} = {a['rate']*100:5.1f} %  len {a['length']:.2f}")
    print("-- greedy answers equal to the baseline's (token ids):",
          ", ".join(f"{m}/{t} {e}/{n}" for (m, t), (e, n) in EQ.items()))
    print(f"-- per-request vs counter identities: {sum(1 for r in ID if r[-1])} of {len(ID)} exact")
    print("\n-- bench cells: tok/s (× base), TPOT p50, E2EL mean, tokens/target pass B, tok/chunk, burst, max/median E2EL, TTFT")
    for (m, t, c), b in BN.items():
        extra = f"({b['tr']:.2f}×, TPOT {b['ts']:.2f}×) B {b['B']:.2f}" if m != "baseline" else ""
        print(f"  {m:12s} {t:5s} c={c} {b['tput']:6.1f} {extra:32s} TPOT {b['tpot_p50']:6.2f} E2EL mean {b['e2el_mean']:7.1f} "
              f"chunk {b['tokens_per_chunk']:.2f} burst {b['burst']} e2el max/med {b['e2el_max_over_median']:.2f} "
              f"ttft max/med {b['ttft_max_over_median']:.2f}")

    # ------------------------------------------------------------ flaws 1-8
    print("\n-- issue #41 flaws")
    f1 = []
    for (m, t, c), b in BN.items():
        if m != "baseline" and b["B"] and (b["tr"] > b["B"] + 1e-9 or b["ts"] > b["B"] + 1e-9):
            f1.append(f"{m}/{t}/c{c}: tput {b['tr']:.2f}×, TPOT {b['ts']:.2f}× > B {b['B']:.2f}")
    slow = []
    for m in methods:
        for t in tasks:
            b1, b4 = BN[(m, t, 1)], BN[(m, t, 4)]
            if b1["e2el_mean"] > b4["e2el_mean"] or b4["tput"] / b1["tput"] > 4:
                slow.append(f"{m}/{t}: c=1 E2EL mean {b1['e2el_mean']:.0f} vs c=4 {b4['e2el_mean']:.0f} ms; "
                            f"TPOT p50 {b1['tpot_p50']:.2f} vs {b4['tpot_p50']:.2f} ms; "
                            f"tput c4/c1 ×{b4['tput']/b1['tput']:.2f}")
    print("1. ratios above tokens per target pass:", f1 or "none")
    print("   c=1 cells slower per request than the same server's c=4 (E2EL mean), or throughput c=4/c=1 > 4:", slow or "none")
    for m in methods:
        for t in tasks:
            b1, b4 = BN[(m, t, 1)], BN[(m, t, 4)]
            print(f"     {m:12s} {t:5s} E2EL mean c=1 {b1['e2el_mean']:7.1f} c=4 {b4['e2el_mean']:7.1f} ms; "
                  f"TPOT p50 c=1 {b1['tpot_p50']:6.2f} c=4 {b4['tpot_p50']:6.2f} ms; tput c=4/c=1 x{b4['tput']/b1['tput']:.2f}")
    print("   speed.csv beyond_bound true:", int(speed["beyond_bound"].astype("boolean").fillna(False).sum()),
          "slow_c1 true:", int(speed["slow_c1"].astype("boolean").fillna(False).sum()))
    bursts = {k: b["burst"] for k, b in BN.items() if b["burst"]}
    print("2. requests with TTFT >= 0.9 E2EL (read in one burst):", bursts or "none",
          "| speed.csv tpot_burst_* nonzero:",
          int((speed.tpot_burst_method.fillna(0) > 0).sum() + (speed.tpot_burst_baseline.fillna(0) > 0).sum()))
    stl = {k: round(b["e2el_max_over_median"], 2) for k, b in BN.items() if b["e2el_max_over_median"] > 2}
    print("3. cells with an E2EL outlier > 2× the cell's median:", stl or "none",
          "| speed.csv stall true:", int(speed["stall"].astype("boolean").fillna(False).sum()),
          "| crossover.csv stalled_concurrencies set:", int(cross.stalled_concurrencies.notna().sum()))
    print("4. 'tail disagrees' in report.md:", report.count("tail disagrees"),
          "| speed.csv tail_disagrees true:", int(speed["tail_disagrees"].astype("boolean").fillna(False).sum()))
    q1 = frontier[(frontier.concurrency == 1) & frontier["flags"].fillna("").str.contains("queueing")]
    print("5. frontier.csv c=1 rows flagged queueing:", len(q1), "| c>1 rows flagged queueing:",
          int(((frontier.concurrency > 1) & frontier["flags"].fillna("").str.contains("queueing")).sum()))
    worst = min(((k, b["tr"]) for k, b in BN.items() if k[0] != "baseline"), key=lambda kv: kv[1])
    wk = worst[0]
    wrow = speed[(speed.method == wk[0]) & (speed.task == wk[1]) & (speed.concurrency == wk[2])].iloc[0]
    print(f"6. worst cell {wk} at {worst[1]:.2f}×: bursts {BN[wk]['burst']}, tput c4/c1 of its own server "
          f"×{BN[(wk[0], wk[1], 4)]['tput']/BN[(wk[0], wk[1], 1)]['tput']:.2f}, e2el max/median "
          f"{BN[wk]['e2el_max_over_median']:.2f}; report verdict '{wrow.verdict}', note '{'' if pd.isna(wrow.note) else wrow.note}'")
    print("7. cells with 'busy host' in report.md's verdict table:",
          sum(c_.count("busy host") for r in T[('', 'Verdict')][1] for c_ in r), "of",
          sum(1 for m in methods if m != "baseline") * len(tasks) * len(conc),
          "| speed.csv host_busy true:", int(speed["host_busy"].astype("boolean").fillna(False).sum()),
          "| other_cpu_share range:", f"{speed.other_cpu_share.min():.3f}-{speed.other_cpu_share.max():.3f}")
    ind = [l.strip()[:160] for l in report.splitlines() if re.search(r"independent", l, re.I)]
    print("8. lines of report.md with 'independent':", len(ind))
    for l in ind:
        print("   ", l)

    print(f"\n== figures compared: {N_CMP}; mismatches: {len(MISMATCH)}")
    for k_, v in sorted(BY_SOURCE.items(), key=lambda kv: -kv[1]):
        print(f"  {v:5d}  {k_}")
    for w, what, mine, theirs in MISMATCH:
        print(f"  MISMATCH {w}: {what}: recomputed {mine!r}, stated {theirs!r}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
