#!/usr/bin/env python3
"""Write the chat templates templates.tsv names, from xinference's catalog.

Reads xorbitsai/inference's xinference/model/llm/llm_family.json (extract
it from that repository at the commit templates.tsv names), takes the
"chat_template" of each family the manifest names, checks its sha256
against the manifest, and writes <name>.jinja into --out-dir (outside this
repository: the templates are the model publishers' text, not ours).

Usage: extract_templates.py --llm-family /tmp/llm_family.json --out-dir /tmp/templates
"""
import argparse
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def manifest():
    rows = []
    with open(os.path.join(HERE, "templates.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, family, sha, models = line.rstrip("\n").split("\t")
            rows.append({"name": name, "family": family, "sha256": sha,
                         "models": [] if models == "-" else models.split(",")})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llm-family", required=True)
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args()
    try:
        with open(args.llm_family, encoding="utf-8") as f:
            families = {fam.get("model_name"): fam for fam in json.load(f)}
    except (OSError, ValueError) as e:
        raise SystemExit(f"--llm-family {args.llm_family}: {e}; give xinference's llm_family.json at the commit templates.tsv names")
    os.makedirs(args.out_dir, exist_ok=True)
    for row in manifest():
        fam = families.get(row["family"])
        if fam is None or not fam.get("chat_template"):
            raise SystemExit(f"{args.llm_family}: no family {row['family']!r} with a chat_template; is it the commit templates.tsv names?")
        text = fam["chat_template"]
        sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if sha != row["sha256"]:
            raise SystemExit(f"{row['family']}: sha256 {sha} is not the manifest's {row['sha256']}")
        with open(os.path.join(args.out_dir, row["name"] + ".jinja"), "w", encoding="utf-8") as f:
            f.write(text)
        print(f"{row['name']}: {len(text)} chars", file=sys.stderr)


if __name__ == "__main__":
    main()
