// Interoperation: a Hugging Face config.json read as a model (import-hf, and a .json path
// wherever a model is expected), and a plan written as Megatron-LM arguments or a
// torchtitan job TOML (export). Expected counts are derived by hand from the published
// configurations; expected flags from the strategy files.

#include "paraplan/interop.hpp"

#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "paraplan/config.hpp"
#include "paraplan/errors.hpp"
#include "paraplan/model.hpp"
#include "paraplan/planner.hpp"
#include "paraplan/validate.hpp"

namespace fs = std::filesystem;
using namespace paraplan;

namespace {

std::string hf(const std::string& rel) {
  return (fs::path(PARAPLAN_TEST_DATA) / "hf" / rel).string();
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Runs the CLI with stdout and stderr to files; returns the exit status (-1 on a signal).
struct Run {
  int rc = -1;
  std::string out, err;
};
Run cli(const std::string& args) {
  static int n = 0;
  const fs::path dir = fs::temp_directory_path();
  const fs::path out = dir / ("paraplan_interop_out_" + std::to_string(++n));
  const fs::path err = dir / ("paraplan_interop_err_" + std::to_string(n));
  const std::string cmd =
      std::string(PARAPLAN_CLI) + " " + args + " > " + out.string() + " 2> " + err.string();
  const int status = std::system(cmd.c_str());
  Run r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read(out);
  r.err = read(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The lines of `text` that start with `prefix` (after indentation).
std::vector<std::string> lines_with(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    const std::size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos && line.compare(first, prefix.size(), prefix) == 0)
      out.push_back(line.substr(first));
    start = end + 1;
  }
  return out;
}

/// The diagnostics a throwing call reports, as `file:line:col: error: message` lines.
template <typename F>
std::vector<std::string> diagnostics_of(F f) {
  try {
    f();
  } catch (const ConfigError& e) {
    std::vector<std::string> out;
    for (const Diagnostic& d : e.diagnostics()) out.push_back(d.str());
    return out;
  }
  return {};
}

}  // namespace

TEST_SUITE("interop.hf_import") {
  TEST_CASE(
      "DeepSeek-V3's config.json is the preset: 671,026,404,352 parameters, 37,552,282,624 "
      "active") {
    const HfImport r = import_hf_config(hf("deepseek-v3/config.json"));
    const ModelSpec preset = load_model("deepseek-v3");
    const ModelSpec& m = r.model;
    CHECK(r.model_type == "deepseek_v3");
    CHECK(m.name == "deepseek-v3");  // the folder of .../deepseek-v3/config.json
    // config.json: num_hidden_layers 61, hidden_size 7168, vocab_size 129280, MLA with
    // q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head 128; 256 routed and
    // 1 shared experts of moe_intermediate_size 2048, top-8; first_k_dense_replace 3 dense
    // layers of intermediate_size 18432; one MTP module; routing limited to topk_group 4 of
    // n_group 8 groups (noaux_tc), a group per node; max_position_embeddings 163840.
    CHECK(m.layers == 61);
    CHECK(m.attention.kind == AttentionKind::Mla);
    CHECK(m.attention.q_lora_rank == 1536);
    CHECK(m.attention.v_head_dim == 128);
    REQUIRE(m.moe.has_value());
    CHECK(m.moe->dense_layers == 3);
    CHECK(m.moe->shared_experts == 1);
    CHECK(m.moe->max_nodes_per_token == preset.moe->max_nodes_per_token);
    CHECK(m.mtp_depth == 1);
    CHECK(m.seq_len == 163840);
    CHECK_FALSE(m.tied_embeddings);
    // Counts (tests/unit/model_counts_test.cpp derives them by hand for the preset):
    //   3 dense layers x 583,483,392 + 58 MoE layers x 11,507,286,016 + embedding and head
    //   2 x 129280 x 7168 + final norm 7168 = 671,026,404,352; active: 58 x 585,320,448 for
    //   the MoE layers = 37,552,282,624; MTP: 11,610,067,968.
    const ModelCounts c = count_model(m, 4096), p = count_model(preset, 4096);
    CHECK(c.total_params == 671'026'404'352);
    CHECK(c.active_params == 37'552'282'624);
    CHECK(c.mtp_params == 11'610'067'968);
    CHECK(c.total_params == p.total_params);
    CHECK(c.active_params == p.active_params);
    // At the preset's 4K sequence, the FLOP per token are the preset's too.
    CHECK(c.flops_per_token == doctest::Approx(p.flops_per_token).epsilon(1e-12));
  }

  TEST_CASE(
      "Qwen3-235B-A22B's config.json is the validation case's model: 235,093,634,560 / "
      "22,190,763,520") {
    const HfImport r = import_hf_config(hf("qwen3-235b-a22b/config.json"));
    const ModelSpec ref =
        load_cases(
            (fs::path(PARAPLAN_SOURCE_DIR) / "validation/bridge2509-qwen3-235b-a22b.yaml").string())
            .front()
            .plan.model;
    const ModelSpec& m = r.model;
    CHECK(r.model_type == "qwen3_moe");
    CHECK(m.attention.kind == AttentionKind::Gqa);
    CHECK(m.attention.kv_heads == 4);
    CHECK(m.attention.head_dim == 128);  // head_dim, not hidden / heads = 64
    REQUIRE(m.moe.has_value());
    CHECK(m.moe->dense_layers == 0);  // decoder_sparse_step 1, mlp_only_layers []
    CHECK(m.moe->shared_experts == 0);
    CHECK(m.seq_len == 40960);
    // per layer: q 4096 x 8192 + k, v 2 x 4096 x 512 + o 8192 x 4096 = 71,303,168; qk-norm
    //   2 x 128 = 256; router 128 x 4096 = 524,288; expert 3 x 4096 x 1536 = 18,874,368;
    //   norms 8192
    //   MoE layer: 8192 + 71,303,424 + 524,288 + 128 x 18,874,368 = 2,487,755,008
    //   active:    8192 + 71,303,424 + 524,288 +   8 x 18,874,368 =   222,830,848
    // + embedding and head 2 x 151936 x 4096 = 1,244,659,712 + final norm 4096
    const ModelCounts c = count_model(m), v = count_model(ref);
    CHECK(m.attention.qk_norm);
    CHECK(c.total_params == 94LL * 2'487'755'008 + 1'244'659'712 + 4096);
    CHECK(c.total_params == 235'093'634'560);
    CHECK(c.active_params == 94LL * 222'830'848 + 1'244'659'712 + 4096);
    CHECK(c.active_params == 22'190'763'520);
    CHECK(c.total_params == v.total_params);
    CHECK(c.active_params == v.active_params);
    CHECK(r.notes.empty());
  }

  TEST_CASE("every key not mapped is listed, in file order") {
    const HfImport r = import_hf_config(hf("deepseek-v3/config.json"));
    const std::vector<std::string> expected{"architectures",     "auto_map",
                                            "aux_loss_alpha",    "bos_token_id",
                                            "eos_token_id",      "ep_size",
                                            "initializer_range", "norm_topk_prob",
                                            "pretraining_tp",    "quantization_config",
                                            "rms_norm_eps",      "rope_scaling",
                                            "rope_theta",        "routed_scaling_factor",
                                            "scoring_func",      "seq_aux",
                                            "torch_dtype",       "transformers_version",
                                            "use_cache"};
    CHECK(r.unmapped == expected);
    // --seq-len replaces max_position_embeddings, which is then not mapped either.
    HfImportOptions opt;
    opt.seq_len = 4096;
    const HfImport s = import_hf_config(hf("deepseek-v3/config.json"), opt);
    CHECK(s.model.seq_len == 4096);
    CHECK(std::find(s.unmapped.begin(), s.unmapped.end(), "max_position_embeddings") !=
          s.unmapped.end());
  }

  TEST_CASE("the printed YAML loads as the same model, each value naming its config.json key") {
    for (const char* file : {"deepseek-v3/config.json", "qwen3-235b-a22b/config.json"}) {
      CAPTURE(file);
      const HfImport r = import_hf_config(hf(file));
      const ModelSpec again = parse_model(r.yaml, "imported.yaml");
      const ModelCounts a = count_model(again), b = count_model(r.model);
      CHECK(again.name == r.model.name);
      CHECK(a.total_params == b.total_params);
      CHECK(a.active_params == b.active_params);
      CHECK(a.mtp_params == b.mtp_params);
      CHECK(a.flops_per_token == doctest::Approx(b.flops_per_token));
      CHECK(has(r.yaml, "layers: 61") != has(r.yaml, "layers: 94"));
      CHECK(has(r.yaml, "# num_hidden_layers"));
      CHECK(has(r.yaml, "# Not mapped: architectures"));
    }
  }

  TEST_CASE(
      "a config.json works wherever a model does: load_model, --set model=, a strategy's model:, "
      "extends:") {
    const std::string json = hf("deepseek-v3/config.json");
    CHECK(count_model(load_model(json)).total_params == 671'026'404'352);
    CHECK(detect_kind(json) == FileKind::Model);
    CHECK(check_file(json) == FileKind::Model);
    // The seeds' base case with the imported model at the preset's 4K sequence: the same
    // step time as with the preset, to the last bit (the same numbers in the same order).
    const Plan preset = load_plan("br166-ep16-mb2", {"training.seq_len=4096"});
    const Plan set = load_plan("br166-ep16-mb2", {"model=" + json, "training.seq_len=4096"});
    const Plan file = load_plan((fs::path(PARAPLAN_TEST_DATA) / "good/hf-strategy.yaml").string());
    const double step =
        Planner(preset.hardware, preset.model).evaluate(preset.strategy).step_time_s;
    CHECK(Planner(set.hardware, set.model).evaluate(set.strategy).step_time_s == step);
    CHECK(Planner(file.hardware, file.model).evaluate(file.strategy).step_time_s == step);
    // A model file that extends a config.json and changes the sequence and the name.
    const ModelSpec ext =
        load_model((fs::path(PARAPLAN_TEST_DATA) / "good/hf-extends.yaml").string());
    CHECK(ext.name == "qwen3-235b-a22b-4k");
    CHECK(ext.seq_len == 4096);
    CHECK(count_model(ext).total_params == 235'093'634'560);
    // A .json file is a model, never hardware or a strategy.
    const auto d = diagnostics_of([&] { (void)load_hardware(json); });
    REQUIRE(d.size() == 1);
    CHECK(d.front() ==
          json +
              ": error: a .json file is read as a Hugging Face config.json, which is a model, "
              "not a hardware file");
  }

  TEST_CASE("the other families: published parameter counts") {
    // Llama 2 7B (meta-llama/Llama-2-7b-hf): MHA, 32 layers, h 4096, SwiGLU 11008, vocab 32000.
    //   layer 4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096 = 202,383,360; x 32 + 2 x 32000 x 4096
    //   + 4096 = 6,738,415,616 (the 6.74B of the model card).
    const std::string llama2 =
        R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
      "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32000,
      "max_position_embeddings": 4096, "hidden_act": "silu", "tie_word_embeddings": false,
      "rms_norm_eps": 1e-05, "attention_bias": false, "mlp_bias": false})";
    const HfImport l2 = parse_hf_config(llama2, "llama-2-7b.json");
    CHECK(l2.model.attention.kind == AttentionKind::Mha);
    CHECK(l2.model.attention.head_dim == 128);
    CHECK(count_model(l2.model).total_params == 6'738'415'616);
    CHECK(l2.model.name == "llama-2-7b");

    // Llama 3 70B (meta-llama/Meta-Llama-3-70B): the preset's 70,553,706,496.
    const std::string llama3 =
        R"({"model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672,
      "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 128256,
      "max_position_embeddings": 8192, "hidden_act": "silu", "rope_theta": 500000.0})";
    const HfImport l3 = parse_hf_config(llama3, "Meta-Llama-3-70B/config.json");
    CHECK(l3.model.name == "meta-llama-3-70b");
    CHECK(l3.model.attention.kind == AttentionKind::Gqa);
    CHECK(count_model(l3.model).total_params == count_model(load_model("llama3-70b")).total_params);
    CHECK(count_model(l3.model).total_params == 70'553'706'496);

    // Mixtral 8x7B (mistralai/Mixtral-8x7B-v0.1): the preset, 46,702,792,704 total (46.7B).
    //   layer: attention 2 x 4096^2 + 2 x 4096 x 1024 = 41,943,040; router 8 x 4096;
    //   8 experts x 3 x 4096 x 14336 = 1,409,286,144; norms 8192 -> 1,451,270,144 x 32
    //   + 2 x 32000 x 4096 + 4096
    const std::string mixtral =
        R"({"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
      "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
      "max_position_embeddings": 32768, "num_local_experts": 8, "num_experts_per_tok": 2,
      "sliding_window": null, "router_aux_loss_coef": 0.02})";
    const HfImport mx = parse_hf_config(mixtral, "mixtral.json");
    REQUIRE(mx.model.moe.has_value());
    CHECK(mx.model.moe->routed_experts == 8);
    CHECK(mx.model.moe->expert_intermediate == 14336);
    CHECK(count_model(mx.model).total_params == 46'702'792'704);
    CHECK(count_model(mx.model).total_params ==
          count_model(load_model("mixtral-8x7b")).total_params);
    CHECK(count_model(mx.model).active_params ==
          count_model(load_model("mixtral-8x7b")).active_params);

    // GPT-NeoX-20B (EleutherAI/gpt-neox-20b): LayerNorm, biases, GeLU MLP 4h, untied.
    //   layer: attention 4h^2 + 4h = 151,019,520; MLP 2 x 6144 x 24576 + 24576 + 6144 =
    //   302,020,608; 2 LayerNorms 4h = 24,576 -> 453,064,704 x 44 = 19,934,846,976;
    //   + 2 x 50432 x 6144 = 619,708,416 + final LayerNorm 12,288 = 20,554,567,680.
    const std::string neox =
        R"({"model_type": "gpt_neox", "hidden_size": 6144, "intermediate_size": 24576,
      "num_hidden_layers": 44, "num_attention_heads": 64, "vocab_size": 50432, "hidden_act": "gelu_fast",
      "max_position_embeddings": 2048, "rotary_pct": 0.25, "tie_word_embeddings": false,
      "use_parallel_residual": true, "attention_dropout": 0, "hidden_dropout": 0})";
    const HfImport nx = parse_hf_config(neox, "gpt-neox-20b.json");
    CHECK(nx.model.norm == NormKind::LayerNorm);
    CHECK(nx.model.bias);
    CHECK(nx.model.ffn.kind == FfnKind::Gelu);
    CHECK(count_model(nx.model).total_params == 20'554'567'680);
    CHECK(nx.notes.size() == 1);  // use_parallel_residual

    // Qwen3-8B (Qwen/Qwen3-8B): the checkpoint's 8,190,735,360, of them 36 x 2 x 128 = 9,216
    // the per-head query and key RMSNorm weights (qk-norm).
    const std::string qwen3 =
        R"({"model_type": "qwen3", "hidden_size": 4096, "intermediate_size": 12288,
      "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
      "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": false})";
    const HfImport q3 = parse_hf_config(qwen3, "qwen3-8b.json");
    CHECK(count_model(q3.model).total_params == 8'190'735'360);
    CHECK_FALSE(q3.model.moe.has_value());

    // DeepSeek-V2-Lite: no query compression (q_lora_rank null), 64 routed + 2 shared experts
    // of 1408, top-6, one dense layer of 10944, greedy routing (no group limit).
    //   MLA: q 2048 x 16 x 192 + kv_a 2048 x 576 + norm 512 + kv_b 512 x 16 x 256 + o 16 x 128 x
    //   2048
    //     = 13,763,072; dense layer 4096 + MLA + 3 x 2048 x 10944 = 81,007,104;
    //   MoE layer 4096 + MLA + router 64 x 2048 + 66 x 3 x 2048 x 1408 = 584,847,872;
    //   81,007,104 + 26 x 584,847,872 + 2 x 102400 x 2048 + 2048 = 15,706,484,224 (the 15.7B).
    const std::string v2lite =
        R"({"model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944,
      "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 102400,
      "max_position_embeddings": 163840, "q_lora_rank": null, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
      "qk_rope_head_dim": 64, "v_head_dim": 128, "n_routed_experts": 64, "n_shared_experts": 2,
      "num_experts_per_tok": 6, "moe_intermediate_size": 1408, "first_k_dense_replace": 1,
      "moe_layer_freq": 1, "n_group": 1, "topk_group": 1, "topk_method": "greedy"})";
    const HfImport v2 = parse_hf_config(v2lite, "deepseek-v2-lite.json");
    CHECK(v2.model.attention.q_lora_rank == 0);
    REQUIRE(v2.model.moe.has_value());
    CHECK(v2.model.moe->max_nodes_per_token == 0);
    CHECK(v2.model.mtp_depth == 0);
    CHECK(count_model(v2.model).total_params == 15'706'484'224);
  }

  TEST_CASE("GPT-OSS 120B: experts with biases, the clamped GLU, windows on every second layer") {
    // openai/gpt-oss-120b: 36 layers, h 2880, 64 query heads and 8 KV heads of 64, 128 experts
    // of 2880 (top-4) on every layer, biases on the attention projections, the experts and the
    // router, untied vocab 201088, sliding window 128 on the even layers, swiglu_limit 7.
    //   attention 2880 x 4096 + 4096 + 2 (2880 x 512 + 512) + 4096 x 2880 + 2880 = 26,550,080;
    //   router 128 x 2880 + 128 = 368,768; experts 128 x (2880 x 5760 + 5760 + 2880^2 + 2880)
    //   = 3,186,155,520; norms 5,760 -> 3,213,080,128 x 36 + 2 x 201088 x 2880 + 2880
    //   = 116,829,154,368: the model card's 116.83B (OpenAI, gpt-oss-120b & gpt-oss-20b model
    //   card, Table 1), less the 36 x 64 attention-sink offsets paraplan does not count.
    //   Active: 4 experts instead of 128 -> 5,711,980,608, the card's 5.13B plus the 579M
    //   input embedding it leaves out.
    std::string types;
    for (int i = 0; i < 36; ++i) types += std::string(i ? ", " : "") + (i % 2 == 0 ? "\"sliding_attention\"" : "\"full_attention\"");
    const std::string cfg =
        R"({"model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880,
      "num_hidden_layers": 36, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
      "vocab_size": 201088, "max_position_embeddings": 131072, "num_local_experts": 128,
      "num_experts_per_tok": 4, "experts_per_token": 4, "attention_bias": true, "hidden_act": "silu",
      "sliding_window": 128, "swiglu_limit": 7.0, "tie_word_embeddings": false, "layer_types": [)" +
        types + "]}";
    const HfImport g = parse_hf_config(cfg, "gpt-oss-120b/config.json");
    CHECK(g.model.name == "gpt-oss-120b");
    CHECK(g.model.bias);
    CHECK(g.model.ffn.clamp == 7.0);
    CHECK(g.model.attention.kind == AttentionKind::Gqa);
    CHECK(g.model.attention.head_dim == 64);
    CHECK(g.model.attention.window == 128);
    CHECK(g.model.attention.window_layers == 18);
    REQUIRE(g.model.moe.has_value());
    CHECK(g.model.moe->dense_layers == 0);
    CHECK(g.model.moe->routed_experts == 128);
    CHECK(g.model.moe->top_k == 4);
    CHECK(g.model.moe->expert_intermediate == 2880);
    CHECK(count_model(g.model).total_params == 116'829'154'368);
    CHECK(count_model(g.model).active_params == 5'711'980'608);
    CHECK(g.unmapped.empty());
    REQUIRE(g.notes.size() == 1);
    CHECK(g.notes.front().find("attention sinks") == 0);
  }

  TEST_CASE("sliding windows: Mistral's on every layer, Qwen3's from max_window_layers on, layer_types") {
    // Mistral 7B (mistralai/Mistral-7B-v0.1): sliding_window 4096 on all 32 layers; its
    // 7,241,732,096 parameters: 32 x (2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336 + 2 x
    // 4096) + 2 x 32000 x 4096 + 4096.
    const std::string mistral =
        R"({"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
      "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
      "max_position_embeddings": 32768, "sliding_window": 4096, "hidden_act": "silu"})";
    const HfImport m = parse_hf_config(mistral, "mistral-7b.json");
    CHECK(m.model.attention.window == 4096);
    CHECK(m.model.attention.window_layers == 32);
    CHECK(count_model(m.model).total_params == 7'241'732'096);
    // Qwen3 with use_sliding_window: layers from max_window_layers (28) on, 36 - 28 = 8
    const std::string qwen3 =
        R"({"model_type": "qwen3", "hidden_size": 4096, "intermediate_size": 12288,
      "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
      "vocab_size": 151936, "max_position_embeddings": 40960, "use_sliding_window": true,
      "sliding_window": 4096, "max_window_layers": 28})";
    const HfImport q = parse_hf_config(qwen3, "qwen3-swa.json");
    CHECK(q.model.attention.window == 4096);
    CHECK(q.model.attention.window_layers == 8);
    // use_sliding_window false: no window, whatever sliding_window says
    std::string off = qwen3;
    const std::string on_key = "\"use_sliding_window\": true";
    off.replace(off.find(on_key), on_key.size(), "\"use_sliding_window\": false");
    CHECK(parse_hf_config(off, "qwen3-off.json").model.attention.window == 0);
    // layer_types (GPT-OSS, Gemma 3 in recent transformers): the sliding_attention entries
    const std::string typed =
        R"({"model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096,
      "num_hidden_layers": 4, "num_attention_heads": 8, "vocab_size": 32000, "max_position_embeddings": 8192,
      "sliding_window": 128, "layer_types": ["sliding_attention", "full_attention", "sliding_attention",
      "full_attention"]})";
    const HfImport t = parse_hf_config(typed, "alternating.json");
    CHECK(t.model.attention.window == 128);
    CHECK(t.model.attention.window_layers == 2);
    // a layer_types list of the wrong length is an error at the list
    const std::string wrong =
        R"({"model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096,
      "num_hidden_layers": 4, "num_attention_heads": 8, "vocab_size": 32000, "max_position_embeddings": 8192,
      "sliding_window": 128, "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]})";
    const auto d = diagnostics_of([&] { (void)parse_hf_config(wrong, "wrong.json"); });
    REQUIRE(d.size() == 1);
    CHECK(d[0].find("wrong.json:3:45: error: ") == 0);
    CHECK(d[0].find("`layer_types` lists 3 layers, `num_hidden_layers` is 4") != std::string::npos);
  }

  TEST_CASE(
      "Qwen3-MoE dense layers that are not the leading ones: counted, placed first, and said") {
    // 8 layers, decoder_sparse_step 2, mlp_only_layers [3]: MoE when (i + 1) % 2 == 0 and
    // i != 3, so layers 1, 5, 7 are MoE and 0, 2, 3, 4, 6 dense.
    const std::string json =
        R"({"model_type": "qwen3_moe", "hidden_size": 1024, "intermediate_size": 3072,
      "num_hidden_layers": 8, "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 64,
      "vocab_size": 32000, "max_position_embeddings": 4096, "num_experts": 16, "num_experts_per_tok": 2,
      "moe_intermediate_size": 512, "decoder_sparse_step": 2, "mlp_only_layers": [3]})";
    const HfImport r = parse_hf_config(json, "small-moe.json");
    REQUIRE(r.model.moe.has_value());
    CHECK(r.model.moe->dense_layers == 5);
    bool said = false;
    for (const std::string& n : r.notes)
      said = said || has(n, "dense layers 0, 2, 3, 4, 6 are not the leading ones");
    CHECK(said);
  }

  TEST_CASE("bad config.json files: exit 2, located") {
    struct Case {
      const char* file;
      const char* message;
    };
    const Case cases[] = {
        {"bad/bad_values.json",
         ":4:24: error: `num_hidden_layers` must be a whole number, got `many`"},
        {"bad/missing_hidden.json", ":1:1: error: missing required key `hidden_size`"},
        {"bad/not_json.json", ":4:27: error: not JSON: expected a key in double quotes, found `,`"},
        {"bad/not_object.json",
         ":1:1: error: a Hugging Face config.json is one JSON object of model settings "
         "({\"model_type\": ...})"},
        {"bad/unknown_type.json",
         ":2:17: error: unknown model_type `bert` (paraplan imports deepseek_v2, deepseek_v3, "
         "gpt_neox, gpt_oss, llama, mistral, mixtral, qwen3, qwen3_moe)"},
    };
    for (const Case& c : cases) {
      CAPTURE(c.file);
      const std::string path = hf(c.file);
      const std::vector<std::string> d = diagnostics_of([&] { (void)import_hf_config(path); });
      REQUIRE(d.size() == 1);
      CHECK(d.front() == path + c.message);
      // The same through the CLI, and where a model is expected.
      const Run r = cli("import-hf " + path);
      CHECK(r.rc == 2);
      CHECK(r.err == path + c.message + "\n");
      CHECK(r.out.empty());
      CHECK(cli("rank -m " + path).rc == 2);
    }
    // JSON syntax, each at its place.
    auto first = [](const std::string& json) {
      const auto d = diagnostics_of([&] { (void)parse_hf_config(json, "c.json"); });
      return d.empty() ? std::string() : d.front();
    };
    CHECK(first("{\"model_type\": \"llama") ==
          "c.json:1:16: error: not JSON: string not closed by `\"`");
    CHECK(first("{\"a\": 1, \"a\": 2}") ==
          "c.json:1:10: error: duplicate key \"a\" (first at line 1)");
    CHECK(first("{\"a\": 01}") ==
          "c.json:1:8: error: not JSON: expected `,` or `}` in the object, found `1`");
    CHECK(first("{\"a\": [1, 2}") ==
          "c.json:1:12: error: not JSON: expected `,` or `]` in the array, found `}`");
    CHECK(first("") == "c.json:1:1: error: not JSON: the file is empty");
    CHECK(first("{} x") ==
          "c.json:1:4: error: not JSON: unexpected text after the top-level value");
    CHECK(first("{\n  \"a\": tru\n}") ==
          "c.json:2:8: error: not JSON: expected a value (an object, array, string, number, true, "
          "false or null), "
          "found `t`");
    CHECK(first("{}") == "c.json:1:1: error: missing required key `model_type`");
  }

  TEST_CASE("mutated config.json files import or fail with ConfigError, never otherwise") {
    // Deterministic mutants of DeepSeek-V3's config.json: a byte deleted, replaced or
    // duplicated, a cut-off tail.
    const std::string base = read(hf("deepseek-v3/config.json"));
    unsigned seed = 7;
    auto next = [&] {
      seed = seed * 1103515245u + 12345u;
      return (seed >> 8) % static_cast<unsigned>(base.size());
    };
    const std::string junk = "{}[],:\"\\0-eE.9 \nntfuxN";
    int ok = 0, rejected = 0;
    for (int i = 0; i < 600; ++i) {
      std::string m = base;
      const unsigned at = next();
      switch (i % 4) {
        case 0:
          m.erase(at, 1);
          break;
        case 1:
          m[at] = junk[next() % junk.size()];
          break;
        case 2:
          m.insert(at, 1, m[at]);
          break;
        case 3:
          m.resize(at);
          break;
      }
      try {
        (void)parse_hf_config(m, "mutant.json");
        ++ok;
      } catch (const ConfigError& e) {
        CHECK_FALSE(e.diagnostics().empty());
        ++rejected;
      }
    }
    MESSAGE("imported " << ok << ", rejected " << rejected);
    CHECK(rejected > 0);
    CHECK(ok > 0);  // a changed digit or a space still imports
  }

  TEST_CASE(
      "import-hf prints the YAML, lists what it did not map, and writes with -o only when it can") {
    const Run p = cli("import-hf " + hf("qwen3-235b-a22b/config.json") + " --seq-len 4096");
    CHECK(p.rc == 0);
    CHECK(has(p.out, "seq_len: 4096"));
    CHECK(has(p.err,
              "unmapped: architectures, bos_token_id, eos_token_id, initializer_range, "
              "max_position_embeddings, norm_topk_prob"));
    CHECK(
        has(p.err,
            "qwen3-235b-a22b (model_type qwen3_moe): 235.09B parameters, 22.19B active per token"));
    const fs::path out = fs::temp_directory_path() / "paraplan_interop_import" / "qwen3.yaml";
    fs::remove_all(out.parent_path());
    const Run w = cli("import-hf " + hf("qwen3-235b-a22b/config.json") + " --name qwen3-test -o " +
                      out.string());
    CHECK(w.rc == 0);
    CHECK(w.out == "wrote " + out.string() + " (`paraplan check " + out.string() + "`)\n");
    const ModelSpec m = load_model(out.string());
    CHECK(m.name == "qwen3-test");
    CHECK(count_model(m).total_params == 235'093'634'560);
    fs::remove_all(out.parent_path());
    const Run bad =
        cli("import-hf " + hf("qwen3-235b-a22b/config.json") + " -o /proc/no/such/dir/m.yaml");
    CHECK(bad.rc == 2);
    CHECK_FALSE(has(bad.out, "wrote"));
    CHECK(has(bad.err, "paraplan import-hf: cannot write /proc/no/such/dir/m.yaml"));
  }
}

TEST_SUITE("interop.export") {
  TEST_CASE("Megatron-LM arguments of deepseek-v3-h800, each from the strategy file") {
    const std::string m = launch_settings(load_plan("deepseek-v3-h800"), LaunchTarget::Megatron);
    // parallel: {tp: 1, pp: 16, dp: 128, ep: 64}; etp and cp default 1; no sp, no vpp.
    for (const char* flag :
         {"--tensor-model-parallel-size 1", "--pipeline-model-parallel-size 16",
          "--expert-model-parallel-size 64", "--expert-tensor-parallel-size 1",
          "--context-parallel-size 1",
          // training: micro_batch 1, global_batch 15360, the model's 4096 sequence
          "--micro-batch-size 1", "--global-batch-size 15360", "--seq-length 4096",
          // recompute: [layernorm, mla_up_proj, moe_act]
          "--recompute-granularity selective", "--recompute-modules layernorm mla_up_proj moe_act",
          // precision fp8 with fp8_storage; zero 1; optimizer adam_bf16
          // fp8_recipe blockwise (DeepSeek-V3's 1x128 / 128x128 scales)
          "--bf16", "--fp8-format hybrid", "--fp8-recipe blockwise", "--fp8-param-gather", "--use-distributed-optimizer",
          "--use-precision-aware-optimizer", "--exp-avg-dtype bf16", "--exp-avg-sq-dtype bf16",
          // moe: dispatch deepep; node_limited routing, 4 nodes per token of EP 64 / 8 GPUs = 8
          // nodes
          "--moe-token-dispatcher-type flex", "--moe-flex-dispatcher-backend deepep",
          "--moe-router-num-groups 8", "--moe-router-group-topk 4",
          // overlap dp
          "--overlap-grad-reduce", "--overlap-param-gather",
          // the model: 3 dense layers then 58 MoE, one MTP module
          "--moe-layer-freq \"([0]*3+[1]*58)\"", "--mtp-num-layers 1",
          "--multi-latent-attention"}) {
      CAPTURE(flag);
      CHECK(lines_with(m, flag).size() == 1);
    }
    CHECK(lines_with(m, "--sequence-parallel").empty());
    CHECK(lines_with(m, "--num-layers-per-virtual-pipeline-stage").empty());
    CHECK(lines_with(m, "--recompute-method").empty());
    // DualPipe has no Megatron-LM schedule; 61 layers over 16 stages as 3 3 4 ... 4 3 is not
    // first / last / even middle: the nearest split (3 + 14 x 4 + 2 = 61) is named.
    const auto lost = lines_with(m, "# not expressible:");
    REQUIRE(lost.size() == 3);
    CHECK(has(lost[0], "layers per pipeline chunk 3 3 4 4 4 4 4 4 4 4 4 4 4 4 4 3"));
    CHECK(
        has(lost[0],
            "nearest: --decoder-first-pipeline-num-layers 3 --decoder-last-pipeline-num-layers 2"));
    CHECK(has(lost[1], "schedule dualpipe"));
    CHECK(has(lost[2], "moe.dispatch_precision fp8"));
    CHECK(has(m, "MEGATRON_ARGS=(\n"));
    CHECK(has(m, "\n)\n"));
  }

  TEST_CASE("training.cuda_graphs: read from the strategy, written as Megatron-LM's per-layer graphs") {
    // A dropless MoE layer is captured up to its host sync: Megatron-Core's modules attn,
    // moe_router, moe_preprocess (NVIDIA/Megatron-LM@d98e8a64dd enums.py, CudaGraphModule);
    // a dense model's layers whole, no module list. torchtitan has no such setting.
    Plan moe = load_plan("deepseek-v3-h800");
    CHECK_FALSE(moe.strategy.training.cuda_graphs);
    CHECK(lines_with(launch_settings(moe, LaunchTarget::Megatron), "--cuda-graph-impl").empty());
    moe.strategy.training.cuda_graphs = true;
    const std::string m = launch_settings(moe, LaunchTarget::Megatron);
    CHECK(lines_with(m, "--cuda-graph-impl transformer_engine").size() == 1);
    CHECK(lines_with(m, "--cuda-graph-modules attn moe_router moe_preprocess").size() == 1);
    CHECK(lines_with(launch_settings(moe, LaunchTarget::Torchtitan), "# not expressible: training.cuda_graphs").size() == 1);
    Plan dense;
    dense.model = load_model("llama3-70b");
    dense.hardware = load_hardware("h100-sxm-ib");
    dense.strategy = parse_strategy(
        "hardware: h100-sxm-ib\nmodel: llama3-70b\nnodes: 8\nparallel: {tp: 8, pp: 1, dp: 8}\n"
        "training: {micro_batch: 1, global_batch: 64, cuda_graphs: true}\n",
        "g.yaml", dense.hardware, dense.model);
    CHECK(dense.strategy.training.cuda_graphs);
    const std::string d = launch_settings(dense, LaunchTarget::Megatron);
    CHECK(lines_with(d, "--cuda-graph-impl transformer_engine").size() == 1);
    CHECK(lines_with(d, "--cuda-graph-modules").empty());
  }

  TEST_CASE("hybrid sharding exports as torchtitan's replicate x shard degrees and Megatron's optimizer instances") {
    // torchtitan [parallelism] data_parallel_replicate_degree x data_parallel_shard_degree = dp;
    // Megatron-LM megatron/training/arguments.py --num-distributed-optimizer-instances.
    Plan p = parse_plan("hardware: h100-sxm-ib\nmodel: llama3-70b\nnodes: 12\nparallel: {tp: 1, pp: 1, dp: 96, dp_replicate: 12}\n"
                        "training: {micro_batch: 2, global_batch: 192, zero: 3}\n",
                        "hsdp.yaml");
    const std::string tt = launch_settings(p, LaunchTarget::Torchtitan);
    CHECK(lines_with(tt, "data_parallel_replicate_degree = 12").size() == 1);
    CHECK(lines_with(tt, "data_parallel_shard_degree = 8").size() == 1);
    CHECK(lines_with(launch_settings(p, LaunchTarget::Megatron), "--num-distributed-optimizer-instances 12").size() == 1);
  }

  TEST_CASE("layer offload exports as Megatron-LM's --cpu-offloading-num-layers") {
    // Megatron-LM megatron/training/arguments.py: cpu_offloading_num_layers > 0 turns
    // cpu_offloading on; torchtitan has no counterpart.
    const Plan p = parse_plan(
        "hardware: gb200-nvl72\nmodel: llama3-70b\nnodes: 16\nparallel: {tp: 1, pp: 1, dp: 64}\n"
        "training: {micro_batch: 2, global_batch: 256, zero: 3, offload_layers: 40}\n",
        "o.yaml");
    CHECK(lines_with(launch_settings(p, LaunchTarget::Megatron), "--cpu-offloading-num-layers 40").size() == 1);
    CHECK(lines_with(launch_settings(p, LaunchTarget::Torchtitan), "# not expressible: training.offload_layers 40").size() == 1);
  }

  TEST_CASE("recompute_layers exports as Megatron-LM's block method and torchtitan's every k-th block") {
    // Megatron-LM megatron/core/recompute.py: --recompute-method block --recompute-num-layers N
    // recomputes the first N layers of each chunk; torchtitan's integer selective_ac_option k
    // checkpoints every k-th block (pytorch/torchtitan@8a6c9fe6e activation_checkpoint.py):
    // 20 of 80 layers at PP 1 is every 4th, 5 of 32 has no k.
    const Plan p = parse_plan("hardware: h100-sxm-ib\nmodel: llama3-70b\nnodes: 16\nparallel: {tp: 8, pp: 1, dp: 16}\n"
                              "training: {micro_batch: 1, global_batch: 64, zero: 1, recompute: full, recompute_layers: 20}\n",
                              "rl.yaml");
    const std::string mg = launch_settings(p, LaunchTarget::Megatron);
    CHECK(lines_with(mg, "--recompute-method block").size() == 1);
    CHECK(lines_with(mg, "--recompute-num-layers 20").size() == 1);
    const std::string tt = launch_settings(p, LaunchTarget::Torchtitan);
    CHECK(lines_with(tt, "selective_ac_option = \"4\"").size() == 1);
    // PP 2: chunks of 40, 20 of each is every 2nd block.
    Plan piped = p;
    piped.strategy.parallel.pp = 2;
    piped.strategy.parallel.dp = 8;
    CHECK(lines_with(launch_settings(piped, LaunchTarget::Torchtitan), "selective_ac_option = \"2\"").size() == 1);
    Plan odd = p;
    odd.strategy.training.recompute_layers = 30;
    const std::string t30 = launch_settings(odd, LaunchTarget::Torchtitan);
    CHECK(lines_with(t30, "mode = \"full\"").size() == 1);
    CHECK(lines_with(t30, "# not expressible: recompute_layers 30").size() == 1);
  }

  TEST_CASE("Megatron-LM arguments of br166-ep16-mb2, each from the strategy file") {
    const std::string m = launch_settings(load_plan("br166-ep16-mb2"), LaunchTarget::Megatron);
    // parallel: {tp: 1, pp: 16, dp: 8, ep: 16, etp: 1, vpp: 1, cp: 1}; micro_batch 2, global 960;
    // recompute full; zero 1, adam8bit, optimizer_offload, activation_offload; dispatch
    // allgather; 1f1b with overlap ep and dp.
    for (const char* flag :
         {"--tensor-model-parallel-size 1", "--pipeline-model-parallel-size 16",
          "--expert-model-parallel-size 16", "--expert-tensor-parallel-size 1",
          "--context-parallel-size 1", "--micro-batch-size 2", "--global-batch-size 960",
          "--seq-length 4096", "--recompute-granularity full", "--recompute-method uniform",
          "--recompute-num-layers 1", "--use-distributed-optimizer", "--optimizer-cpu-offload",
          "--optimizer-offload-fraction 1.0", "--moe-token-dispatcher-type allgather", "--bf16",
          "--overlap-grad-reduce", "--overlap-moe-expert-parallel-comm"}) {
      CAPTURE(flag);
      CHECK(lines_with(m, flag).size() == 1);
    }
    CHECK(lines_with(m, "--fp8-format").empty());
    CHECK(lines_with(m, "--moe-router-num-groups").empty());  // routing uniform
    const auto lost = lines_with(m, "# not expressible:");
    REQUIRE(lost.size() == 4);
    CHECK(has(lost[0], "layers per pipeline chunk"));
    CHECK(has(lost[1], "ep_over_dies (EP 16 over the 2 dies of each BR166"));
    CHECK(has(lost[2], "optimizer adam8bit"));
    CHECK(has(lost[3], "training.activation_offload"));
  }

  TEST_CASE("torchtitan settings of both strategies") {
    const std::string d = launch_settings(load_plan("deepseek-v3-h800"), LaunchTarget::Torchtitan);
    // dp 128 sharded (ZeRO-1 -> FSDP2 without resharding after forward), global 15360 over
    // dp 128 = 120 sequences per DP rank in micro-batches of 1.
    for (const char* line :
         {"[parallelism]", "data_parallel_shard_degree = 128",
          "fsdp_reshard_after_forward = \"never\"", "tensor_parallel_degree = 1",
          "pipeline_parallel_degree = 16", "pipeline_parallel_schedule = \"DualPipeV\"",
          "pipeline_parallel_microbatch_size = 1", "context_parallel_degree = 1",
          "expert_parallel_degree = 64", "expert_parallel_comm_backend = \"deepep\"", "[training]",
          "local_batch_size = 120", "global_batch_size = 15360", "seq_len = 4096",
          "[activation_checkpoint]", "mode = \"selective\""}) {
      CAPTURE(line);
      CHECK(lines_with(d, line).size() == 1);
    }
    // DualPipeV runs two chunks per rank: 61 layers over 32 chunks, as paraplan spreads them.
    CHECK(has(d, "  [\"tok_embeddings\", \"layers.0\"],\n  [\"layers.1\"],\n"));
    CHECK(has(d, "  [\"layers.60\", \"norm\", \"output\"],\n]"));
    CHECK(has(d, "# not expressible: schedule dualpipe"));

    const std::string b = launch_settings(load_plan("br166-ep16-mb2"), LaunchTarget::Torchtitan);
    // dp 8: 960 / 8 = 120 per DP rank in micro-batches of 2; recompute full.
    for (const char* line :
         {"data_parallel_shard_degree = 8", "pipeline_parallel_degree = 16",
          "pipeline_parallel_schedule = \"1F1B\"", "pipeline_parallel_microbatch_size = 2",
          "expert_parallel_degree = 16", "expert_parallel_comm_backend = \"standard\"",
          "local_batch_size = 120", "global_batch_size = 960", "enable_cpu_offload = true",
          "mode = \"full\""}) {
      CAPTURE(line);
      CHECK(lines_with(b, line).size() == 1);
    }
    // EP 16 counts dies; torchtitan's EP ranks come from the 8 sharded DP ranks of a stage.
    CHECK(has(b,
              "# not expressible: EP 16 (torchtitan forms EP from data_parallel_shard x "
              "context_parallel x "
              "tensor_parallel = 8 ranks)"));
    CHECK(has(b, "# not expressible: moe.dispatch allgather"));
    CHECK(has(b, "# not expressible: ep_over_dies"));
    CHECK(has(b, "# not expressible: optimizer adam8bit"));

    // Two runs of the schedule per step: torchtitan's gradient accumulation over local
    // batches, 15360 / (128 x 2) = 60 sequences each; Megatron-LM cannot say it.
    const Plan two = load_plan("deepseek-v3-h800", {"training.pipeline_runs=2"});
    CHECK(lines_with(launch_settings(two, LaunchTarget::Torchtitan), "local_batch_size = 60").size() == 1);
    CHECK(has(launch_settings(two, LaunchTarget::Megatron), "# not expressible: training.pipeline_runs 2"));
  }

  TEST_CASE("uneven stages and virtual stages the frameworks can express") {
    // Megatron-LM's own first / last stage options pass through; torchtitan gets the chunks.
    const Plan uneven = load_plan("deepseek-v3-h800",
                                  {"parallel.decoder_first_pipeline_num_layers=3",
                                   "parallel.decoder_last_pipeline_num_layers=2", "schedule=1f1b"});
    const std::string m = launch_settings(uneven, LaunchTarget::Megatron);
    CHECK(lines_with(m, "--decoder-first-pipeline-num-layers 3").size() == 1);
    CHECK(lines_with(m, "--decoder-last-pipeline-num-layers 2").size() == 1);
    CHECK(lines_with(m, "# not expressible: layers").empty());
    const std::string t = launch_settings(uneven, LaunchTarget::Torchtitan);
    CHECK(has(t, "  [\"tok_embeddings\", \"layers.0\", \"layers.1\", \"layers.2\"],\n"));
    CHECK(has(t, "  [\"layers.59\", \"layers.60\", \"norm\", \"output\"],\n]"));

    // Mixtral 8x7B on 4 H100 nodes: TP2 with SP, PP4 x VPP2 interleaved, EP8: 32 layers / 8
    // chunks = 4 layers per virtual stage; global 256 over DP 4 = 64 per DP rank.
    const std::string yaml = R"(
hardware: h100-sxm-ib
model: mixtral-8x7b
nodes: 4
parallel: {tp: 2, pp: 4, dp: 4, ep: 8, vpp: 2, sp: true}
training: {micro_batch: 1, global_batch: 256, recompute: selective, zero: 1}
moe: {dispatch: alltoall}
schedule: interleaved
)";
    const Plan mix = parse_plan(yaml, "mixtral.yaml");
    const std::string mm = launch_settings(mix, LaunchTarget::Megatron);
    for (const char* flag :
         {"--num-layers-per-virtual-pipeline-stage 4", "--sequence-parallel",
          "--group-query-attention", "--num-query-groups 8", "--kv-channels 128",
          "--moe-token-dispatcher-type alltoall", "--recompute-granularity selective"}) {
      CAPTURE(flag);
      CHECK(lines_with(mm, flag).size() == 1);
    }
    CHECK(lines_with(mm, "--moe-layer-freq").empty());  // every layer MoE: the default
    CHECK(lines_with(mm, "# not expressible").empty());
    CHECK(lines_with(mm, "--moe-router-num-groups").empty());  // no groups: no group limit
    // A model with its own expert groups (8 experts in 4 groups, 2 per token) passes them on
    // as Megatron-Core's group-limited routing, whatever moe.routing says.
    Plan grouped = mix;
    grouped.model.moe->expert_groups = 4;
    grouped.model.moe->max_nodes_per_token = 2;
    const std::string mg = launch_settings(grouped, LaunchTarget::Megatron);
    CHECK(lines_with(mg, "--moe-router-num-groups 4").size() == 1);
    CHECK(lines_with(mg, "--moe-router-group-topk 2").size() == 1);
    const std::string mt = launch_settings(mix, LaunchTarget::Torchtitan);
    for (const char* line :
         {"pipeline_parallel_schedule = \"Interleaved1F1B\"",
          "pipeline_parallel_layers_per_stage = 4", "pipeline_parallel_first_stage_less_layers = 0",
          "local_batch_size = 64", "tensor_parallel_degree = 2", "selective_ac_option = \"op\""}) {
      CAPTURE(line);
      CHECK(lines_with(mt, line).size() == 1);
    }
  }

  TEST_CASE("paraplan export and rank --export") {
    const Run e = cli("export deepseek-v3-h800 --to megatron");
    CHECK(e.rc == 0);
    CHECK(e.out == launch_settings(load_plan("deepseek-v3-h800"), LaunchTarget::Megatron));
    CHECK(cli("export deepseek-v3-h800 --to deepspeed").rc == 2);
    CHECK(cli("export no-such-strategy --to megatron").rc == 2);
    const Run r = cli("rank --nodes 16 --top 1 --threads 1 --export torchtitan");
    CHECK(r.rc == 0);
    CHECK(
        has(r.out, "# torchtitan job settings for the best plan (#1): deepseek-v3 on br166-ubbv2"));
    CHECK(has(r.out, "[parallelism]"));
    CHECK(cli("rank --nodes 16 --format json --export megatron").rc == 2);
  }
}
