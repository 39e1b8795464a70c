#!/usr/bin/env python3
"""paraplan's per-stage memory next to Megatron-LM's theoretical memory formula.

Megatron-LM prints a "theoretical memory footprint" at start-up (`report_theoretical_memory`,
NVIDIA/Megatron-LM@00caa53 megatron/training/theoretical_memory_usage.py). This script
evaluates that formula, as the file defines it, for the validation cases named below (the
arguments are derived from each case's model and strategy, the way Megatron's command line
would carry them), runs `paraplan evaluate --format json` on the same case, and prints one
Markdown table per case. docs/megatron-memory.md holds its output and explains every gap.

Usage (from the repository root, after ./build.sh test):
  python3 docs/megatron_memory.py                  print the tables
  python3 docs/megatron_memory.py --check FILE.md  exit 1 unless FILE.md holds these tables
"""

import json
import math
import os
import subprocess
import sys
import tempfile

try:
    import yaml  # Debian python3-yaml (./build.sh installs it)
except ImportError:
    sys.stderr.write("docs/megatron_memory.py needs PyYAML (Debian: python3-yaml)\n")
    sys.exit(77)  # ctest's skip code

CASES = [
    "validation/korthikanti2022-175b-sp-selective.yaml",
    "validation/nemo2407-llama3-70b.yaml",
    "validation/zoo-qwen3-235b-deepep-ep32-pp8.yaml",
    "validation/bridge2509-deepseek-v3.yaml",
]
GB = 1e9
MIB = 1024.0 * 1024.0


def load_model(case, root):
    m = case["model"]
    if isinstance(m, str):
        with open(os.path.join(root, "models", m + ".yaml")) as f:
            return yaml.safe_load(f)
    return m


def megatron_args(case, model):
    """The arguments Megatron's formula reads, as the case's run would set them."""
    s = case["strategy"]
    par, tr = s["parallel"], s["training"]
    att, ffn, moe = model["attention"], model["ffn"], model.get("moe") or {}
    tp, pp, dp = par.get("tp", 1), par.get("pp", 1), par.get("dp", 1)
    vpp = par.get("vpp", 1)
    recompute = tr.get("recompute", "none")
    selective = recompute == "selective" or isinstance(recompute, list)
    # --make-vocab-size-divisible-by 128, times TP (megatron/training/tokenizer).
    div = 128 * tp
    layers = model["layers"]
    dense = moe.get("dense_layers", 0) if moe else layers
    a = dict(
        hidden=model["hidden"], layers=layers, heads=att["heads"],
        kv_heads=att.get("kv_heads", att["heads"]), kv_channels=att.get("head_dim", 0),
        mla=att["kind"] == "mla", ffn=ffn["intermediate"], swiglu=ffn["kind"] == "swiglu",
        norm=1 if model.get("norm", "rmsnorm") == "rmsnorm" else 2,
        vocab=int(math.ceil(model["vocab"] / div) * div), untied=not model.get("tied_embeddings", False),
        experts=moe.get("routed_experts"), moe_ffn=moe.get("expert_intermediate", 0),
        shared_ffn=moe.get("shared_experts", 0) * moe.get("expert_intermediate", 0),
        moe_pattern=[0] * dense + [1] * (layers - dense) if moe else [0] * layers,
        mtp=model.get("mtp_depth") or None,
        tp=tp, pp=pp, vpp=vpp if vpp > 1 else None, dp=dp,
        dist_opt=tr.get("zero", 0) >= 1, sp=par.get("sp", False), selective=selective,
        seq=model["seq_len"], mb=tr["micro_batch"],
        microbatches=tr["global_batch"] // (tr["micro_batch"] * dp),
    )
    if a["mla"]:
        a.update(q_lora=att.get("q_lora_rank"), kv_lora=att["kv_lora_rank"],
                 qk_head=att["qk_nope_head_dim"], qk_pos=att["qk_rope_head_dim"],
                 v_head=att["v_head_dim"])
    return a


def weight_and_optimizer_bytes(a):
    """compute_weight_and_optimizer_memory: the most loaded shard (first stage) x bytes/param."""
    h = a["hidden"]
    if a["mla"]:
        q = (h * a["heads"] * (a["qk_head"] + a["qk_pos"]) if a["q_lora"] is None else
             a["q_lora"] * (h + a["heads"] * (a["qk_head"] + a["qk_pos"]) + a["norm"]))
        attn = (q + a["kv_lora"] * (h + a["heads"] * (a["qk_head"] + a["v_head"]) + a["norm"])
                + h * a["qk_pos"] + a["heads"] * a["v_head"] * h)
    else:
        ratio = a["kv_channels"] * a["heads"] / h
        attn = 2 * h * h * (1 + a["kv_heads"] / a["heads"]) * ratio
    gated = 1.5 if a["swiglu"] else 1.0
    dense_layer = 2 * h * (a["ffn"] * gated + a["norm"]) + attn
    experts = a["experts"] or 1
    moe_layer = 2 * h * (a["moe_ffn"] * experts * gated + a["shared_ffn"] * gated + a["norm"]) + attn
    n_moe = sum(a["moe_pattern"])
    n_dense = a["layers"] - n_moe
    block = dense_layer * n_dense + moe_layer * n_moe + a["norm"] * h
    mtp = 0
    if a["mtp"]:
        mtp = (moe_layer if a["moe_pattern"][-1] else dense_layer) * a["mtp"]
    emb = h * a["vocab"]
    shard = (block / a["pp"] + mtp + emb) / a["tp"]
    if a["untied"] and a["pp"] == 1:
        shard += emb / a["tp"]
    per_param = 6 + 12 / a["dp"] if a["dist_opt"] else 18
    return shard * per_param, shard, per_param


def activation_bytes(a):
    """compute_activation_memory (SP and selective) or ..._without_sp (every other setting)."""
    s, b, h, t, pp = a["seq"], a["mb"], a["hidden"], a["tp"], a["pp"]
    with_sp = a["sp"] and a["selective"]
    per_layer = s * b * h * ((18 + 4 * a["ffn"] / h) if with_sp else 10 + 24 / t)
    act = per_layer * a["layers"] + 8 * s * b * pp + s * b * h * pp
    if a["vpp"]:
        act *= 1 + (pp - 1) / (pp * a["vpp"])
    elif pp > 1:
        act *= min(1, a["microbatches"] / pp)
    if pp == 1:
        act += (s * b * h * 4 * (1 + a["vocab"] / h) if with_sp else
                (s * b * a["vocab"] / t + s * b * h) * 2)
    if with_sp:  # the SP branch divides by TP at the end, layer term included
        return act / t, per_layer / t
    return act * 1.05, per_layer


def paraplan_stage0(case_path, case, root, exe):
    with tempfile.TemporaryDirectory() as tmp:
        strategy = dict(case["strategy"])
        strategy["hardware"] = case["hardware"]
        if isinstance(case["model"], dict):
            model_file = os.path.join(tmp, "model.yaml")
            with open(model_file, "w") as f:
                yaml.safe_dump(case["model"], f)
            strategy["model"] = model_file
        else:
            strategy["model"] = case["model"]
        path = os.path.join(tmp, "strategy.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(strategy, f)
        out = subprocess.run([exe, "evaluate", path, "--format", "json"], check=True,
                             capture_output=True, text=True).stdout
    est = json.loads(out)
    return est["stages"][0], est["stages"][est["worst_stage"]], est


def table(case_path, root, exe):
    with open(os.path.join(root, case_path)) as f:
        case = yaml.safe_load(f)
    model = load_model(case, root)
    a = megatron_args(case, model)
    wo, shard, per_param = weight_and_optimizer_bytes(a)
    act, per_layer = activation_bytes(a)
    st0, worst, est = paraplan_stage0(case_path, case, root, exe)
    p_wo = st0["weights"] + st0["gradients"] + st0["optimizer_states"]
    p_other = st0["buffers"] + st0["reserve"]
    params0 = st0["dense_params"] + st0["expert_params"]
    formula = "SP + selective: sbh (18 + 4 ffn/h) / t" if a["sp"] and a["selective"] else \
        "without SP: sbh (10 + 24/t), x 1.05"
    rows = [
        ("parameters on the first stage", f"{shard / 1e9:.3f} B", f"{params0 / 1e9:.3f} B"),
        ("bytes per parameter (weights + gradients + optimizer)", f"{per_param:.2f}",
         f"{p_wo / params0:.2f}"),
        ("weights + gradients + optimizer", f"{wo / GB:.2f} GB", f"{p_wo / GB:.2f} GB"),
        ("activations", f"{act / GB:.2f} GB", f"{st0['activations'] / GB:.2f} GB"),
        ("buffers + reserve", "-", f"{p_other / GB:.2f} GB"),
        ("total", f"{(wo + act) / GB:.2f} GB ({(wo + act) / MIB:,.0f} MiB)",
         f"{st0['total'] / GB:.2f} GB"),
    ]
    name = case["name"]
    lines = [f"### {name}", "",
             f"`{case_path}`; activation branch: {formula}; Megatron's layer term "
             f"{per_layer / MIB:,.1f} MiB per layer, "
             f"{a['microbatches']} micro-batches per DP rank. "
             f"paraplan's worst stage: {est['worst_stage']}, {worst['total'] / GB:.2f} GB.", "",
             "| first pipeline stage | Megatron-LM formula | paraplan |", "|---|---:|---:|"]
    lines += [f"| {r[0]} | {r[1]} | {r[2]} |" for r in rows]
    return "\n".join(lines) + "\n"


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    exe = os.environ.get("PARAPLAN", os.path.join(root, "build", "paraplan"))
    text = "\n".join(table(c, root, exe) for c in CASES)
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        with open(sys.argv[2]) as f:
            doc = f.read()
        if text not in doc:
            sys.stderr.write(f"{sys.argv[2]} does not hold the current tables; run "
                             "python3 docs/megatron_memory.py and paste its output:\n" + text)
            return 1
        print(f"{sys.argv[2]}: the {len(CASES)} tables match")
        return 0
    if len(sys.argv) != 1:
        sys.stderr.write(__doc__)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
