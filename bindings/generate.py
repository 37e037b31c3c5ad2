#!/usr/bin/env python3
"""Generates the bindings' declarations from include/dg.h, so that they cannot drift from it.

Outputs (checked in; never edit them by hand):
  bindings/rust/dg-sys/src/generated.rs  Rust `extern "C"` declarations, constants, structs and
                                          their `*_INIT` values
  bindings/go/calls.h                     C wrappers the Go package calls through cgo: each returns
                                          the status together with dg_last_error(), read on the
                                          thread that failed (goroutines move between OS threads)
  bindings/python/dg/_declarations.py     ctypes constants, structs (with their *_INIT defaults),
                                          callback types and PROTOTYPES: every function's
                                          (restype, argtypes)
  bindings/rust/{dg,dg-sys}/Cargo.toml,   the crates' versions (and dg's dependency on dg-sys):
  bindings/rust/Cargo.lock                libdg's DG_VERSION_MAJOR.MINOR.PATCH, one version for all

  python3 bindings/generate.py           rewrites the files that differ
  python3 bindings/generate.py --check   exits 1, with a diff, when any differs from dg.h

The parser knows the shapes of declaration dg.h uses (functions, opaque handles, typedefs of
integers and function pointers, structs, #define constants and struct initialisers) and fails
loudly, naming the declaration, on anything else, so a new kind of declaration gets a deliberate
mapping instead of a silent gap.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(ROOT, "include", "dg.h")
RUST_OUT = os.path.join(ROOT, "bindings", "rust", "dg-sys", "src", "generated.rs")
GO_OUT = os.path.join(ROOT, "bindings", "go", "calls.h")
PYTHON_OUT = os.path.join(ROOT, "bindings", "python", "dg", "_declarations.py")
RUST_DIR = os.path.join(ROOT, "bindings", "rust")
CARGO_FILES = [os.path.join(RUST_DIR, p) for p in ("dg-sys/Cargo.toml", "dg/Cargo.toml", "Cargo.lock")]

# Macros of the header's own machinery, not part of the API.
SKIPPED_MACROS = {"DG_H", "DG_API"}

# C scalar types and their Rust spellings.
RUST_SCALARS = {
    "void": "c_void",
    "char": "c_char",
    "int32_t": "i32",
    "int64_t": "i64",
    "uint8_t": "u8",
    "uint32_t": "u32",
    "uint64_t": "u64",
    "size_t": "usize",
    "float": "f32",
    "double": "f64",
}

# C scalar types and their ctypes spellings.
PYTHON_SCALARS = {
    "char": "c_char",
    "int32_t": "c_int32",
    "int64_t": "c_int64",
    "uint8_t": "c_uint8",
    "uint32_t": "c_uint32",
    "uint64_t": "c_uint64",
    "size_t": "c_size_t",
    "float": "c_float",
    "double": "c_double",
}


class HeaderError(Exception):
    pass


@dataclass
class Token:
    kind: str  # comment, pp, id, num, str, punct
    text: str
    line: int  # line of the first character
    end_line: int
    first_on_line: bool  # nothing but blanks before it on its line


@dataclass
class CType:
    base: str
    base_const: bool = False
    pointers: List[bool] = field(default_factory=list)  # per level, outermost last: is that pointer const

    def c(self) -> str:
        s = ("const " if self.base_const else "") + self.base
        for const in self.pointers:
            s += "*" + (" const" if const else "")
        return s


@dataclass
class Param:
    type: CType
    name: str


@dataclass
class Function:
    name: str
    ret: CType
    params: List[Param]
    doc: Optional[str]


@dataclass
class StructField:
    type: CType
    name: str
    array: Optional[str]
    doc: Optional[str]


@dataclass
class Struct:
    name: str
    fields: List[StructField]
    doc: Optional[str]


@dataclass
class Header:
    constants: List[Tuple[str, str, Optional[str]]] = field(default_factory=list)  # name, C expression, doc
    initialisers: List[Tuple[str, str]] = field(default_factory=list)  # macro name, C initialiser
    opaque: List[Tuple[str, Optional[str]]] = field(default_factory=list)
    aliases: List[Tuple[str, CType, Optional[str]]] = field(default_factory=list)
    fn_pointers: List[Tuple[str, CType, List[Param], Optional[str]]] = field(default_factory=list)
    structs: List[Struct] = field(default_factory=list)
    functions: List[Function] = field(default_factory=list)


TOKEN_RE = re.compile(
    r"(?P<comment>/\*.*?\*/|//[^\n]*)"
    r"|(?P<pp>^[ \t]*\#(?:\\\n|[^\n])*)"
    r"|(?P<ws>\s+)"
    r"|(?P<num>\d[\w.]*)"
    r"|(?P<id>[A-Za-z_]\w*)"
    r"|(?P<str>\"(?:[^\"\\\n]|\\.)*\")"
    r"|(?P<punct>\.\.\.|[{}()\[\];,*=&<>+\-/|~!?:.])",
    re.S | re.M,
)


def tokenize(text: str) -> List[Token]:
    tokens: List[Token] = []
    pos = 0
    line = 1
    while pos < len(text):
        m = TOKEN_RE.match(text, pos)
        if not m:
            raise HeaderError("line %d: cannot read %r" % (line, text[pos : pos + 20]))
        kind = m.lastgroup
        s = m.group()
        if kind != "ws":
            line_start = text.rfind("\n", 0, pos) + 1
            tokens.append(Token(kind, s, line, line + s.count("\n"), text[line_start:pos].strip() == ""))
        line += s.count("\n")
        pos = m.end()
    return tokens


def comment_text(raw: str) -> str:
    """The words of a C comment, its markers and common indentation removed."""
    if raw.startswith("//"):
        return raw[2:].strip()
    body = raw[2:-2]
    lines = body.split("\n")
    cleaned = []
    for i, l in enumerate(lines):
        if i > 0:
            l = re.sub(r"^\s*\* ?", "", l) if re.match(r"^\s*\*", l) else l
        cleaned.append(l.rstrip())
    while cleaned and not cleaned[0].strip():
        cleaned.pop(0)
    while cleaned and not cleaned[-1].strip():
        cleaned.pop()
    cleaned = [l for l in cleaned if not re.fullmatch(r"\s*=+\s*", l)]
    if not cleaned:
        return ""
    first = cleaned[0].lstrip()
    rest = cleaned[1:]
    indent = min((len(l) - len(l.lstrip()) for l in rest if l.strip()), default=0)
    return "\n".join([first] + [l[indent:] for l in rest]).strip()


def parse_type(tokens: List[str], where: str) -> CType:
    t = CType(base="")
    i = 0
    if i < len(tokens) and tokens[i] == "const":
        t.base_const = True
        i += 1
    if i >= len(tokens) or not re.match(r"[A-Za-z_]\w*$", tokens[i]):
        raise HeaderError("%s: cannot read the type %r" % (where, " ".join(tokens)))
    t.base = tokens[i]
    i += 1
    if i < len(tokens) and tokens[i] == "const":
        t.base_const = True
        i += 1
    while i < len(tokens):
        if tokens[i] != "*":
            raise HeaderError("%s: cannot read the type %r" % (where, " ".join(tokens)))
        i += 1
        const = i < len(tokens) and tokens[i] == "const"
        if const:
            i += 1
        t.pointers.append(const)
    return t


def split_params(tokens: List[str], where: str) -> List[Param]:
    if tokens == ["void"] or not tokens:
        return []
    params: List[Param] = []
    current: List[str] = []
    for tok in tokens + [","]:
        if tok == ",":
            if len(current) < 2 or not re.match(r"[A-Za-z_]\w*$", current[-1]) or current[-1] in ("const",):
                raise HeaderError("%s: every parameter needs a type and a name, got %r" % (where, " ".join(current)))
            if "[" in current or "(" in current:
                raise HeaderError("%s: array or function parameters are not mapped: %r" % (where, " ".join(current)))
            params.append(Param(parse_type(current[:-1], where), current[-1]))
            current = []
        else:
            current.append(tok)
    return params


def parse_header(text: str) -> Header:
    tokens = tokenize(text)
    header = Header()
    skip_depth = 0  # inside `#ifdef __cplusplus` blocks
    statement: List[Token] = []
    depth = 0
    last_comment: Optional[Token] = None

    def doc_for(first: Token) -> Optional[str]:
        if last_comment is not None and last_comment.first_on_line and last_comment.end_line == first.line - 1:
            return comment_text(last_comment.text)
        return None

    statement_doc: Optional[str] = None
    for idx, tok in enumerate(tokens):
        if tok.kind == "pp":
            directive = re.sub(r"\\\n", " ", tok.text).strip()
            if re.match(r"#\s*if(def)?\b.*__cplusplus", directive):
                skip_depth += 1
            elif re.match(r"#\s*endif", directive) and skip_depth:
                skip_depth -= 1
            elif not skip_depth:
                m = re.match(r"#\s*define\s+(\w+)(.*)$", directive, re.S)
                if m and m.group(1) not in SKIPPED_MACROS:
                    name, value = m.group(1), m.group(2)
                    trailing = re.search(r"/\*(.*?)\*/\s*$", value, re.S)
                    doc = comment_text(trailing.group(0)) if trailing else doc_for(tok)
                    value = re.sub(r"/\*.*?\*/", "", value, flags=re.S).strip()
                    if value.startswith("{"):
                        header.initialisers.append((name, value))
                    elif value:
                        if not re.fullmatch(r"[\w\s()+\-*/]+", value):
                            raise HeaderError("#define %s: only integer expressions are mapped, got %r" % (name, value))
                        header.constants.append((name, value, doc))
            last_comment = None
            continue
        if skip_depth:
            continue
        if tok.kind == "comment":
            if statement:
                statement.append(tok)  # field comments of a struct
            else:
                last_comment = tok
            continue
        if not statement:
            statement_doc = doc_for(tok)
        statement.append(tok)
        if tok.text == "{":
            depth += 1
        elif tok.text == "}":
            depth -= 1
        elif tok.text == ";" and depth == 0:
            parse_statement(statement, statement_doc, header)
            statement = []
            last_comment = None
    if statement:
        raise HeaderError("line %d: unterminated declaration" % statement[0].line)
    return header


def parse_statement(toks: List[Token], doc: Optional[str], header: Header) -> None:
    words = [t.text for t in toks if t.kind != "comment"]
    where = "dg.h line %d" % toks[0].line
    if words[0] == "DG_API":
        open_ = words.index("(")
        name = words[open_ - 1]
        if words[-2] != ")":
            raise HeaderError("%s: cannot read the declaration of %s" % (where, name))
        ret = parse_type(words[1 : open_ - 1], "%s (%s)" % (where, name))
        params = split_params(words[open_ + 1 : -2], "%s (%s)" % (where, name))
        header.functions.append(Function(name, ret, params, doc))
        return
    if words[0] != "typedef":
        raise HeaderError("%s: unrecognised declaration %r" % (where, " ".join(words)))
    if words[1] == "struct" and len(words) == 5:
        header.opaque.append((words[3], doc))
        return
    if words[1] == "struct" and words[3] == "{":
        name = words[2]
        if words[-2] != name:
            raise HeaderError("%s: struct %s must be typedef'd to its own name" % (where, name))
        header.structs.append(Struct(name, parse_fields(toks, where), doc))
        return
    if "(" in words and words[words.index("(") + 1] == "*":
        open_ = words.index("(")
        name = words[open_ + 2]
        ret = parse_type(words[1:open_], where)
        params = split_params(words[open_ + 5 : -2], where)
        header.fn_pointers.append((name, ret, params, doc))
        return
    header.aliases.append((words[-2], parse_type(words[1:-2], where), doc))


def parse_fields(toks: List[Token], where: str) -> List[StructField]:
    body_start = next(i for i, t in enumerate(toks) if t.text == "{") + 1
    body_end = max(i for i, t in enumerate(toks) if t.text == "}")
    fields: List[StructField] = []
    current: List[Token] = []
    body = toks[body_start:body_end]
    for i, tok in enumerate(body):
        if tok.kind == "comment":
            # A comment that starts on the line of the previous field's ';' documents that field.
            if fields and not current and i > 0 and body[i - 1].text == ";" and body[i - 1].line == tok.line:
                fields[-1].doc = comment_text(tok.text)
            continue
        if tok.text == ";":
            words = [t.text for t in current]
            array = None
            if "[" in words:
                open_ = words.index("[")
                array = " ".join(words[open_ + 1 : words.index("]")])
                words = words[:open_]
            fields.append(StructField(parse_type(words[:-1], where), words[-1], array, None))
            current = []
        else:
            current.append(tok)
    return fields


# ------------------------------------------------------------------------------------------------
# Rust
# ------------------------------------------------------------------------------------------------


def rust_doc(doc: Optional[str], indent: str = "") -> str:
    if not doc:
        return ""
    # A fenced block keeps dg.h's alignment and stops rustdoc from reading indented lines as tests.
    lines = doc.split("\n")
    if len(lines) > 1:
        lines = ["```text"] + lines + ["```"]
    return "".join("%s///%s\n" % (indent, (" " + l) if l else "") for l in lines)


def rust_type(t: CType, known: Dict[str, str], where: str) -> str:
    if t.base in RUST_SCALARS:
        s = RUST_SCALARS[t.base]
    elif t.base in known:
        s = t.base
    else:
        raise HeaderError("%s: no Rust spelling for the C type %r: teach bindings/generate.py" % (where, t.base))
    if not t.pointers:
        if s == "c_void":
            raise HeaderError("%s: a by-value void" % where)
        return s
    pointee_const = t.base_const
    for const in t.pointers:
        s = "%s %s" % ("*const" if pointee_const else "*mut", s)
        pointee_const = const
    return s


def rust_expr(c: str) -> str:
    c = c.strip()
    m = re.fullmatch(r"sizeof\((\w+)\)", c)
    if m:
        return "core::mem::size_of::<%s>()" % m.group(1)
    if c == "NULL":
        return "core::ptr::null_mut()"
    m = re.fullmatch(r"(-?\d+\.\d*)[fF]?", c)
    if m:
        return m.group(1) if not m.group(1).endswith(".") else m.group(1) + "0"
    return c


def generate_rust(h: Header) -> str:
    out: List[str] = []
    w = out.append
    w("// Generated by bindings/generate.py from include/dg.h. Do not edit: run the script instead.\n")
    w("// `python3 bindings/generate.py --check` (run by dg-sys's tests and CI) fails when this file\n")
    w("// and dg.h disagree.\n\n")
    w("use std::os::raw::{c_char, c_void};\n\n")
    known: Dict[str, str] = {}
    for name, value, doc in h.constants:
        w(rust_doc(doc))
        if value.startswith("(") and value.endswith(")") and value.count("(") == 1:
            value = value[1:-1]
        w("pub const %s: i32 = %s;\n" % (name, value))
    w("\n")
    for name, t, doc in h.aliases:
        w(rust_doc(doc))
        w("pub type %s = %s;\n" % (name, rust_type(t, known, name)))
        known[name] = name
    for name, doc in h.opaque:
        w(rust_doc(doc))
        w("#[repr(C)]\npub struct %s {\n    _opaque: [u8; 0],\n}\n" % name)
        known[name] = name
    for name, ret, params, doc in h.fn_pointers:
        args = ", ".join("%s: %s" % (p.name, rust_type(p.type, known, name)) for p in params)
        r = "" if ret.base == "void" and not ret.pointers else " -> " + rust_type(ret, known, name)
        w(rust_doc(doc))
        w("pub type %s = Option<unsafe extern \"C\" fn(%s)%s>;\n" % (name, args, r))
        known[name] = name
    w("\n")
    for s in h.structs:
        known[s.name] = s.name
    for s in h.structs:
        w(rust_doc(s.doc))
        w("#[repr(C)]\n#[derive(Clone, Copy, Debug)]\npub struct %s {\n" % s.name)
        for f in s.fields:
            w(rust_doc(f.doc, "    "))
            ty = rust_type(f.type, known, "%s.%s" % (s.name, f.name))
            if f.array:
                ty = "[%s; (%s) as usize]" % (ty, f.array)
            w("    pub %s: %s,\n" % (f.name, ty))
        w("}\n\n")
    structs = {s.name: s for s in h.structs}
    for macro, init in h.initialisers:
        values = [v.strip() for v in re.sub(r"\s+", " ", init.strip()[1:-1]).split(",")]
        m = re.fullmatch(r"sizeof\((\w+)\)", values[0])
        if not m or m.group(1) not in structs:
            raise HeaderError("#define %s: an initialiser must start with sizeof(<struct>)" % macro)
        s = structs[m.group(1)]
        if len(values) != len(s.fields):
            raise HeaderError("#define %s: %d values for the %d fields of %s" % (macro, len(values), len(s.fields), s.name))
        w("/// `%s`: the value the C macro gives, the only correct start for a `%s`.\n" % (macro, s.name))
        w("pub const %s: %s = %s {\n" % (macro, s.name, s.name))
        callbacks = {name for name, _, _, _ in h.fn_pointers}
        for f, v in zip(s.fields, values):
            # A callback field is an Option<fn>: NULL is None.
            null_fn = v == "NULL" and f.type.base in callbacks and not f.type.pointers
            w("    %s: %s,\n" % (f.name, "None" if null_fn else rust_expr(v)))
        w("};\n\n")
        w("impl Default for %s {\n    fn default() -> Self {\n        %s\n    }\n}\n\n" % (s.name, macro))
    w('extern "C" {\n')
    for i, f in enumerate(h.functions):
        if i:
            w("\n")
        w(rust_doc(f.doc, "    "))
        args = ", ".join("%s: %s" % (p.name, rust_type(p.type, known, f.name)) for p in f.params)
        r = "" if f.ret.base == "void" and not f.ret.pointers else " -> " + rust_type(f.ret, known, f.name)
        w("    pub fn %s(%s)%s;\n" % (f.name, args, r))
    w("}\n")
    return "".join(out)


# ------------------------------------------------------------------------------------------------
# Go (C wrappers for cgo)
# ------------------------------------------------------------------------------------------------


def generate_go(h: Header) -> str:
    out: List[str] = []
    w = out.append
    w("/* Generated by bindings/generate.py from include/dg.h. Do not edit: run the script instead.\n")
    w(" *\n")
    w(" * One wrapper per function of dg.h that returns a dg_status: it makes the call and, on failure,\n")
    w(" * copies dg_last_error() in the same C call, on the same OS thread (a goroutine can move to\n")
    w(" * another thread between two cgo calls, and the message is per thread). By-value void*\n")
    w(" * parameters (device pointers) become uintptr_t so that Go passes them without unsafe.Pointer\n")
    w(" * conversions of non-Go memory. dgw_<struct>_init() give the *_INIT values. */\n")
    w("#ifndef DG_GO_CALLS_H\n#define DG_GO_CALLS_H\n\n")
    w("#include <dg.h>\n#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n\n")
    w("/* A status and, when it is not DG_SUCCESS, a malloc'd copy of the message (the caller frees\n")
    w(" * it; NULL if the copy failed). */\n")
    w("typedef struct dgw_result {\n  dg_status status;\n  char* message;\n} dgw_result;\n\n")
    w("static inline dgw_result dgw_result_of(dg_status status) {\n")
    w("  dgw_result r = {status, NULL};\n")
    w("  if (status != DG_SUCCESS) r.message = strdup(dg_last_error());\n")
    w("  return r;\n}\n\n")
    w("/* A device address as the void* of a struct field (Go holds device addresses as uintptr). */\n")
    w("static inline void* dgw_pointer(uintptr_t address) {\n  return (void*)address;\n}\n\n")
    for f in h.functions:
        if f.ret.c() != "dg_status":
            continue
        params, args = [], []
        for p in f.params:
            if p.type.base == "void" and len(p.type.pointers) == 1 and not p.type.base_const:
                params.append("uintptr_t %s" % p.name)
                args.append("(void*)%s" % p.name)
            else:
                params.append("%s %s" % (p.type.c(), p.name))
                args.append(p.name)
        w("static inline dgw_result dgw_%s(%s) {\n" % (f.name[3:], ", ".join(params) or "void"))
        w("  return dgw_result_of(%s(%s));\n}\n" % (f.name, ", ".join(args)))
    w("\n")
    structs = {s.name for s in h.structs}
    for macro, init in h.initialisers:
        m = re.match(r"\{\s*sizeof\((\w+)\)", init)
        if not m or m.group(1) not in structs:
            raise HeaderError("#define %s: an initialiser must start with sizeof(<struct>)" % macro)
        s = m.group(1)
        w("static inline %s dgw_%s_init(void) {\n  %s v = %s;\n  return v;\n}\n" % (s, s[3:], s, macro))
    w("\n#endif /* DG_GO_CALLS_H */\n")
    return "".join(out)


# ------------------------------------------------------------------------------------------------
# Python (ctypes)
# ------------------------------------------------------------------------------------------------


def python_type(t: CType, h: Header, where: str) -> str:
    """The ctypes spelling of a C type. Opaque handles are `c_void_p` (the binding never looks
    inside them), `char*` is `c_char_p` (a `create_string_buffer` passes for it)."""
    opaque = {name for name, _ in h.opaque}
    aliases = {name for name, _, _ in h.aliases}
    callbacks = {name for name, _, _, _ in h.fn_pointers}
    structs = {s.name for s in h.structs}
    levels = len(t.pointers)
    if t.base == "void" or t.base in opaque:
        if levels == 0:
            if t.base == "void":
                return "None"
            raise HeaderError("%s: a by-value opaque %s" % (where, t.base))
        s, levels = "c_void_p", levels - 1
    elif t.base == "char" and levels >= 1:
        s, levels = "c_char_p", levels - 1
    elif t.base in PYTHON_SCALARS:
        s = PYTHON_SCALARS[t.base]
    elif t.base in aliases or t.base in callbacks or t.base in structs:
        s = t.base
    else:
        raise HeaderError("%s: no ctypes spelling for the C type %r: teach bindings/generate.py" % (where, t.base))
    for _ in range(levels):
        s = "POINTER(%s)" % s
    return s


def python_expr(c: str, struct: str) -> str:
    c = c.strip()
    if re.fullmatch(r"sizeof\((\w+)\)", c):
        return "ctypes.sizeof(%s)" % struct
    if c == "NULL":
        return "None"
    m = re.fullmatch(r"(-?\d+\.\d*)[fF]?", c)
    if m:
        return m.group(1) + ("0" if m.group(1).endswith(".") else "")
    return c


def python_comment(doc: Optional[str], indent: str = "") -> str:
    if not doc:
        return ""
    return "".join("%s#%s\n" % (indent, (" " + l) if l else "") for l in doc.split("\n"))


def generate_python(h: Header) -> str:
    out: List[str] = []
    w = out.append
    w("# Generated by bindings/generate.py from include/dg.h. Do not edit: run the script instead.\n")
    w("# `python3 bindings/generate.py --check` (ctest bindings_generated) fails when this file and\n")
    w("# dg.h disagree.\n")
    w('"""The ctypes declarations of include/dg.h: its constants, types, structs (constructed with\n')
    w("their ``*_INIT`` values, ``struct_size`` filled in) and ``PROTOTYPES``, every function's\n")
    w('``(restype, argtypes)``. Opaque handles are ``c_void_p``."""\n\n')
    w("# fmt: off\n")
    w("import ctypes\n")
    w("from ctypes import (  # noqa: F401\n")
    for name in ["CFUNCTYPE", "POINTER", "Structure", "c_char", "c_char_p", "c_double", "c_float", "c_int32",
                 "c_int64", "c_size_t", "c_uint8", "c_uint32", "c_uint64", "c_void_p"]:
        w("    %s,\n" % name)
    w(")\n")
    w("from typing import Dict, List, Tuple\n\n")
    for name, value, doc in h.constants:
        w("%s = %s%s\n" % (name, value, ("  # " + doc.replace("\n", " ")) if doc and "\n" not in doc else ""))
    w("\n")
    for name, t, doc in h.aliases:
        w("%s = %s\n" % (name, python_type(t, h, name)))
    for name, ret, params, doc in h.fn_pointers:
        types = [python_type(ret, h, name)] + [python_type(p.type, h, name) for p in params]
        w("%s = CFUNCTYPE(%s)  # (%s)\n" % (name, ", ".join(types), ", ".join(p.name for p in params)))
    w("\n\nclass _Struct(Structure):\n")
    w('    """A dg.h struct: keyword arguments override its ``INIT`` values; ``struct_size`` is set."""\n\n')
    w("    INIT: Dict[str, object] = {}\n\n")
    w("    def __init__(self, **fields: object) -> None:\n")
    w("        values = dict(self.INIT)\n")
    w("        values.update(fields)\n")
    w('        if "struct_size" in dict(self._fields_):\n')
    w('            values["struct_size"] = ctypes.sizeof(self)\n')
    w("        super().__init__(**values)\n")
    structs = {s.name: s for s in h.structs}
    inits: Dict[str, List[Tuple[str, str]]] = {}
    for macro, init in h.initialisers:
        values = [v.strip() for v in re.sub(r"\s+", " ", init.strip()[1:-1]).split(",")]
        m = re.fullmatch(r"sizeof\((\w+)\)", values[0])
        if not m or m.group(1) not in structs:
            raise HeaderError("#define %s: an initialiser must start with sizeof(<struct>)" % macro)
        s = structs[m.group(1)]
        if len(values) != len(s.fields):
            raise HeaderError("#define %s: %d values for the %d fields of %s" % (macro, len(values), len(s.fields), s.name))
        inits[s.name] = [(f.name, python_expr(v, s.name)) for f, v in zip(s.fields[1:], values[1:])]
    for s in h.structs:
        w("\n\nclass %s(_Struct):\n" % s.name)
        doc = ("``%s``: %s" % (s.name, s.doc)) if s.doc else "``%s``" % s.name
        w('    """%s"""\n\n' % doc.replace("\n", "\n    "))
        w("    _fields_ = [\n")
        for f in s.fields:
            ty = python_type(f.type, h, "%s.%s" % (s.name, f.name))
            if f.array:
                ty = "%s * (%s)" % (ty, f.array)
            w('        ("%s", %s),\n' % (f.name, ty))
        w("    ]\n")
        if s.name in inits:
            # Zero and NULL are ctypes' own defaults (and None is no value for a function-pointer field).
            w("    INIT = {%s}\n" % ", ".join('"%s": %s' % kv for kv in inits[s.name] if kv[1] not in ("0", "None")))
    w("\n\n# name -> (restype, argtypes), the parameter names in the comment.\n")
    w("PROTOTYPES: Dict[str, Tuple[object, List[object]]] = {\n")
    for f in h.functions:
        ret = python_type(f.ret, h, f.name)
        args = ", ".join(python_type(p.type, h, f.name) for p in f.params)
        names = ", ".join(p.name for p in f.params)
        if names:
            w("    # %s\n" % names)
        w('    "%s": (%s, [%s]),\n' % (f.name, ret, args))
    w("}\n")
    return "".join(out)


# ------------------------------------------------------------------------------------------------
# Crate versions
# ------------------------------------------------------------------------------------------------


def library_version(h: Header) -> str:
    values = {name: value for name, value, _ in h.constants}
    try:
        return ".".join(str(int(values["DG_VERSION_" + part])) for part in ("MAJOR", "MINOR", "PATCH"))
    except (KeyError, ValueError):
        raise HeaderError("DG_VERSION_MAJOR, _MINOR and _PATCH must be integer #defines") from None


def with_crate_versions(path: str, version: str) -> str:
    """The text of a Cargo.toml or Cargo.lock with the dg and dg-sys versions set to `version`."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith("Cargo.lock"):
        pattern = r'(\[\[package\]\]\nname = "dg(?:-sys)?"\nversion = ")[^"]*(")'
    else:
        pattern = r'(?m)(^\[package\]\nname = "dg(?:-sys)?"\nversion = ")[^"]*(")|(^dg-sys = \{[^}\n]*version = ")[^"]*(")'
    text, count = re.subn(pattern, lambda m: (m.group(1) or m.group(3)) + version + (m.group(2) or m.group(4)), text)
    if count == 0:
        raise HeaderError("%s: found no dg/dg-sys version to set" % os.path.relpath(path, ROOT))
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 on a difference")
    ap.add_argument("--header", default=HEADER, help="the header to read (default: include/dg.h)")
    args = ap.parse_args()
    with open(args.header, encoding="utf-8") as f:
        try:
            header = parse_header(f.read())
            outputs = [
                (RUST_OUT, generate_rust(header)),
                (GO_OUT, generate_go(header)),
                (PYTHON_OUT, generate_python(header)),
            ]
            version = library_version(header)
            outputs += [(path, with_crate_versions(path, version)) for path in CARGO_FILES]
        except HeaderError as e:
            print("generate.py: %s" % e, file=sys.stderr)
            return 2
    stale = []
    for path, text in outputs:
        current = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        if current == text:
            continue
        rel = os.path.relpath(path, ROOT)
        if args.check:
            stale.append(rel)
            sys.stdout.writelines(
                difflib.unified_diff(current.splitlines(True), text.splitlines(True), rel, rel + " (from dg.h)", n=1)
            )
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print("wrote %s" % rel)
    if stale:
        print("\n%s out of date with include/dg.h: run python3 bindings/generate.py" % ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
