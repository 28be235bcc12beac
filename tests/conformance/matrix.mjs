// The settings matrix: which contexts are created for each model, and which of them are measured a second
// time with real allocation (byte-exact KV + recurrent state, see compare.mjs).
//
// A case: {n_ctx, n_seq, flash_attn, type_k, type_v, n_ubatch, swa_full}. n_batch = n_ubatch (the addon's
// batchSize sets both; only n_ubatch enters the reserve graph).

const C = (n_ctx, n_seq, fa, tk, tv, ub, extra = {}) =>
    ({ n_ctx, n_seq, flash_attn: fa, type_k: tk, type_v: tv, n_ubatch: ub, swa_full: false, ...extra });

/// Cases for the small-vocabulary file of every architecture.
/// 5000 and 10000 are not multiples of 256; 10000 / 3 sequences rounds each stream up (3 x 3584 = 10752).
export function smallVocabCases({ swa }) {
    const cases = [
        C(4096,  1, true,  "f16",  "f16",  512),
        C(4096,  1, false, "f16",  "f16",  512),
        C(5000,  1, true,  "q8_0", "q8_0", 512),
        C(10000, 3, true,  "q4_0", "q4_0", 512),
        C(8192,  4, false, "f16",  "f16",  256),
        C(8192,  1, true,  "q8_0", "q4_0", 1024),   // mixed K/V types, a larger ubatch
        C(8192,  1, false, "q8_0", "f16",  512),    // quantized K without flash attention: accepted
        C(6000,  3, true,  "f16",  "q8_0", 256),
        C(32768, 1, true,  "f16",  "f16",  512),
        C(32768, 4, false, "f16",  "f16",  512),
        C(4096,  1, false, "f16",  "q8_0", 512, { refused: true }), // quantized V without flash attention: refused
    ];
    if (swa) {
        cases.push(C(8192, 1, true, "f16", "f16", 512, { swa_full: true }));
        cases.push(C(10000, 3, true, "q8_0", "q8_0", 256, { swa_full: true }));
        cases.push(C(10000, 3, true, "q8_0", "q8_0", 256));
    }
    return cases;
}

/// Cases for the real-vocabulary file: the output buffer and the logits part of the compute buffer
/// depend on n_vocab.
export function realVocabCases() {
    return [
        C(4096, 1, true,  "f16",  "f16",  512),
        C(8192, 4, false, "f16",  "f16",  512),
        C(5000, 3, true,  "q8_0", "q8_0", 256),
    ];
}

/// Whether a measured case is repeated with real allocation: small contexts only (the KV buffer is
/// cleared at creation, so it is really touched; the compute buffer is allocated but not touched).
export function measureAllocated(c, predicted) {
    if (c.refused || !predicted) return false;
    const b = predicted.totals; // kvfit --json schema 2: buffers summed over devices
    // and models of at most 40 GiB of tensor data: llama.cpp reads the mapped sparse file while loading for real, so a
    // frontier-sized file (DeepSeek-V3.2 122 GiB, Kimi-K3 ~2 TiB) costs minutes per row; their mmap rules (the mapped
    // range with skipped MTP tensors inside, model_weights::mmap_hole_bytes) are kept by Step-3.7-Flash-MTP's rows and
    // replayed in tests/ (tests/conformance/measured holds the larger models' alloc rows)
    return c.n_ctx <= 10000 && b.kv_bytes + b.state_bytes <= 1.5 * 2 ** 30 && b.compute_bytes <= 3 * 2 ** 30 &&
        b.weights_bytes <= 40 * 2 ** 30;
}
