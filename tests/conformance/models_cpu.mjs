// A model whose weights the CPU backend moves into its extra buffer CPU_REPACK, so the suite measures the
// host-dependent part of the model buffer on every host (docs/rules/llamacpp-cpu-repack.md; kvfit's rule:
// include/kvfit/llamacpp_cpu.h). LFM2-1.2B of models.mjs, with a few weights given the types the x86 CPU_REPACK
// takes (ggml-cpu/repack.cpp ggml_repack_get_optimal_repack_type, x86 branches):
//   Q4_0, Q4_K, IQ4_NL with AVX2 (every variant from haswell on), Q2_K only with AVX512F (skylakex and up),
// placed so that every case of the rule appears once:
//   - interior weights (counted twice by a real load with mmap: the mapped file range of the plain CPU weights
//     still covers them, llama-model-loader.cpp get_mapping_range);
//   - the last tensor of the file (outside the mapped range: the range shrinks instead);
//   - the tied token embedding in Q4_0: its input copy (GET_ROWS) stays in the plain buffer, the output layer's
//     duplicate (TENSOR_DUPLICATED, op MUL_MAT) is a second tensor over the same file bytes.
// Every other weight keeps models.mjs's types (iq1_s / q5_0 / f16 / f32, never repacked). On an AMX host the
// Q4_0 / Q4_K weights go to AMX first (amx/amx.cpp), with the same bytes for Q4_0 and 4 more per Q4_K block.
import { MODELS } from "./models.mjs";

const REPACK_TYPES = {
    "token_embd.weight": "q4_0",               // [2048, n_vocab], tied: the output head reuses it
    "blk.0.ffn_up.weight": "q4_0",             // [2048, 8192]
    "blk.1.ffn_gate.weight": "q4_K",           // [2048, 8192]
    "blk.2.attn_q.weight": "iq4_nl",           // [2048, 2048]
    "blk.3.ffn_down.weight": "q2_K",           // [8192, 2048]: AVX-512 variants only
    "blk.4.shortconv.in_proj.weight": "q4_K",  // [2048, 6144]
    "blk.15.shortconv.out_proj.weight": "q4_0", // [2048, 2048], the last tensor of the file
};

function lfm2_q4(n_vocab) {
    const b = MODELS["lfm2-1.2b"].build(n_vocab);
    for (const t of b.tensors) if (REPACK_TYPES[t.name]) t.type = REPACK_TYPES[t.name];
    const last = b.tensors[b.tensors.length - 1].name;
    if (last !== "blk.15.shortconv.out_proj.weight") throw new Error(`models_cpu.mjs: LFM2's last tensor is ${last}`);
    return b;
}

export const MODELS_CPU = {
    "lfm2-1.2b-q4": { name: "LFM2-1.2B (Q4_0/Q4_K/IQ4_NL/Q2_K weights)", build: lfm2_q4, n_vocab: 65536 },
};
