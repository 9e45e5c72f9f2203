//! One kernel source for every backend (Sarek's `let%kernel`, in Rust): a GEMM kernel written
//! once in a small subset of Rust, parsed with syn, its types inferred, and emitted as CUDA C++
//! and as WGSL. Two callers: the `#[matmul_macros::kernel]` attribute at compile time
//! ([`generate`]: the registry's `NAME@rs` kernels) and `matmul run --kernel-file NAME.rs` at run
//! time ([`generate_from_str`]: a kernel file's text, its errors at their line and column).
//!
//! The subset, all of it (anything else is an error naming its span; docs/rust-kernels.md):
//! - the signature `fn NAME(a: &[T], b: &[T], c: &mut [T])`; in the body the problem's `m`, `n`,
//!   `k` and the strides `a_rs`, `a_cs`, `b_rs`, `b_cs` (`op(A)[i][l] = a[i·a_rs + l·a_cs]`), and
//!   the tile edge `TILE`, all `u32`;
//! - `let x = e;`, `let mut x = e;`, `x = e;`, `x += e;` (and `-=`, `*=`), `if c { .. } else { .. }`,
//!   `for v in lo..hi { .. }`, `c[i] = e;`, `s[i] = e;` for a shared array `s`;
//! - `let s = shared::<T>(LEN);` a workgroup (shared-memory) array of LEN elements, LEN an
//!   expression of constants; `superstep();` a barrier of the whole block (Sarek's `let%superstep`);
//! - expressions: integer literals, names, `+ - * / %`, comparisons, `&&`, `||`, `!`, parentheses,
//!   `a[i]`, `b[i]`, `c[i]`, `s[i]`, `zero()` (T's zero), `thread_x()`, `thread_y()`, `block_x()`,
//!   `block_y()`, `global_x()` (the thread's index over the whole grid along x);
//! - the attribute's workgroup sizes are constant expressions of integers, `TILE` and `WG` (the
//!   row and element kernels' workgroup size).
//!
//! Types are inferred: a value is of the element type T when it reads an element (`a[..]`,
//! `b[..]`, `c[..]`, a shared array) or is `zero()`, a condition when it is a comparison (or `&&`,
//! `||`, `!` of conditions), else `u32`. Arithmetic, comparisons and assignments take operands of
//! one type; an `if` takes a condition.

use std::collections::{HashMap, HashSet};
use std::fmt;

use proc_macro2::Span;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, ItemFn, Lit, Pat, Stmt, UnOp};

/// A kernel, generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// The function's name.
    pub name: String,
    /// The attribute's workgroup sizes (x, y) as written: constant expressions of integers,
    /// `TILE` and `WG` (`("TILE", "TILE")`, `("WG", "1")`).
    pub workgroup: (String, String),
    /// The constants the kernel names (`TILE`, `WG`), in order of first use: the registry's
    /// headers define them, a kernel file takes them from `-D`.
    pub constants: Vec<String>,
    /// Whether the kernel calls `global_x()`: its grid is one-dimensional, folded into y past the
    /// dispatch limit.
    pub global_x: bool,
    /// The registry's CUDA C++: entry `NAME_rs`, `ELEM` and `TILE` from `-D`.
    pub cuda: String,
    /// The registry's WGSL body, after the wgpu backend's header (`T`, `TILE` or `WG`, the
    /// bindings, `ld_a`, `ld_b`).
    pub wgsl: String,
    /// CUDA C++ with the own-kernel ABI (docs/own-kernels.md): entry `NAME`, the ten arguments,
    /// `ELEM` and the constants from `-D`.
    pub own_cuda: String,
    /// WGSL with the own-kernel ABI (docs/own-kernels.md): entry `main`; `T`, the constants and
    /// the bindings appended by matmul.
    pub own_wgsl: String,
    /// The workgroup's sizes and the shared arrays' lengths: each must be at least 1 once the
    /// values of the constants they name are known ([`Generated::check_sizes`]; a size of
    /// literals alone is checked while generating).
    pub sizes: Vec<Size>,
}

/// A constant expression of integers, `TILE` and `WG`, as the kernel wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Const {
    /// An integer literal.
    Int(u64),
    /// A name: `TILE` or `WG` in a size (any other name has no value here).
    Name(String),
    /// `+ - * / %` (integer division, as in CUDA and WGSL).
    Bin(char, Box<Const>, Box<Const>),
}

impl Const {
    /// The value with the constants' values from `value`; `None` for an unknown constant, and
    /// `Some(Err(()))` where it leaves u32 or divides by 0.
    pub fn eval(&self, value: &dyn Fn(&str) -> Option<u64>) -> Option<Result<u64, ()>> {
        Some(match self {
            Const::Int(v) if *v <= u32::MAX as u64 => Ok(*v),
            Const::Int(_) => Err(()),
            Const::Name(n) => Ok(value(n)?),
            Const::Bin(op, l, r) => {
                let (l, r) = (l.eval(value)?, r.eval(value)?);
                let (Ok(l), Ok(r)) = (l, r) else {
                    return Some(Err(()));
                };
                let v = match op {
                    '+' => l.checked_add(r),
                    '-' => l.checked_sub(r),
                    '*' => l.checked_mul(r),
                    '/' => l.checked_div(r),
                    _ => l.checked_rem(r),
                };
                v.filter(|&v| v <= u32::MAX as u64).ok_or(())
            }
        })
    }

    /// The names it uses, in order, once each.
    fn names(&self, out: &mut Vec<String>) {
        match self {
            Const::Int(_) => {}
            Const::Name(n) if !out.contains(n) => out.push(n.clone()),
            Const::Name(_) => {}
            Const::Bin(_, l, r) => {
                l.names(out);
                r.names(out);
            }
        }
    }

    fn of(e: &Expr) -> Option<Const> {
        match e {
            Expr::Lit(l) => match &l.lit {
                Lit::Int(i) => i.base10_parse().ok().map(Const::Int),
                _ => None,
            },
            Expr::Path(p) => p.path.get_ident().map(|i| Const::Name(i.to_string())),
            Expr::Paren(p) => Const::of(&p.expr),
            Expr::Binary(b) => Some(Const::Bin(
                arith(&b.op)?,
                Box::new(Const::of(&b.left)?),
                Box::new(Const::of(&b.right)?),
            )),
            _ => None,
        }
    }
}

/// A size the kernel states: what it is, its expression and where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Size {
    /// "the workgroup's x size", "shared array `tile_a`'s length".
    pub what: String,
    /// As written (`TILE * TILE`).
    pub text: String,
    /// Its value once the constants are known.
    pub value: Const,
    /// Where it is written (1-based).
    pub line: usize,
    /// The column, from 1.
    pub column: usize,
}

impl Generated {
    /// Checks every size that names a constant against the constants' values (`TILE` = 16,
    /// say): a size of 0, or one that leaves u32 or divides by 0, is an error at its place. A
    /// constant `value` does not know is left to the compiler.
    pub fn check_sizes(&self, value: &dyn Fn(&str) -> Option<u64>) -> Result<(), GenError> {
        for s in &self.sizes {
            let why = match s.value.eval(value) {
                Some(Ok(0)) => "is 0",
                Some(Err(())) => "leaves u32 or divides by 0",
                _ => continue,
            };
            let mut names = Vec::new();
            s.value.names(&mut names);
            let names: Vec<String> = names
                .iter()
                .filter_map(|n| value(n).map(|v| format!("{n} = {v}")))
                .collect();
            return Err(GenError {
                message: format!(
                    "kernel: {} `{}` {why} with {} (it must be at least 1)",
                    s.what,
                    s.text,
                    names.join(", ")
                ),
                line: s.line,
                column: s.column,
            });
        }
        Ok(())
    }
}

fn size(what: String, e: &Expr) -> Option<Size> {
    let value = Const::of(e)?;
    let start = e.span().start();
    Some(Size {
        what,
        text: plain(e).ok()?,
        value,
        line: start.line.max(1),
        column: start.column + 1,
    })
}

/// Why a kernel file could not be generated: the message and where (1-based line and column,
/// the column counted in characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenError {
    /// What is wrong.
    pub message: String,
    /// The line, from 1.
    pub line: usize,
    /// The column, from 1.
    pub column: usize,
}

impl fmt::Display for GenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for GenError {}

impl From<syn::Error> for GenError {
    fn from(e: syn::Error) -> GenError {
        let start = e.span().start();
        GenError {
            message: e.to_string(),
            line: start.line.max(1),
            column: start.column + 1,
        }
    }
}

/// `item` with its attribute's arguments `attr` (the workgroup's x and y sizes, `TILE, TILE`),
/// generated; or the first construct outside the subset, at its span. What `#[kernel]` calls.
pub fn generate(attr: proc_macro2::TokenStream, item: &ItemFn) -> syn::Result<Generated> {
    let sizes: Punctuated<Expr, syn::Token![,]> =
        syn::parse::Parser::parse2(Punctuated::parse_terminated, attr)?;
    generate_sized(&sizes, Span::call_site(), item)
}

/// A kernel file's text, generated: one `#[kernel(X, Y)] fn NAME(a: &[T], b: &[T], c: &mut [T])
/// { .. }` (the attribute may be written `#[matmul_macros::kernel(X, Y)]`), with comments and
/// `use` lines around it. An error names its line and column in `src`.
pub fn generate_from_str(src: &str) -> Result<Generated, GenError> {
    let file = syn::parse_file(src)?;
    let mut found: Option<(&ItemFn, &syn::Attribute)> = None;
    for item in &file.items {
        match item {
            syn::Item::Use(_) => {}
            syn::Item::Fn(f) => {
                let attr = f.attrs.iter().find(|a| is_kernel_attr(a.path()));
                let Some(attr) = attr else {
                    return Err(syn::Error::new(
                        f.sig.ident.span(),
                        "kernel: a function without #[kernel(X, Y)] (a kernel file holds one #[kernel] fn)",
                    )
                    .into());
                };
                if found.is_some() {
                    return Err(syn::Error::new(
                        f.sig.ident.span(),
                        "kernel: a second #[kernel] fn (a kernel file holds one)",
                    )
                    .into());
                }
                if let Some(other) = f
                    .attrs
                    .iter()
                    .find(|a| !is_kernel_attr(a.path()) && !a.path().is_ident("doc"))
                {
                    return Err(outside::<()>(other.span(), "this attribute").unwrap_err().into());
                }
                found = Some((f, attr));
            }
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "kernel: a kernel file holds one #[kernel(X, Y)] fn (and `use` lines), not this item",
                )
                .into())
            }
        }
    }
    let Some((item, attr)) = found else {
        return Err(GenError {
            message: "kernel: no #[kernel(X, Y)] fn in the file (docs/rust-kernels.md)".into(),
            line: 1,
            column: 1,
        });
    };
    let sizes = match &attr.meta {
        syn::Meta::List(list) => list.parse_args_with(Punctuated::parse_terminated)?,
        m => {
            return Err(syn::Error::new(
                m.span(),
                "kernel: give the workgroup's x and y sizes, e.g. #[kernel(TILE, TILE)]",
            )
            .into())
        }
    };
    Ok(generate_sized(&sizes, attr.span(), item)?)
}

fn is_kernel_attr(path: &syn::Path) -> bool {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    segs == ["kernel"] || segs == ["matmul_macros", "kernel"]
}

fn generate_sized(
    sizes: &Punctuated<Expr, syn::Token![,]>,
    attr_span: Span,
    item: &ItemFn,
) -> syn::Result<Generated> {
    if sizes.len() != 2 {
        return Err(syn::Error::new(
            attr_span,
            "kernel: give the workgroup's x and y sizes, e.g. #[kernel(TILE, TILE)]",
        ));
    }
    check_signature(item)?;
    let workgroup = (plain(&sizes[0])?, plain(&sizes[1])?);
    for size in sizes {
        at_least_one(size, "a workgroup size")?;
    }
    let registry = emit(sizes, item, false)?;
    let own = emit(sizes, item, true)?;
    let mut checked: Vec<Size> = ["x", "y"]
        .iter()
        .zip(sizes)
        .filter_map(|(axis, e)| size(format!("the workgroup's {axis} size"), e))
        .collect();
    checked.extend(registry.sizes);
    Ok(Generated {
        name: item.sig.ident.to_string(),
        workgroup,
        constants: registry.constants,
        global_x: registry.global_x,
        cuda: registry.cuda,
        wgsl: registry.wgsl,
        own_cuda: own.cuda,
        own_wgsl: own.wgsl,
        sizes: checked,
    })
}

/// One emission of the kernel: the registry's form or the own-kernel ABI's (`own`).
struct Emitted {
    cuda: String,
    wgsl: String,
    constants: Vec<String>,
    global_x: bool,
    sizes: Vec<Size>,
}

fn emit(
    sizes: &Punctuated<Expr, syn::Token![,]>,
    item: &ItemFn,
    own: bool,
) -> syn::Result<Emitted> {
    let name = item.sig.ident.to_string();
    let mut g = Gen {
        own,
        ..Gen::default()
    };
    let mut wg_sizes = Vec::new();
    g.attr = true;
    for s in sizes {
        wg_sizes.push(g.expr_w(s)?.1);
    }
    g.attr = false;
    g.wg_x = wg_sizes[0].clone();
    let mut body = Vec::new();
    g.scopes.push(HashSet::new());
    g.block_in_scope(&item.block.stmts, 1, &mut body)?;
    Ok(Emitted {
        cuda: g.cuda(&name, &body),
        wgsl: g.wgsl(&name, &wg_sizes, &body),
        constants: g.constants,
        global_x: g.global_x,
        sizes: g.sizes,
    })
}

fn check_signature(item: &ItemFn) -> syn::Result<()> {
    let sig = &item.sig;
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return outside(sig.generics.span(), "a generic kernel");
    }
    if let syn::ReturnType::Type(_, t) = &sig.output {
        return outside(t.span(), "a return value (the kernel writes c)");
    }
    if let Some(q) = sig
        .asyncness
        .map(|a| a.span())
        .or(sig.unsafety.map(|u| u.span()))
        .or(sig.constness.map(|c| c.span()))
        .or(sig.abi.as_ref().map(|a| a.span()))
    {
        return outside(q, "this qualifier");
    }
    let names: Vec<String> = sig
        .inputs
        .iter()
        .map(|a| match a {
            syn::FnArg::Typed(t) => match &*t.pat {
                Pat::Ident(p) => Ok(p.ident.to_string()),
                p => Err(syn::Error::new(p.span(), "kernel: parameters are a, b, c")),
            },
            syn::FnArg::Receiver(r) => Err(syn::Error::new(r.span(), "kernel: no self")),
        })
        .collect::<syn::Result<_>>()?;
    if names != ["a", "b", "c"] {
        return Err(syn::Error::new(
            sig.inputs.span(),
            "kernel: the signature is (a: &[T], b: &[T], c: &mut [T])",
        ));
    }
    check_name(&sig.ident.to_string(), sig.ident.span(), true)
}

/// The names the generated code declares itself: none may name a variable or a shared array.
const GENERATED: &str = "m n k a_rs a_cs b_rs b_cs a b c M N K A_RS A_CS B_RS B_CS TILE WG T ELEM \
    IN_F32 IN_U32 p lid wid nwg ld_a ld_b Params matmul_u32 matmul_u16";

/// Words of CUDA C++ and WGSL that Rust allows as names, and `main` (WGSL's entry): none may
/// name a variable, a shared array or the kernel.
const RESERVED: &str = "main \
    int unsigned signed float double char short long bool void auto register volatile static \
    extern inline template typename class namespace operator new delete this switch case default \
    goto sizeof typedef union private public protected friend virtual explicit mutable throw try \
    catch asm nullptr NULL threadIdx blockIdx blockDim gridDim warpSize printf assert \
    var array vec2 vec3 vec4 mat2x2 mat3x3 mat4x4 f16 f32 i32 u32 select bitcast workgroupBarrier \
    storageBarrier enable requires override alias uniform storage workgroup function discard loop \
    continuing fallthrough atomic ptr sampler diagnostic const_assert";

/// Checks a variable's or shared array's name (`kernel`: the kernel's, which may be one of the
/// generated code's names).
fn check_name(name: &str, span: Span, kernel: bool) -> syn::Result<()> {
    let listed = |list: &str| list.split_whitespace().any(|w| w == name);
    if listed(RESERVED)
        || (!kernel && listed(GENERATED))
        || name.starts_with("__")
        || !name.is_ascii()
    {
        return Err(syn::Error::new(
            span,
            format!(
                "kernel: `{name}` is a name the generated CUDA or WGSL uses itself (give it another)"
            ),
        ));
    }
    Ok(())
}

/// A workgroup size as the launch expressions write it: integers, `TILE`, `WG`, `+ - * / %`,
/// parentheses.
fn plain(e: &Expr) -> syn::Result<String> {
    let not_constant = |span: Span| {
        Err(syn::Error::new(
            span,
            "kernel: a workgroup size is a constant expression of integers, TILE and WG",
        ))
    };
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => Ok(int_literal(i)?.to_string()),
            _ => not_constant(l.span()),
        },
        Expr::Path(p) => match ident(p)?.as_str() {
            n @ ("TILE" | "WG") => Ok(n.to_string()),
            _ => not_constant(p.span()),
        },
        Expr::Paren(p) => Ok(format!("({})", plain(&p.expr)?)),
        Expr::Binary(b) => {
            let Some(op) = arith(&b.op) else {
                return not_constant(b.op.span());
            };
            Ok(format!("{} {op} {}", plain(&b.left)?, plain(&b.right)?))
        }
        e => not_constant(e.span()),
    }
}

/// `+ - * / %` as its character; None for any other operator.
fn arith(op: &BinOp) -> Option<char> {
    Some(match op {
        BinOp::Add(_) => '+',
        BinOp::Sub(_) => '-',
        BinOp::Mul(_) => '*',
        BinOp::Div(_) => '/',
        BinOp::Rem(_) => '%',
        _ => return None,
    })
}

/// Whether `e` is a constant expression of integers and `TILE` (a shared array's length).
fn is_constant(e: &Expr) -> bool {
    match e {
        Expr::Lit(l) => matches!(l.lit, Lit::Int(_)),
        Expr::Path(p) => p.path.is_ident("TILE"),
        Expr::Paren(p) => is_constant(&p.expr),
        Expr::Binary(b) => arith(&b.op).is_some() && is_constant(&b.left) && is_constant(&b.right),
        _ => false,
    }
}

/// The value of a constant expression of integer literals alone (`+ - * / %`, parentheses);
/// `Ok(None)` where it names anything (`TILE` and `WG` are known at launch: [`Generated::sizes`]),
/// an error where it leaves u32 or divides by zero.
fn literal_value(e: &Expr) -> syn::Result<Option<u64>> {
    match Const::of(e).and_then(|c| c.eval(&|_| None)) {
        None => Ok(None),
        Some(Ok(v)) => Ok(Some(v)),
        Some(Err(())) => wrong(e.span(), "this constant leaves u32 or divides by 0".into()),
    }
}

/// Refuses a constant of literals (a workgroup size, a shared array's length) that is 0.
fn at_least_one(e: &Expr, what: &str) -> syn::Result<()> {
    match literal_value(e)? {
        Some(0) => wrong(e.span(), format!("{what} is at least 1 (this is 0)")),
        _ => Ok(()),
    }
}

/// An integer literal's value: unsuffixed or `u32`, at most `u32::MAX`.
fn int_literal(i: &syn::LitInt) -> syn::Result<u64> {
    if !matches!(i.suffix(), "" | "u32") {
        return outside(i.span(), "this literal (integers are u32)");
    }
    let v: u64 = i.base10_parse()?;
    if v > u32::MAX as u64 {
        return outside(i.span(), "this literal (above u32's largest)");
    }
    Ok(v)
}

/// A line of the body, indented, in both languages.
struct Line {
    depth: usize,
    cuda: String,
    wgsl: String,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ty {
    U32,
    Elem,
    /// A comparison, `&&`, `||` or `!`: a condition.
    Bool,
}

impl Ty {
    fn cuda(self) -> &'static str {
        match self {
            Ty::U32 => "int",
            Ty::Elem => "ELEM",
            Ty::Bool => "bool",
        }
    }

    fn wgsl(self) -> &'static str {
        match self {
            Ty::U32 => "u32",
            Ty::Elem => "T",
            Ty::Bool => "bool",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Ty::U32 => "an index (u32)",
            Ty::Elem => "an element (T)",
            Ty::Bool => "a condition",
        }
    }
}

#[derive(Clone, Copy)]
struct Var {
    ty: Ty,
    mutable: bool,
}

#[derive(Default)]
struct Gen {
    /// Variables in scope, their types and whether they may be assigned (shadowing replaces).
    vars: HashMap<String, Var>,
    /// The names each enclosing block declares, innermost last: a block declares a name once.
    scopes: Vec<HashSet<String>>,
    /// Shared arrays: name, length (CUDA, WGSL).
    shared: Vec<(String, String, String)>,
    /// Lowering the attribute's workgroup sizes, where `WG` (the row and element kernels'
    /// workgroup size) may appear.
    attr: bool,
    /// The workgroup's x size, as WGSL (`global_x()` needs it).
    wg_x: String,
    /// Emitting for the own-kernel ABI: WGSL reads `a` and `b` directly and types every
    /// declaration (the constants are `-D` values, abstract integers in WGSL).
    own: bool,
    /// The constants named so far.
    constants: Vec<String>,
    /// Whether `global_x()` was called.
    global_x: bool,
    /// The shared arrays' lengths, to check once the constants are known.
    sizes: Vec<Size>,
}

const PROBLEM: [&str; 7] = ["m", "n", "k", "a_rs", "a_cs", "b_rs", "b_cs"];

/// An error for a construct outside the subset.
fn outside<T>(span: Span, what: &str) -> syn::Result<T> {
    Err(syn::Error::new(
        span,
        format!("kernel: {what} is outside the kernel subset (docs/rust-kernels.md lists it)"),
    ))
}

/// An error of types or names inside the subset.
fn wrong<T>(span: Span, what: String) -> syn::Result<T> {
    Err(syn::Error::new(span, format!("kernel: {what}")))
}

impl Gen {
    /// `stmts` in a block of their own.
    fn block(&mut self, stmts: &[Stmt], depth: usize, out: &mut Vec<Line>) -> syn::Result<()> {
        self.scopes.push(HashSet::new());
        let r = self.block_in_scope(stmts, depth, out);
        self.scopes.pop();
        r
    }

    /// `stmts` in the innermost block already pushed.
    fn block_in_scope(
        &mut self,
        stmts: &[Stmt],
        depth: usize,
        out: &mut Vec<Line>,
    ) -> syn::Result<()> {
        let saved = self.vars.clone();
        for s in stmts {
            self.stmt(s, depth, out)?;
        }
        self.vars = saved;
        Ok(())
    }

    /// Declares `name` in the innermost block.
    fn declare(&mut self, name: &str, span: Span, var: Var) -> syn::Result<()> {
        check_name(name, span, false)?;
        let scope = self.scopes.last_mut().expect("a block is open");
        if !scope.insert(name.to_string()) {
            return wrong(
                span,
                format!("`{name}` is declared twice in one block (give the second another name)"),
            );
        }
        self.vars.insert(name.to_string(), var);
        Ok(())
    }

    fn line(out: &mut Vec<Line>, depth: usize, cuda: String, wgsl: String) {
        out.push(Line { depth, cuda, wgsl });
    }

    fn stmt(&mut self, s: &Stmt, depth: usize, out: &mut Vec<Line>) -> syn::Result<()> {
        match s {
            Stmt::Local(local) => {
                // `let x = e;`, or with its type written: `let x: u32 = e;` (or T, bool).
                let (pat, annotated) = match &local.pat {
                    Pat::Type(t) => (&*t.pat, Some(&*t.ty)),
                    p => (p, None),
                };
                let (name, mutable, span) = match pat {
                    Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                        (p.ident.to_string(), p.mutability.is_some(), p.ident.span())
                    }
                    p => return outside(p.span(), "this pattern"),
                };
                let annotated = match annotated {
                    None => None,
                    Some(syn::Type::Path(t)) if t.qself.is_none() => {
                        match t.path.get_ident().map(|i| i.to_string()).as_deref() {
                            Some("u32") => Some((Ty::U32, t.span())),
                            Some("T") => Some((Ty::Elem, t.span())),
                            Some("bool") => Some((Ty::Bool, t.span())),
                            _ => return outside(t.span(), "this type (u32, T or bool)"),
                        }
                    }
                    Some(t) => return outside(t.span(), "this type (u32, T or bool)"),
                };
                let Some(init) = &local.init else {
                    return outside(local.span(), "a `let` without a value");
                };
                if let Some((_, els)) = &init.diverge {
                    return outside(els.span(), "`let ... else`");
                }
                // let s = shared::<T>(LEN);
                if let Expr::Call(call) = &*init.expr {
                    if let Expr::Path(p) = &*call.func {
                        let seg = p.path.segments.last().map(|s| s.ident.to_string());
                        if seg.as_deref() == Some("shared") {
                            if mutable || call.args.len() != 1 || depth != 1 {
                                return outside(
                                    call.span(),
                                    "this shared array (let s = shared::<T>(LEN); in the kernel's outermost block)",
                                );
                            }
                            if !is_constant(&call.args[0]) {
                                return wrong(
                                    call.args[0].span(),
                                    "a shared array's length is a constant expression of integers and TILE".into(),
                                );
                            }
                            at_least_one(&call.args[0], "a shared array's length")?;
                            self.sizes.extend(size(
                                format!("shared array `{name}`'s length"),
                                &call.args[0],
                            ));
                            let (_, len) = self.expr(&call.args[0])?;
                            let (_, len_w) = self.expr_w(&call.args[0])?;
                            self.declare(
                                &name,
                                span,
                                Var {
                                    ty: Ty::Elem,
                                    mutable: false,
                                },
                            )?;
                            self.shared.push((name, len, len_w));
                            return Ok(());
                        }
                    }
                }
                let (ty, c) = self.expr(&init.expr)?;
                let (_, w) = self.expr_w(&init.expr)?;
                if let Some((want, at)) = annotated {
                    if want != ty {
                        return wrong(
                            at,
                            format!(
                                "`{name}` is declared {} but its value is {}",
                                want.what(),
                                ty.what()
                            ),
                        );
                    }
                }
                let cty = ty.cuda();
                let (cq, wk) = if mutable {
                    ("", "var")
                } else {
                    ("const ", "let")
                };
                let wty = if self.own {
                    format!(": {}", ty.wgsl())
                } else {
                    String::new()
                };
                self.declare(&name, span, Var { ty, mutable })?;
                Self::line(
                    out,
                    depth,
                    format!("{cq}{cty} {name} = {c};"),
                    format!("{wk} {name}{wty} = {w};"),
                );
                Ok(())
            }
            Stmt::Expr(e, _) => self.stmt_expr(e, depth, out),
            s => outside(s.span(), "this statement"),
        }
    }

    fn stmt_expr(&mut self, e: &Expr, depth: usize, out: &mut Vec<Line>) -> syn::Result<()> {
        match e {
            Expr::Assign(a) => {
                let (pt, lc, lw) = self.place(&a.left)?;
                let (rt, rc) = self.expr(&a.right)?;
                let (_, rw) = self.expr_w(&a.right)?;
                if pt != rt {
                    return wrong(
                        a.span(),
                        format!("assigning {} to {}", rt.what(), pt.what()),
                    );
                }
                Self::line(out, depth, format!("{lc} = {rc};"), format!("{lw} = {rw};"));
                Ok(())
            }
            Expr::Binary(b)
                if matches!(
                    b.op,
                    BinOp::AddAssign(_) | BinOp::SubAssign(_) | BinOp::MulAssign(_)
                ) =>
            {
                let op = match b.op {
                    BinOp::AddAssign(_) => "+=",
                    BinOp::SubAssign(_) => "-=",
                    _ => "*=",
                };
                let (pt, lc, lw) = self.place(&b.left)?;
                let (rt, rc) = self.expr(&b.right)?;
                let (_, rw) = self.expr_w(&b.right)?;
                if pt != rt || pt == Ty::Bool {
                    return wrong(
                        b.span(),
                        format!("`{op}` of {} to {}", rt.what(), pt.what()),
                    );
                }
                Self::line(
                    out,
                    depth,
                    format!("{lc} {op} {rc};"),
                    format!("{lw} {op} {rw};"),
                );
                Ok(())
            }
            Expr::If(i) => {
                let (ct, cc) = self.expr(&i.cond)?;
                let (_, cw) = self.expr_w(&i.cond)?;
                if ct != Ty::Bool {
                    return wrong(
                        i.cond.span(),
                        format!("an `if` on {} (write a comparison)", ct.what()),
                    );
                }
                Self::line(out, depth, format!("if ({cc}) {{"), format!("if ({cw}) {{"));
                self.block(&i.then_branch.stmts, depth + 1, out)?;
                if let Some((_, els)) = &i.else_branch {
                    Self::line(out, depth, "} else {".into(), "} else {".into());
                    match &**els {
                        Expr::Block(b) => self.block(&b.block.stmts, depth + 1, out)?,
                        Expr::If(_) => {
                            let mut inner = Vec::new();
                            self.stmt_expr(els, depth + 1, &mut inner)?;
                            out.extend(inner);
                        }
                        e => return outside(e.span(), "this else branch"),
                    }
                }
                Self::line(out, depth, "}".into(), "}".into());
                Ok(())
            }
            Expr::ForLoop(f) => {
                if let Some(l) = &f.label {
                    return outside(l.span(), "a loop label");
                }
                let Pat::Ident(v) = &*f.pat else {
                    return outside(f.pat.span(), "this loop variable");
                };
                let Expr::Range(r) = &*f.expr else {
                    return outside(f.expr.span(), "a loop over anything but lo..hi");
                };
                let (Some(lo), Some(hi), syn::RangeLimits::HalfOpen(_)) =
                    (&r.start, &r.end, &r.limits)
                else {
                    return outside(r.span(), "this range (write lo..hi)");
                };
                let span = v.ident.span();
                let v = v.ident.to_string();
                let (lt, lc) = self.expr(lo)?;
                let (ht, hc) = self.expr(hi)?;
                let (_, lw) = self.expr_w(lo)?;
                let (_, hw) = self.expr_w(hi)?;
                for (t, e) in [(lt, lo), (ht, hi)] {
                    if t != Ty::U32 {
                        return wrong(e.span(), format!("a loop bound is {}", t.what()));
                    }
                }
                let wv = if self.own {
                    format!("{v}: u32")
                } else {
                    v.clone()
                };
                Self::line(
                    out,
                    depth,
                    format!("for (int {v} = {lc}; {v} < {hc}; {v}++) {{"),
                    format!("for (var {wv} = {lw}; {v} < {hw}; {v}++) {{"),
                );
                // The loop variable belongs to the body's block (C++ refuses to declare it again
                // there).
                let saved = self.vars.clone();
                self.scopes.push(HashSet::new());
                let r = self
                    .declare(
                        &v,
                        span,
                        Var {
                            ty: Ty::U32,
                            mutable: false,
                        },
                    )
                    .and_then(|()| self.block_in_scope(&f.body.stmts, depth + 1, out));
                self.scopes.pop();
                r?;
                self.vars = saved;
                Self::line(out, depth, "}".into(), "}".into());
                Ok(())
            }
            Expr::Call(c) if is_call(c, "superstep") && c.args.is_empty() => {
                Self::line(
                    out,
                    depth,
                    "__syncthreads();".into(),
                    "workgroupBarrier();".into(),
                );
                Ok(())
            }
            e => outside(e.span(), "this statement"),
        }
    }

    /// An assignable place, its type, as CUDA and WGSL: a `let mut` variable, c[i] or a shared
    /// array's element.
    fn place(&mut self, e: &Expr) -> syn::Result<(Ty, String, String)> {
        match e {
            Expr::Path(p) => {
                let name = ident(p)?;
                let shared = self.shared.iter().any(|s| s.0 == name);
                match self.vars.get(&name) {
                    Some(v) if !shared && v.mutable => Ok((v.ty, name.clone(), name)),
                    Some(_) if !shared => wrong(
                        p.span(),
                        format!("`{name}` is not mutable (declare it with `let mut`)"),
                    ),
                    _ => outside(p.span(), "assigning to this name"),
                }
            }
            Expr::Index(i) => {
                let arr = match &*i.expr {
                    Expr::Path(p) => ident(p)?,
                    e => return outside(e.span(), "this array"),
                };
                let (it, ic) = self.expr(&i.index)?;
                let (_, iw) = self.expr_w(&i.index)?;
                if arr == "c" || self.shared.iter().any(|s| s.0 == arr) {
                    if it != Ty::U32 {
                        return wrong(i.index.span(), format!("an index that is {}", it.what()));
                    }
                    Ok((Ty::Elem, format!("{arr}[{ic}]"), format!("{arr}[{iw}]")))
                } else {
                    outside(i.span(), "writing to this array (only c and shared arrays)")
                }
            }
            e => outside(e.span(), "assigning to this"),
        }
    }

    /// An expression as CUDA, with its type.
    fn expr(&mut self, e: &Expr) -> syn::Result<(Ty, String)> {
        self.lower(e, false)
    }

    /// An expression as WGSL, with its type.
    fn expr_w(&mut self, e: &Expr) -> syn::Result<(Ty, String)> {
        self.lower(e, true)
    }

    fn constant(&mut self, name: &str) {
        if !self.constants.iter().any(|c| c == name) {
            self.constants.push(name.to_string());
        }
    }

    fn lower(&mut self, e: &Expr, wgsl: bool) -> syn::Result<(Ty, String)> {
        match e {
            Expr::Lit(l) => match &l.lit {
                // CUDA's index arithmetic is `int`, as in the hand-written kernels (the
                // compiler may then strength-reduce addresses); WGSL's is u32.
                Lit::Int(i) => {
                    let v = int_literal(i)?;
                    Ok((
                        Ty::U32,
                        if wgsl || v > i32::MAX as u64 {
                            format!("{v}u")
                        } else {
                            v.to_string()
                        },
                    ))
                }
                l => outside(l.span(), "this literal"),
            },
            Expr::Paren(p) => {
                let (t, s) = self.lower(&p.expr, wgsl)?;
                Ok((t, format!("({s})")))
            }
            Expr::Path(p) => {
                let name = ident(p)?;
                if name == "TILE" || (name == "WG" && self.attr) {
                    self.constant(&name);
                    return Ok((Ty::U32, name));
                }
                if PROBLEM.contains(&name.as_str()) {
                    return Ok((Ty::U32, if wgsl { format!("p.{name}") } else { name }));
                }
                match self.vars.get(&name) {
                    Some(v) if !self.shared.iter().any(|s| s.0 == name) => Ok((v.ty, name)),
                    _ => outside(
                        p.span(),
                        "this name (not a variable, a problem size or TILE)",
                    ),
                }
            }
            Expr::Binary(b) => {
                let op = match b.op {
                    BinOp::Add(_) => "+",
                    BinOp::Sub(_) => "-",
                    BinOp::Mul(_) => "*",
                    BinOp::Div(_) => "/",
                    BinOp::Rem(_) => "%",
                    BinOp::Lt(_) => "<",
                    BinOp::Le(_) => "<=",
                    BinOp::Gt(_) => ">",
                    BinOp::Ge(_) => ">=",
                    BinOp::Eq(_) => "==",
                    BinOp::Ne(_) => "!=",
                    BinOp::And(_) => "&&",
                    BinOp::Or(_) => "||",
                    _ => return outside(b.op.span(), "this operator"),
                };
                // What WGSL evaluates while compiling must be defined: no constant divisor of 0,
                // no constant of literals outside u32.
                if matches!(op, "/" | "%") && literal_value(&b.right)? == Some(0) {
                    return wrong(b.right.span(), format!("`{op}` by 0"));
                }
                literal_value(e)?;
                let (lt, l) = self.lower(&b.left, wgsl)?;
                let (rt, r) = self.lower(&b.right, wgsl)?;
                let ty = match op {
                    "+" | "-" | "*" | "/" | "%" => {
                        if lt != rt {
                            return outside(b.span(), "arithmetic mixing an element with an index");
                        }
                        if lt == Ty::Bool {
                            return wrong(b.span(), format!("`{op}` of conditions"));
                        }
                        lt
                    }
                    "&&" | "||" => {
                        if lt != Ty::Bool || rt != Ty::Bool {
                            let t = if lt != Ty::Bool { lt } else { rt };
                            return wrong(
                                b.span(),
                                format!("`{op}` of {} (write a comparison)", t.what()),
                            );
                        }
                        Ty::Bool
                    }
                    _ => {
                        let ordered = !matches!(op, "==" | "!=");
                        if lt != rt || (ordered && lt == Ty::Bool) {
                            return wrong(
                                b.span(),
                                format!("`{op}` of {} and {}", lt.what(), rt.what()),
                            );
                        }
                        Ty::Bool
                    }
                };
                Ok((ty, format!("{l} {op} {r}")))
            }
            Expr::Unary(u) if matches!(u.op, UnOp::Not(_)) => {
                let (t, s) = self.lower(&u.expr, wgsl)?;
                if t != Ty::Bool {
                    return wrong(
                        u.span(),
                        format!("`!` of {} (write a comparison)", t.what()),
                    );
                }
                Ok((Ty::Bool, format!("!({s})")))
            }
            Expr::Index(i) => {
                let arr = match &*i.expr {
                    Expr::Path(p) => ident(p)?,
                    e => return outside(e.span(), "this array"),
                };
                let (it, idx) = self.lower(&i.index, wgsl)?;
                if it != Ty::U32 {
                    return outside(i.index.span(), "an element used as an index");
                }
                let s = match (arr.as_str(), wgsl && !self.own) {
                    ("a", true) => format!("ld_a({idx})"),
                    ("b", true) => format!("ld_b({idx})"),
                    ("a" | "b" | "c", _) => format!("{arr}[{idx}]"),
                    (s, _) if self.shared.iter().any(|x| x.0 == s) => format!("{s}[{idx}]"),
                    _ => {
                        return outside(i.expr.span(), "indexing this (a, b, c or a shared array)")
                    }
                };
                Ok((Ty::Elem, s))
            }
            Expr::Call(c) if c.args.is_empty() => {
                let Expr::Path(p) = &*c.func else {
                    return outside(c.span(), "this call");
                };
                let name = ident(p)?;
                // global_x(): the thread's index over the whole grid along x, with the grid's y
                // rows of blocks after one another (the wgpu backend folds a long 1-D dispatch
                // into y).
                let global_w = format!("((wid.y * nwg.x + wid.x) * ({}) + lid.x)", self.wg_x);
                let (t, cu, w) = match name.as_str() {
                    "zero" => (Ty::Elem, "(ELEM)0", "T(0)"),
                    "thread_x" => (Ty::U32, "threadIdx.x", "lid.x"),
                    "thread_y" => (Ty::U32, "threadIdx.y", "lid.y"),
                    "block_x" => (Ty::U32, "blockIdx.x", "wid.x"),
                    "block_y" => (Ty::U32, "blockIdx.y", "wid.y"),
                    "global_x" => {
                        self.global_x = true;
                        (
                            Ty::U32,
                            "((blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x)",
                            global_w.as_str(),
                        )
                    }
                    _ => return outside(c.span(), "this call"),
                };
                Ok((t, if wgsl { w.into() } else { cu.into() }))
            }
            e => outside(e.span(), "this expression"),
        }
    }

    fn cuda(&self, name: &str, body: &[Line]) -> String {
        let (comment, entry) = if self.own {
            (
                format!("// {name}: generated by matmul from its Rust (docs/rust-kernels.md); do not edit."),
                name.to_string(),
            )
        } else {
            (
                format!("// {name}@rs: generated by #[matmul_macros::kernel] from the Rust in crates/matmul/src/registry/rs_kernels.rs; do not edit."),
                format!("{name}_rs"),
            )
        };
        let mut s = format!(
            "{comment}\n\
             extern \"C\" __global__ void {entry}(const ELEM* __restrict__ a, const ELEM* __restrict__ b, ELEM* __restrict__ c,\n\
             \x20   int M, int N, int K, int A_RS, int A_CS, int B_RS, int B_CS)\n{{\n\
             \x20   const int m = M, n = N, k = K, a_rs = A_RS, a_cs = A_CS, b_rs = B_RS, b_cs = B_CS;\n"
        );
        for (sh, len, _) in &self.shared {
            s.push_str(&format!("    __shared__ ELEM {sh}[{len}];\n"));
        }
        for l in body {
            s.push_str(&"    ".repeat(l.depth));
            s.push_str(&l.cuda);
            s.push('\n');
        }
        s.push_str("}\n");
        s
    }

    fn wgsl(&self, name: &str, sizes: &[String], body: &[Line]) -> String {
        let mut s = if self.own {
            format!("// {name}: generated by matmul from its Rust (docs/rust-kernels.md); do not edit.\n")
        } else {
            String::from(
                "// Generated by #[matmul_macros::kernel] from the Rust in crates/matmul/src/registry/rs_kernels.rs; do not edit.\n",
            )
        };
        for (sh, _, len) in &self.shared {
            s.push_str(&format!("var<workgroup> {sh}: array<T, {len}>;\n"));
        }
        s.push_str(&format!(
            "\n@compute @workgroup_size({})\nfn main(@builtin(local_invocation_id) lid: vec3<u32>,\n        @builtin(workgroup_id) wid: vec3<u32>,\n        @builtin(num_workgroups) nwg: vec3<u32>) {{\n",
            sizes.join(", ")
        ));
        for l in body {
            s.push_str(&"    ".repeat(l.depth));
            s.push_str(&l.wgsl);
            s.push('\n');
        }
        s.push_str("}\n");
        s
    }
}

fn is_call(c: &syn::ExprCall, name: &str) -> bool {
    matches!(&*c.func, Expr::Path(p) if p.path.is_ident(name))
}

fn ident(p: &syn::ExprPath) -> syn::Result<String> {
    p.path
        .get_ident()
        .map(|i| i.to_string())
        .ok_or_else(|| syn::Error::new(p.span(), "kernel: a plain name is expected here"))
}

#[cfg(test)]
mod tests;
