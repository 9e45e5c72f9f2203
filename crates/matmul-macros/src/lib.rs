//! One kernel source for every backend (Sarek's `let%kernel`, in Rust): `#[kernel]` reads a GEMM
//! kernel written once in a small subset of Rust and expands to a module of two strings — the
//! kernel as CUDA C++ (NVRTC, the CUDA backend's ABI) and as the body of a WGSL shader (the wgpu
//! backend's header supplies the bindings) — which the registry launches through the paths the
//! hand-written kernels use.
//!
//! The subset, all of it (anything else is a compile error naming its span):
//! - the signature `fn NAME(a: &[T], b: &[T], c: &mut [T])`; in the body the problem's `m`, `n`,
//!   `k` and the strides `a_rs`, `a_cs`, `b_rs`, `b_cs` (`op(A)[i][l] = a[i·a_rs + l·a_cs]`), and
//!   the tile edge `TILE`, all `u32`;
//! - `let x = e;`, `let mut x = e;`, `x = e;`, `x += e;` (and `-=`, `*=`), `if c { .. } else { .. }`,
//!   `for v in lo..hi { .. }`, `c[i] = e;`, `s[i] = e;` for a shared array `s`;
//! - `let s = shared::<T>(LEN);` a workgroup (shared-memory) array of LEN elements, LEN an
//!   expression of constants; `superstep();` a barrier of the whole block (Sarek's `let%superstep`);
//! - expressions: integer literals, names, `+ - * / %`, comparisons, `&&`, `||`, parentheses,
//!   `a[i]`, `b[i]`, `s[i]`, `zero()` (T's zero), `thread_x()`, `thread_y()`, `block_x()`,
//!   `block_y()`, `global_x()` (the thread's index over the whole grid along x);
//! - the attribute's workgroup sizes may also name `WG`, the row and element kernels' workgroup
//!   size (a constant of the wgpu backend's header; CUDA takes the block size from the launch).
//!
//! Types are inferred: a value is of the element type T when it reads an element (`a[..]`,
//! `b[..]`, a shared array) or is `zero()`, else `u32`.

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::{format_ident, quote};
use std::collections::HashMap;
use syn::spanned::Spanned;
use syn::{parse_macro_input, BinOp, Expr, ItemFn, Lit, Pat, Stmt, UnOp};

/// See the crate's documentation. The attribute takes the workgroup's x and y sizes as
/// constant expressions: `#[kernel(TILE, TILE)]`.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = parse_macro_input!(item as ItemFn);
    let attr: proc_macro2::TokenStream = attr.into();
    match generate(attr, &item) {
        Ok(out) => out.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The module `NAME` of `CUDA`, `WGSL` and `RUST` for `item`, or the first construct outside the
/// subset.
fn generate(
    attr: proc_macro2::TokenStream,
    item: &ItemFn,
) -> syn::Result<proc_macro2::TokenStream> {
    let sizes: syn::punctuated::Punctuated<Expr, syn::Token![,]> =
        syn::parse::Parser::parse2(syn::punctuated::Punctuated::parse_terminated, attr)?;
    if sizes.len() != 2 {
        return Err(syn::Error::new(
            Span::call_site(),
            "kernel: give the workgroup's x and y sizes, e.g. #[kernel(TILE, TILE)]",
        ));
    }
    let name = item.sig.ident.to_string();
    check_signature(item)?;
    let mut g = Gen::default();
    let mut wg_sizes = Vec::new();
    g.attr = true;
    for s in &sizes {
        wg_sizes.push(g.expr_w(s)?.1);
    }
    g.attr = false;
    g.wg_x = wg_sizes[0].clone();
    let mut body = Vec::new();
    g.block(&item.block.stmts, 1, &mut body)?;
    let cuda = g.cuda(&name, &body);
    let wgsl = g.wgsl(&wg_sizes, &body);
    let module = format_ident!("{}", name);
    Ok(quote! {
        #[doc = concat!("`", #name, "` written once (`#[matmul_macros::kernel]`): its CUDA C++ and WGSL body.")]
        pub mod #module {
            /// The kernel as CUDA C++ (entry point `NAME_rs`; ELEM and TILE from `-D`).
            pub const CUDA: &str = #cuda;
            /// The WGSL body, after the wgpu backend's header (`T`, `TILE`, the bindings, `ld_a`, `ld_b`).
            pub const WGSL: &str = #wgsl;
        }
    })
}

fn check_signature(item: &ItemFn) -> syn::Result<()> {
    let names: Vec<String> = item
        .sig
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
            item.sig.inputs.span(),
            "kernel: the signature is (a: &[T], b: &[T], c: &mut [T])",
        ));
    }
    Ok(())
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
}

#[derive(Default)]
struct Gen {
    /// Variables in scope and their types (shadowing replaces).
    vars: HashMap<String, Ty>,
    /// Shared arrays: name, length (CUDA, WGSL).
    shared: Vec<(String, String, String)>,
    /// Lowering the attribute's workgroup sizes, where `WG` (the row and element kernels'
    /// workgroup size, a constant of the wgpu header) may appear.
    attr: bool,
    /// The workgroup's x size, as WGSL (`global_x()` needs it).
    wg_x: String,
}

const PROBLEM: [&str; 7] = ["m", "n", "k", "a_rs", "a_cs", "b_rs", "b_cs"];

fn err<T>(span: Span, what: &str) -> syn::Result<T> {
    Err(syn::Error::new(
        span,
        format!(
            "kernel: {what} is outside the kernel subset (matmul-macros' documentation lists it)"
        ),
    ))
}

impl Gen {
    fn block(&mut self, stmts: &[Stmt], depth: usize, out: &mut Vec<Line>) -> syn::Result<()> {
        let saved = self.vars.clone();
        for s in stmts {
            self.stmt(s, depth, out)?;
        }
        self.vars = saved;
        Ok(())
    }

    fn line(out: &mut Vec<Line>, depth: usize, cuda: String, wgsl: String) {
        out.push(Line { depth, cuda, wgsl });
    }

    fn stmt(&mut self, s: &Stmt, depth: usize, out: &mut Vec<Line>) -> syn::Result<()> {
        match s {
            Stmt::Local(local) => {
                let (name, mutable) = match &local.pat {
                    Pat::Ident(p) => (p.ident.to_string(), p.mutability.is_some()),
                    p => return err(p.span(), "this pattern"),
                };
                let Some(init) = &local.init else {
                    return err(local.span(), "a `let` without a value");
                };
                // let s = shared::<T>(LEN);
                if let Expr::Call(call) = &*init.expr {
                    if let Expr::Path(p) = &*call.func {
                        let seg = p.path.segments.last().map(|s| s.ident.to_string());
                        if seg.as_deref() == Some("shared") {
                            if mutable || call.args.len() != 1 {
                                return err(
                                    call.span(),
                                    "this shared array (let s = shared::<T>(LEN);)",
                                );
                            }
                            let (_, len) = self.expr(&call.args[0])?;
                            let (_, len_w) = self.expr_w(&call.args[0])?;
                            self.shared.push((name.clone(), len, len_w));
                            self.vars.insert(name, Ty::Elem);
                            return Ok(());
                        }
                    }
                }
                let (ty, c) = self.expr(&init.expr)?;
                let (_, w) = self.expr_w(&init.expr)?;
                let cty = match ty {
                    Ty::U32 => "unsigned",
                    Ty::Elem => "ELEM",
                };
                let (cq, wk) = if mutable {
                    ("", "var")
                } else {
                    ("const ", "let")
                };
                Self::line(
                    out,
                    depth,
                    format!("{cq}{cty} {name} = {c};"),
                    format!("{wk} {name} = {w};"),
                );
                self.vars.insert(name, ty);
                Ok(())
            }
            Stmt::Expr(e, _) => self.stmt_expr(e, depth, out),
            s => err(s.span(), "this statement"),
        }
    }

    fn stmt_expr(&mut self, e: &Expr, depth: usize, out: &mut Vec<Line>) -> syn::Result<()> {
        match e {
            Expr::Assign(a) => {
                let (lc, lw) = self.place(&a.left)?;
                let (_, rc) = self.expr(&a.right)?;
                let (_, rw) = self.expr_w(&a.right)?;
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
                let (lc, lw) = self.place(&b.left)?;
                let (_, rc) = self.expr(&b.right)?;
                let (_, rw) = self.expr_w(&b.right)?;
                Self::line(
                    out,
                    depth,
                    format!("{lc} {op} {rc};"),
                    format!("{lw} {op} {rw};"),
                );
                Ok(())
            }
            Expr::If(i) => {
                let (_, cc) = self.expr(&i.cond)?;
                let (_, cw) = self.expr_w(&i.cond)?;
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
                        e => return err(e.span(), "this else branch"),
                    }
                }
                Self::line(out, depth, "}".into(), "}".into());
                Ok(())
            }
            Expr::ForLoop(f) => {
                let Pat::Ident(v) = &*f.pat else {
                    return err(f.pat.span(), "this loop variable");
                };
                let Expr::Range(r) = &*f.expr else {
                    return err(f.expr.span(), "a loop over anything but lo..hi");
                };
                let (Some(lo), Some(hi), syn::RangeLimits::HalfOpen(_)) =
                    (&r.start, &r.end, &r.limits)
                else {
                    return err(r.span(), "this range (write lo..hi)");
                };
                let v = v.ident.to_string();
                let (_, lc) = self.expr(lo)?;
                let (_, hc) = self.expr(hi)?;
                let (_, lw) = self.expr_w(lo)?;
                let (_, hw) = self.expr_w(hi)?;
                Self::line(
                    out,
                    depth,
                    format!("for (unsigned {v} = {lc}; {v} < {hc}; {v}++) {{"),
                    format!("for (var {v} = {lw}; {v} < {hw}; {v}++) {{"),
                );
                let saved = self.vars.clone();
                self.vars.insert(v, Ty::U32);
                self.block(&f.body.stmts, depth + 1, out)?;
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
            e => err(e.span(), "this statement"),
        }
    }

    /// An assignable place: a variable, c[i] or a shared array's element.
    fn place(&mut self, e: &Expr) -> syn::Result<(String, String)> {
        match e {
            Expr::Path(p) => {
                let name = ident(p)?;
                if !self.vars.contains_key(&name) || self.shared.iter().any(|s| s.0 == name) {
                    return err(p.span(), "assigning to this name");
                }
                Ok((name.clone(), name))
            }
            Expr::Index(i) => {
                let arr = match &*i.expr {
                    Expr::Path(p) => ident(p)?,
                    e => return err(e.span(), "this array"),
                };
                let (_, ic) = self.expr(&i.index)?;
                let (_, iw) = self.expr_w(&i.index)?;
                if arr == "c" || self.shared.iter().any(|s| s.0 == arr) {
                    Ok((format!("{arr}[{ic}]"), format!("{arr}[{iw}]")))
                } else {
                    err(i.span(), "writing to this array (only c and shared arrays)")
                }
            }
            e => err(e.span(), "assigning to this"),
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

    fn lower(&mut self, e: &Expr, wgsl: bool) -> syn::Result<(Ty, String)> {
        match e {
            Expr::Lit(l) => match &l.lit {
                Lit::Int(i) => {
                    let v: u64 = i.base10_parse()?;
                    Ok((Ty::U32, format!("{v}u")))
                }
                l => err(l.span(), "this literal"),
            },
            Expr::Paren(p) => {
                let (t, s) = self.lower(&p.expr, wgsl)?;
                Ok((t, format!("({s})")))
            }
            Expr::Path(p) => {
                let name = ident(p)?;
                if name == "TILE" || (name == "WG" && self.attr) {
                    return Ok((Ty::U32, name));
                }
                if PROBLEM.contains(&name.as_str()) {
                    return Ok((Ty::U32, if wgsl { format!("p.{name}") } else { name }));
                }
                match self.vars.get(&name) {
                    Some(&t) if !self.shared.iter().any(|s| s.0 == name) => Ok((t, name)),
                    _ => err(
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
                    _ => return err(b.op.span(), "this operator"),
                };
                let (lt, l) = self.lower(&b.left, wgsl)?;
                let (rt, r) = self.lower(&b.right, wgsl)?;
                let arith = matches!(op, "+" | "-" | "*" | "/" | "%");
                if arith && lt != rt {
                    return err(b.span(), "arithmetic mixing an element with an index");
                }
                Ok((if arith { lt } else { Ty::U32 }, format!("{l} {op} {r}")))
            }
            Expr::Unary(u) if matches!(u.op, UnOp::Not(_)) => {
                let (_, s) = self.lower(&u.expr, wgsl)?;
                Ok((Ty::U32, format!("!({s})")))
            }
            Expr::Index(i) => {
                let arr = match &*i.expr {
                    Expr::Path(p) => ident(p)?,
                    e => return err(e.span(), "this array"),
                };
                let (it, idx) = self.lower(&i.index, wgsl)?;
                if it != Ty::U32 {
                    return err(i.index.span(), "an element used as an index");
                }
                let s = match (arr.as_str(), wgsl) {
                    ("a", true) => format!("ld_a({idx})"),
                    ("b", true) => format!("ld_b({idx})"),
                    ("a" | "b" | "c", _) => format!("{arr}[{idx}]"),
                    (s, _) if self.shared.iter().any(|x| x.0 == s) => format!("{s}[{idx}]"),
                    _ => return err(i.expr.span(), "indexing this (a, b, c or a shared array)"),
                };
                Ok((Ty::Elem, s))
            }
            Expr::Call(c) if c.args.is_empty() => {
                let Expr::Path(p) = &*c.func else {
                    return err(c.span(), "this call");
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
                    "global_x" => (
                        Ty::U32,
                        "((blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x)",
                        global_w.as_str(),
                    ),
                    _ => return err(c.span(), "this call"),
                };
                Ok((t, if wgsl { w.into() } else { cu.into() }))
            }
            e => err(e.span(), "this expression"),
        }
    }

    fn cuda(&self, name: &str, body: &[Line]) -> String {
        let mut s = format!(
            "// {name}@rs: generated by #[matmul_macros::kernel] from the Rust in crates/matmul/src/registry/rs_kernels.rs; do not edit.\n\
             extern \"C\" __global__ void {name}_rs(const ELEM* __restrict__ a, const ELEM* __restrict__ b, ELEM* __restrict__ c,\n\
             \x20   int M, int N, int K, int A_RS, int A_CS, int B_RS, int B_CS)\n{{\n\
             \x20   const unsigned m = M, n = N, k = K, a_rs = A_RS, a_cs = A_CS, b_rs = B_RS, b_cs = B_CS;\n"
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

    fn wgsl(&self, sizes: &[String], body: &[Line]) -> String {
        let mut s = String::from(
            "// Generated by #[matmul_macros::kernel] from the Rust in crates/matmul/src/registry/rs_kernels.rs; do not edit.\n",
        );
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
mod tests {
    use super::*;

    fn gen(src: &str) -> syn::Result<proc_macro2::TokenStream> {
        let item: ItemFn = syn::parse_str(src).unwrap();
        generate(quote!(TILE, TILE), &item)
    }

    /// A kernel inside the subset expands to a module of the three strings.
    #[test]
    fn the_subset_expands() {
        let out = gen("fn k1(a: &[T], b: &[T], c: &mut [T]) { let i = thread_x(); if i < n { c[i] = a[i] * b[i]; } }")
            .unwrap()
            .to_string();
        assert!(out.contains("pub mod k1"), "{out}");
        assert!(out.contains("ld_a (i)") || out.contains("ld_a(i)"), "{out}");
    }

    /// Whatever lies outside the subset is an error that names it (at its span), never a panic.
    #[test]
    fn outside_the_subset_is_an_error() {
        for (src, what) in [
            (
                "fn k(a: &[T], b: &[T], c: &mut [T]) { while true {} }",
                "this statement",
            ),
            (
                "fn k(a: &[T], b: &[T], c: &mut [T]) { let x = 1.5; }",
                "this literal",
            ),
            (
                "fn k(a: &[T], b: &[T], c: &mut [T]) { a[0] = zero(); }",
                "writing to this array",
            ),
            (
                "fn k(a: &[T], b: &[T], c: &mut [T]) { let x = y; }",
                "this name",
            ),
            (
                "fn k(a: &[T], b: &[T], c: &mut [T]) { let x = zero() + 1; }",
                "arithmetic mixing",
            ),
            ("fn k(x: &[T]) {}", "the signature"),
            (
                "fn k(a: &[T], b: &[T], c: &mut [T]) { for i in 0..=3 {} }",
                "this range",
            ),
        ] {
            let e = gen(src).unwrap_err().to_string();
            assert!(e.contains(what), "{src}: {e}");
        }
    }
}
