// Strategy and search-space files share their keys: a strategy gives one value per key,
// a space a value, a list of values or `auto`. Both are read into a SearchSpace here; a
// strategy is the space's single point.

#include <string>

#include "config/parse.hpp"
#include "config/pipeline_layout.hpp"
#include "config/reader.hpp"

namespace paraplan::config {

const EnumNames<Precision> kPrecisionNames{{"bf16", Precision::Bf16}, {"fp8", Precision::Fp8}};
const EnumNames<Optimizer> kOptimizerNames{{"adam", Optimizer::Adam},
                                           {"adam8bit", Optimizer::Adam8bit},
                                           {"adam_bf16", Optimizer::AdamBf16}};
const EnumNames<Dispatch> kDispatchNames{{"allgather", Dispatch::AllGather},
                                         {"alltoall", Dispatch::AllToAll},
                                         {"deepep", Dispatch::DeepEp},
                                         {"sendrecv_allgather", Dispatch::SendRecvAllGather},
                                         {"sendrecv_deepep", Dispatch::SendRecvDeepEp}};
const EnumNames<Routing> kRoutingNames{{"uniform", Routing::Uniform},
                                       {"node_limited", Routing::NodeLimited},
                                       {"balanced", Routing::Balanced},
                                       {"round_robin", Routing::RoundRobin}};
const EnumNames<Schedule> kScheduleNames{{"1f1b", Schedule::OneFOneB},
                                         {"interleaved", Schedule::Interleaved},
                                         {"zero_bubble", Schedule::ZeroBubble},
                                         {"dualpipe", Schedule::DualPipe},
                                         {"dualpipev", Schedule::DualPipeV}};
const EnumNames<CollectiveAlgorithm> kCollectiveAlgorithmNames{
    {"auto", CollectiveAlgorithm::Auto},
    {"ring", CollectiveAlgorithm::Ring},
    {"hierarchical", CollectiveAlgorithm::Hierarchical},
    {"halving_doubling", CollectiveAlgorithm::HalvingDoubling},
    {"tree", CollectiveAlgorithm::Tree}};
const EnumNames<CpComm> kCpCommNames{{"p2p", CpComm::P2p},
                                     {"allgather", CpComm::AllGather},
                                     {"torch_allgather", CpComm::TorchAllGather},
                                     {"a2a", CpComm::A2a}};
const EnumNames<Fp8Recipe> kFp8RecipeNames{{"delayed", Fp8Recipe::Delayed},
                                           {"tensorwise", Fp8Recipe::Tensorwise},
                                           {"blockwise", Fp8Recipe::Blockwise},
                                           {"mxfp8", Fp8Recipe::Mxfp8}};
const EnumNames<Objective> kObjectiveNames{{"tgs", Objective::Tgs},
                                           {"step_time", Objective::StepTime},
                                           {"mfu", Objective::Mfu},
                                           {"memory", Objective::Memory}};

namespace {

const EnumNames<RecomputeMode> kRecomputeModeNames{{"none", RecomputeMode::None},
                                                   {"selective", RecomputeMode::Selective},
                                                   {"full", RecomputeMode::Full},
                                                   {"op", RecomputeMode::Op}};
const EnumNames<RecomputeModule> kModuleNames{{"core_attn", RecomputeModule::CoreAttn},
                                              {"layernorm", RecomputeModule::LayerNorm},
                                              {"mla_up_proj", RecomputeModule::MlaUpProj},
                                              {"mlp", RecomputeModule::Mlp},
                                              {"moe", RecomputeModule::Moe},
                                              {"moe_act", RecomputeModule::MoeAct},
                                              {"shared_experts", RecomputeModule::SharedExperts}};

/// Reads values that may be lists or `auto` in a space and must be single in a strategy.
class ChoiceReader {
 public:
  ChoiceReader(bool space, Diags& diags) : space_(space), diags_(diags) {}

  template <typename T, typename One>
  void read(MapReader& r, std::string_view key, Choice<T>& out, One one,
            Need need = Need::Optional) {
    const Node* n = r.get(key, need);
    if (n == nullptr) return;
    const std::string what = r.dotted(key);
    if (n->is_scalar() && n->scalar == "auto") {
      if (space_) {
        out.auto_values = true;
        out.values.clear();
      } else {
        single_only(*n, what);
      }
      return;
    }
    if (n->is_seq()) {
      if (!space_) {
        single_only(*n, what);
        return;
      }
      if (n->items.empty()) diags_.error(n->loc, "`" + what + "` is an empty list");
      out.values.clear();
      for (const Node& item : n->items) {
        if (auto v = one(item, what)) out.values.push_back(*v);
      }
      return;
    }
    if (auto v = one(*n, what)) out.values = {*v};
  }

  bool space() const { return space_; }

 private:
  void single_only(const Node& n, const std::string& what) {
    diags_.error(n.loc, "`" + what +
                            "` takes one value in a strategy; lists and `auto` belong in a "
                            "search space (`*.space.yaml`)");
  }
  bool space_;
  Diags& diags_;
};

template <typename T>
T first_or(const Choice<T>& c, T fallback) {
  return c.values.empty() ? fallback : c.values.front();
}

// A key that is a boolean or a third, named mode: 0 false, 1 true, 2 the mode.
std::optional<int> boolean_or(MapReader& r, const char* key, const char* mode) {
  const Node* n = r.get(key);
  if (n == nullptr) return std::nullopt;
  const EnumNames<int> names{{"true", 1}, {"false", 0}, {mode, 2}};
  const std::optional<bool> b = n->is_scalar() ? boolean_spelling(n->scalar) : std::nullopt;
  return b ? std::optional<int>(*b ? 1 : 0) : r.scalars().enumeration(*n, r.dotted(key), names);
}

SearchSpace read_common(const Node& root, Diags& diags, bool space) {
  SearchSpace sp;
  MapReader r(&root, diags, "");
  if (r.node() == nullptr) return sp;
  ChoiceReader choice(space, diags);
  ScalarReader s(diags);
  auto count = [&](int lo, int hi) {
    return [&s, lo, hi](const Node& n, const std::string& what) -> std::optional<int> {
      auto v = s.integer(n, what, lo, hi);
      return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
    };
  };
  auto boolean = [&s](const Node& n, const std::string& what) { return s.boolean(n, what); };
  auto enumeration = [&s](const auto& names) {
    return [&s, &names](const Node& n, const std::string& what) {
      return s.enumeration(n, what, names);
    };
  };

  if (auto v = r.text("name")) sp.name = *v;
  if (auto v = r.text("description")) sp.description = *v;
  if (auto v = r.text("hardware", Need::Required)) sp.hardware = *v;
  if (auto v = r.text("model", Need::Required)) sp.model = *v;
  choice.read(r, "nodes", sp.nodes, count(1, 1 << 20), Need::Required);

  // Parallel degrees: absent means 1 in a strategy and `auto` in a space (cp and etp: 1;
  // `auto` on them enumerates their degrees).
  {
    const Node* node = r.get("parallel", space ? Need::Optional : Need::Required);
    MapReader p(node, diags, "parallel", r.loc());
    for (auto [key, field] : {std::pair{"tp", &sp.tp}, std::pair{"pp", &sp.pp},
                              std::pair{"dp", &sp.dp}, std::pair{"ep", &sp.ep},
                              std::pair{"etp", &sp.etp}, std::pair{"vpp", &sp.vpp},
                              std::pair{"cp", &sp.cp}}) {
      choice.read(p, key, *field, count(1, 1 << 20));
      if (field->values.empty() && !field->auto_values) {
        if (space && field != &sp.cp && field != &sp.etp) {
          field->auto_values = true;
        } else {
          field->values = {1};
        }
      }
    }
    choice.read(p, "sp", sp.sp, boolean);
    if (auto v = p.count("dp_replicate", Need::Optional, 1, 1 << 20)) sp.dp_replicate = *v;
    // Megatron-LM's uneven-pipeline options, under their Megatron names.
    if (auto v = p.count("decoder_first_pipeline_num_layers", Need::Optional, 0, 1 << 20)) sp.first_stage_layers = *v;
    if (auto v = p.count("decoder_last_pipeline_num_layers", Need::Optional, 0, 1 << 20)) sp.last_stage_layers = *v;
    if (auto v = p.boolean("account_for_embedding_in_pipeline_split")) sp.embedding_in_split = *v;
    if (auto v = p.boolean("account_for_loss_in_pipeline_split")) sp.loss_in_split = *v;
    if (const Node* n = p.get("pipeline_model_parallel_layout")) {
      if (auto v = ScalarReader(diags).text(*n, "parallel.pipeline_model_parallel_layout")) {
        std::string error;
        std::size_t at = 0;
        if (config::parse_pipeline_layout(*v, error, at).empty()) {
          diags.error(n->loc, "`parallel.pipeline_model_parallel_layout`: " + error + " at character " +
                                  std::to_string(at + 1) + " of \"" + *v + "\"");
        } else {
          sp.pipeline_layout = *v;
        }
      }
    }
    p.finish();
  }
  choice.read(r, "ep_over_dies", sp.ep_over_dies, boolean);

  {
    const Node* node = r.get("training", Need::Required);
    MapReader t(node, diags, "training", r.loc());
    choice.read(t, "micro_batch", sp.micro_batch, count(1, 1 << 20), Need::Required);
    choice.read(t, "global_batch", sp.global_batch, count(1, 1 << 28), Need::Required);
    if (auto v = t.count("seq_len", Need::Optional, 1, 1 << 28)) sp.seq_len = *v;
    choice.read(t, "precision", sp.precision, enumeration(kPrecisionNames));
    // recompute: a mode, or a list of modules; in a space, a list of those.
    if (const Node* n = t.get("recompute")) {
      auto one = [&](const Node& v, const std::string& what) -> std::optional<Recompute> {
        Recompute rc;
        if (v.is_seq()) {
          rc.mode = RecomputeMode::Modules;
          if (v.items.empty()) diags.error(v.loc, "`" + what + "` lists no module; write `none`");
          for (const Node& m : v.items) {
            if (auto mod = s.enumeration(m, what, kModuleNames)) {
              rc.modules[static_cast<int>(*mod)] = true;
            }
          }
          return rc;
        }
        auto mode = s.enumeration(v, what, kRecomputeModeNames);
        if (!mode) return std::nullopt;
        rc.mode = *mode;
        return rc;
      };
      const std::string what = t.dotted("recompute");
      if (space && n->is_seq()) {
        // A list of choices; a choice that is itself a list is a module list.
        for (const Node& item : n->items) {
          if (auto v = one(item, what)) sp.recompute.values.push_back(*v);
        }
      } else if (space && n->is_scalar() && n->scalar == "auto") {
        sp.recompute.auto_values = true;
      } else if (auto v = one(*n, what)) {
        sp.recompute.values = {*v};
      }
    }
    choice.read(t, "zero", sp.zero, count(0, 3));
    choice.read(t, "optimizer", sp.optimizer, enumeration(kOptimizerNames));
    choice.read(t, "optimizer_offload", sp.optimizer_offload, boolean);
    choice.read(t, "fp8_params", sp.fp8_params, boolean);
    choice.read(t, "activation_offload", sp.activation_offload, boolean);
    if (auto v = t.enumeration("elementwise", EnumNames<bool>{{"fused", false}, {"eager", true}})) {
      sp.eager_elementwise = *v;
    }
    if (auto v = t.enumeration("loss", EnumNames<int>{{"fused", 0}, {"eager", 1}, {"unfused", 2}})) {
      sp.eager_loss = *v;
    }
    if (auto v = t.boolean("fp8_storage")) sp.fp8_storage = *v;
    // true | false | full (the whole iteration's forward and backward in one graph)
    if (const auto v = boolean_or(t, "cuda_graphs", "full")) {
      sp.cuda_graphs = *v > 0;
      sp.cuda_graphs_full = *v == 2;
    }
    if (auto v = t.boolean("fp8_head")) sp.fp8_head = *v;
    if (auto v = t.enumeration("rope", EnumNames<bool>{{"fused", false}, {"unfused", true}})) sp.unfused_rope = *v;
    if (auto v = t.count("offload_layers", Need::Optional, 0, 1 << 20)) sp.offload_layers = *v;
    choice.read(t, "recompute_layers", sp.recompute_layers, count(0, 1 << 20));
    if (auto v = t.enumeration("grad_precision", EnumNames<bool>{{"fp32", false}, {"bf16", true}})) {
      sp.bf16_grads = *v;
    }
    if (auto v = t.enumeration("grad_sync", EnumNames<bool>{{"run", false}, {"micro_batch", true}})) {
      sp.grad_sync_micro_batch = *v;
    }
    if (auto v = t.enumeration("grad_accumulation", EnumNames<bool>{{"fused", false}, {"fp32_add", true}})) {
      sp.fp32_grad_add = *v;
    }
    if (auto v = t.enumeration("grad_reduce", EnumNames<bool>{{"reduce_scatter", false}, {"all_reduce", true}})) {
      sp.grad_all_reduce = *v;
    }
    if (auto v = t.boolean("repeat_kv")) sp.repeat_kv = *v;
    if (auto v = t.enumeration("linears", EnumNames<bool>{{"fused", false}, {"separate", true}})) {
      sp.separate_linears = *v;
    }
    if (auto v = t.enumeration("fp8_recipe", kFp8RecipeNames)) sp.fp8_recipe = *v;
    if (auto v = t.count("pipeline_runs", Need::Optional, 1, 1 << 20)) sp.pipeline_runs = *v;
    choice.read(t, "cp_comm", sp.cp_comm, enumeration(kCpCommNames));
    // flash (the hardware's default kernel), unfused, or one of the hardware's flash-attention
    // kernels by name (checked against the hardware by the `attention_kernel` rule).
    if (auto v = t.text("attention")) {
      if (*v == "unfused") {
        sp.unfused_attention = true;
      } else if (*v != "flash") {
        sp.attention_kernel = *v;
      }
    }
    t.finish();
  }
  if (const Node* node = r.get("moe")) {
    MapReader m(node, diags, "moe");
    choice.read(m, "dispatch", sp.dispatch, enumeration(kDispatchNames));
    choice.read(m, "routing", sp.routing, enumeration(kRoutingNames));
    choice.read(m, "chunks", sp.chunks, count(1, 64));
    if (auto v = m.number("imbalance", 1.0, 1e6)) sp.imbalance = *v;
    if (auto v = m.enumeration("dispatch_precision", EnumNames<bool>{{"bf16", false}, {"fp8", true}})) {
      sp.fp8_dispatch = *v;
    }
    if (auto v = m.enumeration("gate_at", EnumNames<bool>{{"combine", false}, {"swiglu", true}})) {
      sp.gate_at_swiglu = *v;
    }
    if (auto v = m.boolean("fused_mlp")) sp.fused_mlp = *v;
    m.finish();
  }
  choice.read(r, "schedule", sp.schedule, enumeration(kScheduleNames));
  if (const Node* node = r.get("overlap")) {
    MapReader o(node, diags, "overlap");
    if (auto v = o.boolean("ep")) sp.overlap.ep = *v;
    if (auto v = o.boolean("dp")) sp.overlap.dp = *v;
    // tp: true | false | async (torch's micro-pipelined AsyncTP, Overlap::tp_async)
    if (const auto v = boolean_or(o, "tp", "async")) {
      sp.overlap.tp = *v != 0;
      sp.overlap.tp_async = *v == 2;
    }
    // pp: true | false | lockstep (torch's per-time-step transfers, Overlap::pp_lockstep)
    if (const auto v = boolean_or(o, "pp", "lockstep")) {
      sp.overlap.pp = *v == 1;
      sp.overlap.pp_lockstep = *v == 2;
    }
    if (auto v = o.boolean("cp")) sp.overlap.cp = *v;
    o.finish();
  }
  // `auto` is a value here, not "every value": read it as a plain enumeration.
  if (auto v = r.enumeration("collective_algorithm", kCollectiveAlgorithmNames)) {
    sp.collective_algorithm = *v;
  }
  if (space) {
    if (auto v = r.enumeration("objective", kObjectiveNames)) sp.objective = *v;
    if (auto v = r.count("top", Need::Optional, 1, 1 << 20)) sp.top = *v;
    if (auto v = r.fraction("memory_headroom")) sp.memory_headroom = *v;
  }
  r.finish();
  return sp;
}

}  // namespace

Strategy read_strategy(const Node& root, Diags& diags) {
  SearchSpace sp = read_common(root, diags, false);
  Strategy s;
  s.name = sp.name;
  s.description = sp.description;
  s.hardware = sp.hardware;
  s.model = sp.model;
  s.nodes = first_or(sp.nodes, 1);
  s.parallel.tp = first_or(sp.tp, 1);
  s.parallel.pp = first_or(sp.pp, 1);
  s.parallel.dp = first_or(sp.dp, 1);
  s.parallel.ep = first_or(sp.ep, 1);
  s.parallel.etp = first_or(sp.etp, 1);
  s.parallel.vpp = first_or(sp.vpp, 1);
  s.parallel.cp = first_or(sp.cp, 1);
  s.parallel.sp = first_or(sp.sp, false);
  s.parallel.dp_replicate = sp.dp_replicate;
  s.parallel.first_stage_layers = sp.first_stage_layers;
  s.parallel.pipeline_layout = sp.pipeline_layout;
  s.parallel.last_stage_layers = sp.last_stage_layers;
  s.parallel.embedding_in_split = sp.embedding_in_split;
  s.parallel.loss_in_split = sp.loss_in_split;
  s.ep_over_dies = first_or(sp.ep_over_dies, false);
  s.training.micro_batch = first_or(sp.micro_batch, 1);
  s.training.global_batch = first_or(sp.global_batch, 1);
  s.training.seq_len = sp.seq_len;
  s.training.precision = first_or(sp.precision, Precision::Bf16);
  s.training.recompute = first_or(sp.recompute, Recompute{});
  s.training.zero = first_or(sp.zero, 1);
  s.training.optimizer = first_or(sp.optimizer, Optimizer::Adam);
  s.training.optimizer_offload = first_or(sp.optimizer_offload, false);
  s.training.activation_offload = first_or(sp.activation_offload, false);
  s.training.unfused_attention = sp.unfused_attention;
  s.training.attention_kernel = sp.attention_kernel;
  s.training.eager_elementwise = sp.eager_elementwise;
  s.training.eager_loss = sp.loss_eager();
  s.training.unfused_loss = sp.loss_unfused();
  s.training.fp8_storage = sp.fp8_storage;
  s.training.fp8_params = first_or(sp.fp8_params, false);
  s.training.bf16_grads = sp.bf16_grads;
  s.training.grad_sync_micro_batch = sp.grad_sync_micro_batch;
  s.training.fp32_grad_add = sp.fp32_grad_add;
  s.training.grad_all_reduce = sp.grad_all_reduce;
  s.training.cuda_graphs = sp.cuda_graphs;
  s.training.cuda_graphs_full = sp.cuda_graphs_full;
  s.training.fp8_head = sp.fp8_head;
  s.training.unfused_rope = sp.unfused_rope;
  s.training.offload_layers = sp.offload_layers;
  s.training.recompute_layers = first_or(sp.recompute_layers, 0);
  s.training.repeat_kv = sp.repeat_kv;
  s.training.separate_linears = sp.separate_linears;
  s.training.fp8_recipe = sp.fp8_recipe;
  s.training.pipeline_runs = sp.pipeline_runs;
  s.training.cp_comm = first_or(sp.cp_comm, CpComm::P2p);
  s.moe.dispatch = first_or(sp.dispatch, Dispatch::AllToAll);
  s.moe.routing = first_or(sp.routing, Routing::Uniform);
  s.moe.chunks = first_or(sp.chunks, 1);
  s.moe.imbalance = sp.imbalance;
  s.moe.fp8_dispatch = sp.fp8_dispatch;
  s.moe.gate_at_swiglu = sp.gate_at_swiglu;
  s.moe.fused_mlp = sp.fused_mlp;
  s.schedule = first_or(sp.schedule, Schedule::OneFOneB);
  s.overlap = sp.overlap;
  s.collective_algorithm = sp.collective_algorithm;
  return s;
}

SearchSpace read_space(const Node& root, Diags& diags) { return read_common(root, diags, true); }

std::string recompute_spelling(const Recompute& r) {
  if (r.mode != RecomputeMode::Modules) return std::string(spelling(kRecomputeModeNames, r.mode));
  std::string out = "[";
  for (const auto& [text, module] : kModuleNames) {
    if (!r.has(module)) continue;
    if (out.size() > 1) out += ", ";
    out += text;
  }
  return out + "]";
}

std::string recompute_label(const Training& t) {
  std::string out = recompute_spelling(t.recompute);
  if (t.recompute_layers > 0 && t.recompute.mode != RecomputeMode::Modules) out += ",";
  if (t.recompute_layers > 0)
    out += " " + std::to_string(t.recompute_layers) + (t.recompute_layers == 1 ? " layer" : " layers") + " per chunk";
  return out;
}

}  // namespace paraplan::config
