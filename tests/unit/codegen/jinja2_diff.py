#!/usr/bin/env python3
"""Differential test: our template engine (through dg-codegen) against Python Jinja2.

Renders with both, and fails on any difference:
  - every golden case tests/unit/codegen/cases/NAME.j2 (context NAME.json, default {}); the output
    must also equal the checked-in NAME.out;
  - every error case tests/unit/codegen/errors/NAME.j2: both engines must reject it;
  - every kernel template templates/kernels/FAMILY.cu.j2, once per context listed for FAMILY in
    the --contexts file, which the compile tests write from the library's own kernel specs (a
    template without contexts fails).

--update rewrites NAME.out from Jinja2 and errors/NAME.err from dg-codegen; review the diff.
"""
import argparse
import difflib
import json
import os
import subprocess
import sys

try:
    import jinja2
except ImportError:
    print("jinja2 is not installed for this Python: skipped")
    sys.exit(77)  # CTest's SKIP_RETURN_CODE

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
CASES = os.path.join(HERE, "cases")
ERRORS = os.path.join(HERE, "errors")
TEMPLATES = os.path.join(ROOT, "templates")

ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def read(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def write(path, text):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def render_jinja2(source, context):
    """(output, None) or (None, error message)."""
    try:
        return ENV.from_string(source).render(**context), None
    except jinja2.TemplateError as e:
        return None, f"{type(e).__name__}: {e}"
    except Exception as e:  # Python-level errors in expressions: TypeError, ZeroDivisionError...
        return None, f"{type(e).__name__}: {e}"


def render_ours(codegen, root, rel_path, context):
    """(output, None) or (None, stderr)."""
    ctx_path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"dg_jinja2_diff_{os.getpid()}.json")
    write(ctx_path, json.dumps(context))
    try:
        p = subprocess.run([codegen, "--template-dir", root, rel_path, "--context", ctx_path],
                           capture_output=True)
    finally:
        os.remove(ctx_path)
    if p.returncode != 0:
        return None, p.stderr.decode("utf-8", "replace")
    return p.stdout.decode("utf-8"), None


def diff(expected, actual, a, b):
    return "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True), a, b))


def context_for(case_path):
    ctx = case_path[: -len(".j2")] + ".json"
    return json.loads(read(ctx)) if os.path.exists(ctx) else {}


class Report:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, problems):
        if problems:
            self.failed += 1
            print(f"FAIL {name}")
            for p in problems:
                print("  " + p.rstrip("\n").replace("\n", "\n  "))
        else:
            self.passed += 1
            print(f"ok   {name}")


def compare(codegen, root, rel_path, context):
    """Problems found rendering one template with one context; also returns Jinja2's output."""
    source = read(os.path.join(root, rel_path))
    theirs, their_error = render_jinja2(source, context)
    ours, our_error = render_ours(codegen, root, rel_path, context)
    problems = []
    if their_error:
        problems.append(f"Jinja2 failed: {their_error}")
    if our_error:
        problems.append(f"dg-codegen failed: {our_error}")
    if not problems and ours != theirs:
        problems.append(diff(theirs, ours, "jinja2", "dg-codegen"))
    return problems, theirs


def golden_cases(args, report):
    for name in sorted(os.listdir(CASES)):
        if not name.endswith(".j2"):
            continue
        path = os.path.join(CASES, name)
        problems, theirs = compare(args.codegen, CASES, name, context_for(path))
        out_path = path[: -len(".j2")] + ".out"
        if args.update and theirs is not None:
            write(out_path, theirs)
        if not os.path.exists(out_path):
            problems.append(f"missing {os.path.relpath(out_path, ROOT)} (run with --update)")
        elif theirs is not None and read(out_path) != theirs:
            problems.append("checked-in golden output differs from Jinja2:\n" +
                            diff(read(out_path), theirs, "golden", "jinja2"))
        report.check(f"cases/{name}", problems)


def error_cases(args, report):
    for name in sorted(os.listdir(ERRORS)):
        if not name.endswith(".j2"):
            continue
        path = os.path.join(ERRORS, name)
        context = context_for(path)
        theirs, _ = render_jinja2(read(path), context)
        ours, our_error = render_ours(args.codegen, ERRORS, name, context)
        problems = []
        if theirs is not None:
            problems.append(f"Jinja2 accepts it and renders {theirs!r}")
        if ours is not None:
            problems.append(f"dg-codegen accepts it and renders {ours!r}")
        if args.update and our_error is not None:
            write(path[: -len(".j2")] + ".err", our_error)
        report.check(f"errors/{name}", problems)


def kernel_templates(args, report):
    if args.contexts is None:
        report.check("kernels/*", ["no --contexts file: the kernel templates were not compared"])
        return
    contexts_path = os.path.abspath(args.contexts)
    contexts = json.loads(read(contexts_path))
    kernels = os.path.join(TEMPLATES, "kernels")
    names = sorted(n for n in os.listdir(kernels) if n.endswith(".cu.j2")) if os.path.isdir(kernels) else []
    for name in names:
        family = name[: -len(".cu.j2")]
        if not contexts.get(family):
            report.check(f"kernels/{name}", [f"no context for '{family}' in {os.path.relpath(contexts_path, ROOT)}"])
            continue
        for i, context in enumerate(contexts[family]):
            problems, _ = compare(args.codegen, TEMPLATES, f"kernels/{name}", context)
            report.check(f"kernels/{name} [context {i}]", problems)
    for family in sorted(set(contexts) - {n[: -len(".cu.j2")] for n in names}):
        report.check(f"contexts:{family}", [f"no template kernels/{family}.cu.j2"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--codegen", required=True, help="path to the dg-codegen executable")
    parser.add_argument("--contexts", help="JSON {family: [context, ...]} for the kernel templates, as written by "
                        "dg_compile_tests -tc='kernel contexts*' with DG_KERNEL_CONTEXTS_OUT set")
    parser.add_argument("--update", action="store_true", help="rewrite the .out and .err files")
    args = parser.parse_args()

    report = Report()
    golden_cases(args, report)
    error_cases(args, report)
    kernel_templates(args, report)
    print(f"{report.passed} passed, {report.failed} failed")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
