#!/usr/bin/env python3
"""Checks every #include in a source tree against kiln's layer table (src/layers.txt).

    check_layering.py TABLE SRC_DIR                    the tree must follow the table
    check_layering.py TABLE SRC_DIR --docs MD          ... and MD's "## Layers" table matches
    check_layering.py TABLE SRC_DIR --expect FILE      the violations must be exactly FILE's lines
    check_layering.py TABLE --symbols LAYER=FILE...    the same for the built libraries' symbols

A file in SRC_DIR/<layer>/ may include, from SRC_DIR, only headers of its own layer and of the
layers it uses (transitively, as the table lists them), plus the public headers (kiln/...).
Includes are matched as the compiler would find them: next to the including file first, then
from SRC_DIR; a path that escapes its layer through "../" counts where it lands. Standard and
third-party headers (anything that is not under SRC_DIR) are not the table's business.

Prints one line per violation, FILE:LINE: ..., and exits 1 when there is any. With --expect
(the test that proves the check catches what it should: tests/layering/fixture/), exits 0 when
the violations found are exactly the lines of FILE, else prints the difference and exits 1.
"""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def read_table(path):
    """{layer: set of layers it uses directly}, in the order of the file."""
    uses, section = {}, None
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.fullmatch(r"\[([a-z]+)\]", line)
            if m:
                section = m.group(1)
                continue
            name, *used = line.split()
            if section not in ("layers", "support"):
                sys.exit(f"{path}:{n}: '{name}' is outside a [layers] or [support] section")
            for u in used:
                if u not in uses:
                    sys.exit(f"{path}:{n}: {name} uses '{u}', which is not a layer listed above it")
            uses[name] = set(used)
    return uses


def closure(uses):
    """{layer: every layer it may include, itself too}."""
    allowed = {}
    for name, direct in uses.items():  # lower layers come first
        allowed[name] = {name}.union(*(allowed[u] for u in direct))
    return allowed


def layer_of(path, src):
    rel = os.path.relpath(path, src)
    return None if rel.startswith("..") else rel.split(os.sep)[0]


def resolve(quote, header, here, src, layers):
    """Where an include lands, as the compiler looks (next to the file, then in src), or
    None when it is not a file of src. A path missing from the tree is judged by where it
    points ("../x/..." from here, or "<layer>/...")."""
    candidates = ([os.path.join(here, header)] if quote == '"' else []) + [os.path.join(src, header)]
    for c in candidates:
        if os.path.isfile(c):
            return os.path.normpath(c)
    if header.startswith("."):
        return os.path.normpath(os.path.join(here, header))
    if header.split("/")[0] in layers:
        return os.path.join(src, header)
    return None


def check(table, src):
    uses = read_table(table)
    allowed = closure(uses)
    problems = []
    for root, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith((".h", ".hpp", ".cpp", ".cc", ".inc")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)
            layer = layer_of(path, src)
            if layer not in allowed:
                if os.sep in rel:
                    problems.append(f"{rel}: directory '{layer}' is not in the layer table")
                continue
            with open(path, errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    quote, header = m.groups()
                    target = resolve(quote, header, root, src, allowed)
                    if target is None:
                        continue  # the public headers, the standard library, oneDNN, ONNX...
                    to = layer_of(target, src)
                    if to not in allowed[layer]:
                        problems.append(f"{rel}:{n}: {layer} may not include {header} ({to or 'outside src'})")
    return problems


def check_docs(table, docs):
    """The "## Layers" section of docs must have one table row per layer, | name | uses |
    kiln_name ... |, with the same uses ("-" for none), and no row for a layer not in the table."""
    uses = read_table(table)
    rows, section = {}, False
    with open(docs) as f:
        for line in f:
            if line.startswith("## "):
                section = line.strip() == "## Layers"
            cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
            if section and line.startswith("|") and len(cells) >= 3 and re.fullmatch(r"[a-z_]+", cells[0]) and cells[1] != "uses":
                rows[cells[0]] = cells
    problems = []
    for name, used in uses.items():
        row = rows.pop(name, None)
        if row is None:
            problems.append(f"{docs}: the Layers table has no row for {name}")
        elif set(row[1].replace(",", " ").split()) - {"-"} != used:
            problems.append(f"{docs}: {name} uses '{row[1]}' there, '{' '.join(sorted(used)) or '-'}' in {table}")
        elif f"kiln_{name}" not in row[2]:
            problems.append(f"{docs}: the row for {name} does not name its target kiln_{name}")
    problems += [f"{docs}: the Layers table lists {name}, which {table} does not" for name in rows]
    return problems


def check_symbols(table, pieces, nm="nm"):
    """pieces: LAYER=FILE (an archive or an object of that layer). No piece may need a symbol
    that only layers it may not use define: the table holds for the link, not only for the
    #includes (a forward declaration can reach where an include may not)."""
    allowed = closure(read_table(table))
    defined, needed = {}, {}
    for piece in pieces:
        layer, path = piece.split("=", 1)
        if layer not in allowed:
            sys.exit(f"{piece}: '{layer}' is not in the layer table")
        out = subprocess.run([nm, "-g", "-P", path], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            fields = line.split()
            if len(fields) < 2 or line.endswith(":"):
                continue  # an archive member's name
            name, kind = fields[0], fields[1]
            if kind == "U":
                needed.setdefault(name, set()).add((layer, os.path.basename(path)))
            else:
                defined.setdefault(name, set()).add(layer)
    problems = []
    for name, users in sorted(needed.items()):
        owners = defined.get(name)
        if not owners:
            continue  # the standard library, oneDNN, ONNX...
        for layer, path in sorted(users):
            if not owners & allowed[layer]:
                problems.append(f"{path}: {layer} needs {name}, defined in {', '.join(sorted(owners))}")
    return problems


def main():
    args = sys.argv[1:]
    if len(args) >= 2 and args[1] == "--symbols":
        problems = check_symbols(args[0], args[2:])
        for p in problems:
            print(p)
        print(f"layering: {len(problems)} symbol(s) needed against the table {args[0]}")
        return 1 if problems else 0
    if len(args) not in (2, 4) or (len(args) == 4 and args[2] not in ("--expect", "--docs")):
        sys.exit(__doc__)
    problems = check(args[0], args[1])
    if len(args) == 4 and args[2] == "--docs":
        problems += check_docs(args[0], args[3])
        args = args[:2]
    for p in problems:
        print(p)
    print(f"layering: {len(problems)} problem(s) against the table {args[0]}")
    if len(args) == 2:
        return 1 if problems else 0
    with open(args[3]) as f:
        expected = {line.strip() for line in f if line.strip() and not line.startswith("#")}
    missed, extra = sorted(expected - set(problems)), sorted(set(problems) - expected)
    for p in missed:
        print(f"not reported: {p}")
    for p in extra:
        print(f"not expected: {p}")
    print("layering fixture: " + ("every violation reported, nothing else" if not missed and not extra else "MISMATCH"))
    return 1 if missed or extra else 0


if __name__ == "__main__":
    sys.exit(main())
