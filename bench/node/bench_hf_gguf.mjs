// Times @huggingface/gguf parsing the same file as bench_gguf (local file, all metadata).
// Usage: node bench_hf_gguf.mjs FILE [runs]; prints the median milliseconds as "hf_gguf_ms <value>".
import { gguf } from "@huggingface/gguf";

const file = process.argv[2];
const runs = Number(process.argv[3] ?? 5);
await gguf(file, { allowLocalFile: true }); // warm-up
const times = [];
for (let i = 0; i < runs; i++) {
  const t0 = performance.now();
  const { metadata, tensorInfos } = await gguf(file, { allowLocalFile: true });
  times.push(performance.now() - t0);
  if (!metadata || tensorInfos.length === 0) throw new Error("nothing parsed");
}
times.sort((a, b) => a - b);
console.log(`hf_gguf_ms ${times[Math.floor(times.length / 2)].toFixed(3)}`);
