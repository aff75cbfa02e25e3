#!/usr/bin/env python3
"""How long vLLM 0.11.0's chat path spends resolving a template's kwargs.

vLLM 0.11.0 (PR #25794, the fix for advisory GHSA-6fvq-23cw-5628) filters
the keyword arguments of every chat request against the variables its chat
template reads: `resolve_chat_template_kwargs` builds a sandboxed Jinja
environment, parses the template and walks the tree for its undeclared
variables on every call, and `apply_hf_chat_template` calls it once per
chat request on the OpenAI server's event loop. PR #26227 cached the parse
by template after the 0.11.0 tag.

This script runs that function from a vLLM tree: it reads
vllm/entrypoints/chat_utils.py and vllm/utils/__init__.py of the given
commit, takes the definitions it needs (`AssistantTracker`,
`resolve_chat_template_kwargs`, `supports_kw`) out of them with `ast`, and
calls the function with the keyword arguments the OpenAI server passes for
a chat request of vLLM's benchmark client (add_generation_prompt,
continue_final_message, documents), on each template given. Nothing of
vLLM is imported as a package and none of its code is written anywhere.

Per template it reports the call's time in microseconds (the minimum and
the median over --passes passes of --repeats calls each, after --warmup;
the passes take the templates in turn, so a change in the machine's load
reaches them all; each call is timed alone with time.perf_counter, the
garbage collector left on as in the server), and the template's size in
characters and in Jinja lexer tokens.

Usage: templatecost.py --chat-utils /tmp/chat_utils.py --utils /tmp/utils.py \
           --commit <commit> --template qwen3=/path/qwen3.jinja [...] \
           [--passes 3] [--repeats 200] [--warmup 20] [--out FILE]
Writes one JSON object.
"""
import argparse
import ast
import hashlib
import inspect
import json
import platform
import statistics
import sys
import time
import typing

import jinja2
import jinja2.ext
import jinja2.meta
import jinja2.nodes
import jinja2.parser
import jinja2.sandbox


def read_text(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise SystemExit(f"{path}: {e.strerror}; give the path of {what}")


def definitions(path, names):
    """The source of the top-level definitions called names in path."""
    source = read_text(path, "a vLLM source file")
    tree = ast.parse(source)
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names:
            found[node.name] = ast.get_source_segment(source, node)
    missing = [n for n in names if n not in found]
    if missing:
        raise SystemExit(f"{path}: no top-level {', '.join(missing)}; is it the right release's file?")
    return [found[n] for n in names]


class HFTokenizerSignature:
    """Stands in for a Hugging Face tokenizer: supports_kw inspects only
    the signature of apply_chat_template, which this one copies
    (transformers' PreTrainedTokenizerBase.apply_chat_template, 4.56)."""

    def apply_chat_template(self, conversation, tools=None, documents=None,
                            chat_template=None, add_generation_prompt=False,
                            continue_final_message=False, tokenize=True,
                            padding=False, truncation=False, max_length=None,
                            return_tensors=None, return_dict=False,
                            return_assistant_tokens_mask=False,
                            tokenizer_kwargs=None, **kwargs):
        raise NotImplementedError


def load_resolver(chat_utils, utils):
    namespace = {
        "jinja2": jinja2, "inspect": inspect, "Any": typing.Any,
        "Union": typing.Union, "Optional": typing.Optional,
        "Callable": typing.Callable, "Set": typing.AbstractSet,
        "PreTrainedTokenizer": HFTokenizerSignature,
        "PreTrainedTokenizerFast": HFTokenizerSignature,
    }
    (supports_kw,) = definitions(utils, ["supports_kw"])
    exec(compile(supports_kw, utils, "exec"), namespace)
    tracker, resolver = definitions(chat_utils, ["AssistantTracker", "resolve_chat_template_kwargs"])
    exec(compile(tracker + "\n\n" + resolver, chat_utils, "exec"), namespace)
    return namespace["resolve_chat_template_kwargs"]


def lexer_tokens(template):
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return sum(1 for _ in env.lex(template))


def time_template(resolve, template, repeats, warmup):
    """repeats timed calls (µs) after warmup untimed ones."""
    tokenizer = HFTokenizerSignature()
    # What serving_engine._preprocess_chat hands apply_hf_chat_template
    # besides chat_template and tools, for a request with no
    # chat_template_kwargs of its own.
    kwargs = {"add_generation_prompt": True, "continue_final_message": False, "documents": None}
    for _ in range(warmup):
        resolve(tokenizer=tokenizer, chat_template=template, chat_template_kwargs=kwargs)
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        resolve(tokenizer=tokenizer, chat_template=template, chat_template_kwargs=kwargs)
        samples.append((time.perf_counter() - t0) * 1e6)
    return samples


def cpu_name():
    """The model name /proc/cpuinfo gives, with its family and model."""
    fields = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, sep, value = line.partition(":")
                if not sep:
                    break  # the first processor's block ends at a blank line
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        return platform.processor() or "unknown"
    name = fields.get("model name", "unknown")
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']}, model {fields['model']})"
    return name


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chat-utils", required=True, help="vllm/entrypoints/chat_utils.py of the release")
    ap.add_argument("--utils", required=True, help="vllm/utils/__init__.py of the same commit (supports_kw)")
    ap.add_argument("--commit", required=True, help="the vLLM commit both files come from")
    ap.add_argument("--template", action="append", required=True, metavar="NAME=PATH",
                    help="a chat template to time; repeat for more")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--out", help="write the JSON here instead of stdout")
    args = ap.parse_args()

    if args.passes < 1 or args.repeats < 1 or args.warmup < 0:
        raise SystemExit("--passes and --repeats must be at least 1, --warmup at least 0")
    resolve = load_resolver(args.chat_utils, args.utils)
    templates = []
    for spec in args.template:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--template {spec!r}: give NAME=PATH")
        templates.append((name, read_text(path, "a chat template (extract_templates.py writes them)")))
    samples = {name: [] for name, _ in templates}
    for _ in range(args.passes):
        for name, template in templates:
            samples[name] += time_template(resolve, template, args.repeats, args.warmup)
    results = []
    for name, template in templates:
        fastest, median = min(samples[name]), statistics.median(samples[name])
        results.append({
            "name": name, "chars": len(template), "lexer_tokens": lexer_tokens(template),
            "sha256": hashlib.sha256(template.encode("utf-8")).hexdigest(),
            "min_us": round(fastest, 1), "median_us": round(median, 1),
        })
        print(f"{name}: {len(template)} chars, min {fastest:.0f} µs, median {median:.0f} µs", file=sys.stderr)
    out = {
        "vllm_commit": args.commit, "cpu": cpu_name(), "python": platform.python_version(),
        "jinja2": jinja2.__version__, "passes": args.passes, "repeats": args.repeats,
        "warmup": args.warmup,
        "templates": results,
    }
    text = json.dumps(out, indent=1) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
