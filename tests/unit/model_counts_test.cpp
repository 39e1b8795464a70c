// Parameter and FLOP counts, each expected value derived by hand from the model's
// published configuration (dims in models/*.yaml, formulas in the comments).

#include <doctest/doctest.h>

#include <cstdint>

#include "paraplan/config.hpp"
#include "paraplan/model.hpp"

using namespace paraplan;

TEST_SUITE("model.counts") {
  TEST_CASE("DeepSeek-V3: 671.03B main model, 37.55B active, MTP 11.61B") {
    const ModelCounts c = count_model(load_model("deepseek-v3"));
    // MLA per layer (h 7168, 128 heads, q_lora 1536, kv_lora 512, nope 128, rope 64, v 128):
    //   q_a 7168*1536 = 11,010,048; q_a_norm 1536; q_b 1536*128*192 = 37,748,736;
    //   kv_a 7168*576 = 4,128,768; kv_a_norm 512; kv_b 512*128*256 = 16,777,216;
    //   o 128*128*7168 = 117,440,512                                   -> 187,107,328
    // dense layer: 2 norms 14,336 + MLA + 3*7168*18432 = 396,361,728    -> 583,483,392
    // expert: 3*7168*2048 = 44,040,192
    // MoE layer: 2 norms + MLA + router 256*7168 = 1,835,008 + (256 + 1) experts
    //   = 14,336 + 187,107,328 + 1,835,008 + 257*44,040,192             -> 11,507,286,016
    // model: 3 dense + 58 MoE + embedding and head 2*129280*7168 + final norm 7168
    //   = 1,750,450,176 + 667,422,588,928 + 1,853,358,080 + 7,168       -> 671,026,404,352
    CHECK(c.expert_params == 44'040'192);
    CHECK(c.dense_layer_params == 583'483'392);
    CHECK(c.moe_layer_params == 11'507'286'016);
    CHECK(c.total_params == 671'026'404'352);
    // active MoE layer: 2 norms + MLA + router + (8 + 1) experts = 585,320,448;
    // active = 1,750,450,176 + 58 * 585,320,448 + 1,853,358,080 + 7,168 = 37,552,282,624
    CHECK(c.active_params == 37'552'282'624);
    // MTP: 3 norms 21,504 + eh_proj 2*7168*7168 = 102,760,448 + one MoE block
    //   = 11,610,067,968. DeepSeek quotes "671B + 14B": its checkpoint stores the shared
    //   embedding and head again with the MTP module: 11.61 + 2 * 0.927 = 13.46B.
    CHECK(c.mtp_params == 11'610'067'968);
  }

  TEST_CASE("DeepSeek-V3 trains at about 250 GFLOP per token at seq 4096 (DeepSeek's figure)") {
    const ModelCounts c = count_model(load_model("deepseek-v3"));
    // Matmul parameters used per token (no embedding lookup, norms or biases): MLA without
    // its two norms 187,105,280; dense layer + 396,361,728; MoE layer + router 1,835,008 +
    // 9 experts x 44,040,192; head 129280*7168 = 926,679,040:
    //   3 x 583,467,008 + 58 x 585,302,016 + 926,679,040 = 36,624,596,992 -> 6x = 219.75 GFLOP.
    // Causal attention: 3 x 61 x 128 x 4096 x (192 + 128) = 30.702 GFLOP.
    CHECK(c.attention_flops_per_token == doctest::Approx(3.0 * 61 * 128 * 4096 * 320.0));
    CHECK(c.flops_per_token == doctest::Approx(6.0 * 36'624'596'992 + 3.0 * 61 * 128 * 4096 * 320.0));
    // Insights into DeepSeek-V3 (ISCA'25, Table 2): 250 GFLOPS per token. The count above is
    // 250.46 GFLOP: within 0.2%, the rest is the paper's rounding.
    CHECK(c.flops_per_token == doctest::Approx(250e9).epsilon(0.005));
  }

  TEST_CASE("Llama 3 70B: 70.55B parameters") {
    const ModelCounts c = count_model(load_model("llama3-70b"));
    // per layer: q 8192*8192 + k, v 2*8192*1024 + o 8192*8192 = 150,994,944;
    //   MLP 3*8192*28672 = 704,643,072; 2 norms 16,384       -> 855,654,400
    // 80 layers 68,452,352,000 + embedding and head 2*128256*8192 = 2,101,346,304 + norm 8192
    CHECK(c.dense_layer_params == 855'654'400);
    CHECK(c.total_params == 70'553'706'496);
    CHECK(c.active_params == c.total_params);
  }

  TEST_CASE("Llama 3.1 405B: 405.85B parameters") {
    const ModelCounts c = count_model(load_model("llama3-405b"));
    // per layer: attention 2*16384^2 + 2*16384*1024 = 570,425,344; MLP 3*16384*53248 =
    //   2,617,245,696; norms 32,768 -> 3,187,703,808 x 126 = 401,650,679,808
    // + 2*128256*16384 = 4,202,692,608 + 16,384
    CHECK(c.total_params == 405'853'388'800);
  }

  TEST_CASE("GPT-3 175B: 174.6B parameters (12 L h^2 + 13 L h + V h + s h + 2 h)") {
    const ModelCounts c = count_model(load_model("gpt3-175b"));
    // h = 12288, L = 96: per layer 12h^2 + 13h = 1,811,939,328 + 159,744 = 1,812,099,072
    //   (biases and LayerNorms) x 96 = 173,961,510,912; tied embedding 50257*12288 = 617,558,016; learned positions
    //   2048*12288 = 25,165,824; final LayerNorm 24,576
    CHECK(c.dense_layer_params == 1'812'099'072);
    CHECK(c.head_params == 0);
    CHECK(c.total_params == 174'604'259'328);  // 174.6B
  }

  TEST_CASE("Mixtral 8x7B: 46.70B total, 12.88B active (Mistral: 46.7B / 12.9B)") {
    const ModelCounts c = count_model(load_model("mixtral-8x7b"));
    // attention 2*4096^2 + 2*4096*1024 = 41,943,040; expert 3*4096*14336 = 176,160,768;
    // router 8*4096 = 32,768; norms 8192. Layer: 41,943,040 + 8*176,160,768 + 32,768 + 8192
    //   = 1,451,270,144 x 32 = 46,440,644,608; + 2*32000*4096 + 4096 = 262,148,096
    CHECK(c.total_params == 46'702'792'704);
    // active: 2 of 8 experts: (41,943,040 + 2*176,160,768 + 40,960) x 32 + 262,148,096
    CHECK(c.active_params == 12'879'925'248);
  }

  TEST_CASE("Qwen3-235B-A22B: 235.09B total, 22.19B active (Qwen: 235B / 22B)") {
    const ModelCounts c = count_model(load_model("qwen3-235b-a22b"));
    // attention q 4096*8192 + k, v 2*4096*512 + o 8192*4096 = 71,303,168, qk-norm 2*128;
    // expert 3*4096*1536 = 18,874,368 x 128 = 2,415,919,104; router 128*4096 = 524,288;
    // norms 8192. Layer 2,487,755,008 x 94 = 233,848,970,752; + embedding and head
    // 2*151936*4096 + final norm 4096 = 1,244,663,808. (The checkpoint: 235,093,634,560.)
    CHECK(c.total_params == 235'093'634'560);
    // active: 8 of 128 experts: (71,303,424 + 8*18,874,368 + 524,288 + 8192) x 94 + 1,244,663,808
    CHECK(c.active_params == 22'190'763'520);
  }

  TEST_CASE("training FLOP per token of a dense model: 6N + causal attention") {
    const ModelCounts c = count_model(load_model("llama3-70b"), 8192);
    // matmul params: 80 x (150,994,944 + 704,643,072) + head 1,050,673,152 = 69,501,714,432
    // attention: 3 x 80 x 64 x 8192 x (128 + 128) = 32.212 GFLOP
    CHECK(c.flops_per_token == doctest::Approx(6.0 * 69'501'714'432 + 3.0 * 80 * 64 * 8192 * 256.0));
  }

  TEST_CASE("sliding-window attention counts the pairs its window keeps") {
    // Llama 3 70B's shape with a 2048-token window at s = 8192: a windowed layer meets
    // w s - w^2 / 2 of s^2 / 2 pairs, 2 x 0.25 - 0.25^2 = 0.4375 of them.
    ModelSpec m = load_model("llama3-70b");
    const double full = 3.0 * 80 * 64 * 8192 * 256.0;
    m.attention.window = 2048;
    m.attention.window_layers = 80;
    CHECK(count_model(m, 8192).attention_flops_per_token == doctest::Approx(full * 0.4375));
    // half the layers windowed (Gemma 2, GPT-OSS): (1 + 0.4375) / 2 of the whole-context count
    m.attention.window_layers = 40;
    CHECK(count_model(m, 8192).attention_flops_per_token == doctest::Approx(full * 0.71875));
    // a window as long as the sequence changes nothing
    CHECK(count_model(m, 2048).attention_flops_per_token == doctest::Approx(3.0 * 80 * 64 * 2048 * 256.0));
  }
}
