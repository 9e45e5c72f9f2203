//! Bring your own kernel: a user's CUDA C++, WGSL or Rust matmul kernel, outside the registry,
//! with the ABI of ours (docs/own-kernels.md). A [`UserKernel`] is a value built at run time: its
//! source, entry point, dtype, `-D` defines and launch geometry, the geometry given as small
//! arithmetic expressions of `M`, `N`, `K` and the integer defines ([`Expr`]; no code is ever
//! evaluated). A kernel written in the Rust subset of docs/rust-kernels.md is generated
//! ([`UserKernel::generated_for`]) into CUDA C++ or WGSL with that ABI before it runs.
//! [`CudaBackend::user_run`](crate::CudaBackend::user_run) and
//! [`WgpuBackend::user_run`](crate::WgpuBackend::user_run) (and their `user_time`) run it with C
//! poisoned (or zeroed, `zero_c`) as they run ours.

use std::collections::HashMap;
use std::fmt;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::problem::Problem;

/// The kernel's language, from its file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// CUDA C++ (`.cu`), compiled by NVRTC.
    Cuda,
    /// WGSL (`.wgsl`), run by the wgpu backend.
    Wgsl,
    /// The Rust subset of `#[matmul_macros::kernel]` (`.rs`, docs/rust-kernels.md): generated
    /// into CUDA C++ or WGSL ([`UserKernel::generated_for`]) for the backend that runs it.
    Rust,
}

impl Lang {
    /// The language of a file named `path` (`.cu`, `.wgsl` or `.rs`).
    pub fn of_path(path: &str) -> Result<Lang> {
        let lower = path.to_ascii_lowercase();
        if lower.ends_with(".cu") {
            Ok(Lang::Cuda)
        } else if lower.ends_with(".wgsl") {
            Ok(Lang::Wgsl)
        } else if lower.ends_with(".rs") {
            Ok(Lang::Rust)
        } else {
            Err(Error::Invalid(format!(
                "--kernel-file {}: the file must end in .cu (CUDA C++), .wgsl (WGSL) or .rs (Rust, docs/rust-kernels.md)",
                crate::error::quoted(path)
            )))
        }
    }

    /// Its name in reports: `cuda`, `wgsl` or `rust`.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Cuda => "cuda",
            Lang::Wgsl => "wgsl",
            Lang::Rust => "rust",
        }
    }
}

/// A kernel written in Rust (docs/rust-kernels.md), generated: `path` names the file in the
/// error, `file.rs:LINE:COL: message` (an [`Error::Invalid`]).
pub fn generate_rust(path: &str, text: &str) -> Result<matmul_kernelgen::Generated> {
    matmul_kernelgen::generate_from_str(text).map_err(|e| Error::Invalid(format!("{path}:{e}")))
}

/// The constants a Rust kernel may name and their values when no `-D` gives them: `TILE` (the
/// tile edge, 16) and `WG` (the row and element kernels' workgroup size, 256).
pub const RUST_CONSTANTS: [(&str, &str); 2] = [("TILE", "16"), ("WG", "256")];

/// A Rust kernel's launch when the command line gives none, as (grid, block) expressions: the
/// attribute's workgroup `(X, Y)` as the block, and a grid of `cdiv(N,X),cdiv(M,Y)` blocks, one
/// thread per element of C (the 2-D kernels: `naive`, `tiled`). A kernel that calls
/// `global_x()` counts its threads along x over the whole grid: one thread per element of C,
/// `cdiv(M*N,X)` blocks, folded into y past 65535 (what `global_x()` unfolds).
pub fn rust_launch(g: &matmul_kernelgen::Generated) -> (String, String) {
    let wrap = |e: &str| {
        if e.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            e.to_string()
        } else {
            format!("({e})")
        }
    };
    let (x, y) = (wrap(&g.workgroup.0), wrap(&g.workgroup.1));
    let grid = if g.global_x {
        format!("min(cdiv(M*N,{x}),65535),cdiv(cdiv(M*N,{x}),65535)")
    } else {
        format!("cdiv(N,{x}),cdiv(M,{y})")
    };
    (grid, format!("{x},{y}"))
}

/// A user's kernel and how to launch it.
#[derive(Debug, Clone)]
pub struct UserKernel {
    /// The file name as the user gave it (compile logs name it).
    pub path: String,
    /// The file's text.
    pub text: String,
    /// CUDA, WGSL, or Rust (to be generated into one of them before it runs).
    pub lang: Lang,
    /// The entry point (`__global__` function, or WGSL `@compute` function).
    pub entry: String,
    /// f32 or u32.
    pub dtype: DType,
    /// `-D NAME=VALUE` defines (CUDA: NVRTC `-D`; WGSL: `const NAME = VALUE;`).
    pub defines: Vec<(String, String)>,
    /// Blocks (CUDA) or workgroups (WGSL) along x, y, z.
    pub grid: [Expr; 3],
    /// Threads per block along x, y, z (CUDA only; WGSL has `@workgroup_size`).
    pub block: [Expr; 3],
    /// Dynamic shared memory in bytes (CUDA only).
    pub shared: Expr,
    /// C is zeroed before each launch (the kernel accumulates into it) instead of poisoned.
    pub zero_c: bool,
}

/// One launch's geometry, evaluated for a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserLaunch {
    /// Blocks / workgroups along x, y, z.
    pub grid: [u32; 3],
    /// Threads per block along x, y, z.
    pub block: [u32; 3],
    /// Dynamic shared memory, bytes.
    pub shared: u32,
}

impl UserKernel {
    /// Checks what needs no device: the dtype, the defines' names, the entry's name.
    pub fn validate(&self) -> Result<()> {
        if !matches!(self.dtype, DType::F32 | DType::U32) {
            return Err(Error::Invalid(format!(
                "a kernel of your own takes f32 or u32 (not {})",
                self.dtype
            )));
        }
        if !is_ident(&self.entry) {
            return Err(Error::Invalid(format!(
                "--entry {}: not an identifier",
                crate::error::quoted(&self.entry)
            )));
        }
        for (i, (name, value)) in self.defines.iter().enumerate() {
            if self.defines[..i].iter().any(|(k, _)| k == name) {
                return Err(Error::Invalid(format!(
                    "-D {name} is given twice (one value per name)"
                )));
            }
            if !is_ident(name) {
                return Err(Error::Invalid(format!(
                    "-D {}: the name is not an identifier",
                    crate::error::quoted(name)
                )));
            }
            if value.is_empty() || value.contains(['\n', '\r', ';', '\0']) {
                return Err(Error::Invalid(format!(
                    "-D {name}={}: the value must be one line, without `;`",
                    crate::error::quoted(value)
                )));
            }
        }
        Ok(())
    }

    /// A Rust kernel (`lang` [`Lang::Rust`]) generated for `target` ([`Lang::Cuda`] or
    /// [`Lang::Wgsl`]): the same kernel, its text the generated code with the own-kernel ABI, its
    /// entry the function's name (CUDA) or `main` (WGSL). A generation error names the file's
    /// line and column.
    pub fn generated_for(&self, target: Lang) -> Result<UserKernel> {
        if self.lang != Lang::Rust || target == Lang::Rust {
            return Err(Error::Invalid(format!(
                "{}: only a Rust kernel is generated, into CUDA or WGSL",
                self.path
            )));
        }
        let g = generate_rust(&self.path, &self.text)?;
        // Its sizes at the constants' values (-D, or the defaults the CLI adds): a size of 0
        // is an error at its place in the file, not the compiler's on the generated code.
        let value = |name: &str| {
            self.defines
                .iter()
                .find(|(k, _)| k == name)
                .and_then(|(_, v)| v.trim().parse::<u64>().ok())
        };
        g.check_sizes(&value)
            .map_err(|e| Error::Invalid(format!("{}:{e}", self.path)))?;
        let (text, entry) = match target {
            Lang::Cuda => (g.own_cuda, g.name),
            _ => (g.own_wgsl, "main".to_string()),
        };
        Ok(UserKernel {
            text,
            entry,
            lang: target,
            ..self.clone()
        })
    }

    /// The variables expressions see: M, N, K and every define whose value is an integer.
    fn vars(&self, problem: &Problem) -> HashMap<String, f64> {
        let mut vars: HashMap<String, f64> = self
            .defines
            .iter()
            .filter_map(|(k, v)| v.trim().parse::<i64>().ok().map(|v| (k.clone(), v as f64)))
            .collect();
        vars.insert("M".into(), problem.m as f64);
        vars.insert("N".into(), problem.n as f64);
        vars.insert("K".into(), problem.k as f64);
        vars
    }

    /// The grid, block and shared memory for `problem`; an expression that is not a whole
    /// number in range, or names an unknown variable, is an error naming it.
    pub fn launch(&self, problem: &Problem) -> Result<UserLaunch> {
        let vars = self.vars(problem);
        let eval = |what: &str, e: &Expr, min: f64| -> Result<u32> {
            let v = e.eval(&vars).map_err(|why| {
                Error::Invalid(format!("{what} `{}`: {why} (on {problem})", e.text))
            })?;
            if v.fract() != 0.0 {
                return Err(Error::Invalid(format!(
                    "{what} `{}` is {v} on {problem}: not a whole number (use ceil() or floor())",
                    e.text
                )));
            }
            if v < min || v > u32::MAX as f64 {
                return Err(Error::Invalid(format!(
                    "{what} `{}` is {v} on {problem}: out of range ({min} to {})",
                    e.text,
                    u32::MAX
                )));
            }
            Ok(v as u32)
        };
        let axes = ["x", "y", "z"];
        let mut grid = [1; 3];
        let mut block = [1; 3];
        for i in 0..3 {
            grid[i] = eval(&format!("--grid {}", axes[i]), &self.grid[i], 1.0)?;
            block[i] = eval(&format!("--block {}", axes[i]), &self.block[i], 1.0)?;
        }
        let shared = eval("--shared", &self.shared, 0.0)?;
        Ok(UserLaunch {
            grid,
            block,
            shared,
        })
    }

    /// The WGSL module: the user's text as written (so naga's line numbers are the file's), then
    /// the declarations it may use: `alias T`, the defines as constants, `Params`, the bindings.
    /// (WGSL allows module-scope declarations in any order.)
    pub fn wgsl_text(&self) -> String {
        let ty = if self.dtype == DType::U32 {
            "u32"
        } else {
            "f32"
        };
        let mut out = self.text.clone();
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!(
            "// --- added by matmul (docs/own-kernels.md) ---\nalias T = {ty};\n"
        ));
        for (k, v) in &self.defines {
            out.push_str(&format!("const {k} = {v};\n"));
        }
        out.push_str(super::wgsl::PARAMS);
        out
    }

    /// The `-D` defines a CUDA compile gets: `ELEM` (float or unsigned int), `IN_F32`/`IN_U32`,
    /// then the user's.
    pub fn cuda_defines(&self) -> Vec<(String, String)> {
        let elem = if self.dtype == DType::U32 {
            "matmul_u32"
        } else {
            "float"
        };
        let mut d = vec![
            ("ELEM".to_string(), elem.to_string()),
            (
                format!("IN_{}", self.dtype.name().to_uppercase()),
                "1".to_string(),
            ),
        ];
        d.extend(self.defines.iter().cloned());
        d
    }

    /// Checks `problem` against what the ABI carries: f32/u32 as the kernel's dtype, C in the
    /// accumulator type, sizes and strides that fit an `int`.
    pub fn check_problem(&self, problem: &Problem) -> Result<()> {
        if problem.dtype != self.dtype {
            return Err(Error::Invalid(format!(
                "the kernel is {} and the problem {}",
                self.dtype, problem.dtype
            )));
        }
        if problem.types().narrow_c() {
            return Err(Error::Invalid(
                "a kernel of your own writes C in the input type (f32 or u32)".into(),
            ));
        }
        let big = [problem.m, problem.n, problem.k]
            .iter()
            .any(|&x| x > i32::MAX as usize)
            || problem.m.saturating_mul(problem.k) > i32::MAX as usize
            || problem.k.saturating_mul(problem.n) > i32::MAX as usize
            || problem.m.saturating_mul(problem.n) > i32::MAX as usize;
        if big {
            return Err(Error::Invalid(format!(
                "{problem}: the ABI's sizes and indices are 32-bit ints; this problem is too large"
            )));
        }
        Ok(())
    }

    /// A short name for tables: the entry and the file.
    pub fn label(&self) -> String {
        let file = std::path::Path::new(&self.path)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.path.clone());
        format!("{} ({file})", self.entry)
    }
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && s.len() <= 64
}

/// A launch-geometry expression: numbers, the variables M, N, K and integer defines, `+ - * / %`
/// (real division), parentheses, and `ceil(x)`, `floor(x)`, `cdiv(a, b)` (= ceil(a/b)),
/// `min(a, b)`, `max(a, b)`. Parsed once (a syntax error is an input error), evaluated per
/// problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    text: String,
    node: Node,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Num(f64),
    Var(String),
    Neg(Box<Node>),
    Bin(char, Box<Node>, Box<Node>),
    Call(String, Vec<Node>),
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Expr {
    /// The constant `v`.
    pub fn constant(v: u32) -> Expr {
        Expr {
            text: v.to_string(),
            node: Node::Num(v as f64),
        }
    }

    /// Parses `text`; the error says where and why.
    pub fn parse(text: &str) -> std::result::Result<Expr, String> {
        if text.len() > 200 {
            return Err(format!("{} bytes: at most 200", text.len()));
        }
        let tokens = tokenize(text)?;
        let mut p = Parser { tokens, pos: 0 };
        let node = p.expr(0)?;
        if p.pos != p.tokens.len() {
            return Err(format!("unexpected `{}`", p.tokens[p.pos]));
        }
        Ok(Expr {
            text: text.trim().to_string(),
            node,
        })
    }

    /// Parses a comma-separated list of one to three expressions (x[,y[,z]]); missing ones are 1.
    pub fn parse_dims(text: &str) -> std::result::Result<[Expr; 3], String> {
        let parts = split_top_level(text);
        if parts.is_empty() || parts.len() > 3 {
            return Err("give X, X,Y or X,Y,Z".into());
        }
        let mut out = [Expr::constant(1), Expr::constant(1), Expr::constant(1)];
        for (i, p) in parts.iter().enumerate() {
            out[i] = Expr::parse(p)?;
        }
        Ok(out)
    }

    /// The value with `vars`; an unknown variable or a division by zero is an error.
    pub fn eval(&self, vars: &HashMap<String, f64>) -> std::result::Result<f64, String> {
        let v = eval(&self.node, vars, 0)?;
        if !v.is_finite() {
            return Err("not a finite number".into());
        }
        Ok(v)
    }
}

/// Splits at the commas outside parentheses.
fn split_top_level(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let (mut depth, mut cur) = (0i32, String::new());
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() || !parts.is_empty() {
        parts.push(cur);
    }
    parts
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Ident(String),
    Op(char),
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Num(v) => write!(f, "{v}"),
            Tok::Ident(s) => f.write_str(s),
            Tok::Op(c) => write!(f, "{c}"),
        }
    }
}

fn tokenize(text: &str) -> std::result::Result<Vec<Tok>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            let s: String = chars[start..i].iter().collect();
            out.push(Tok::Num(
                s.parse().map_err(|_| format!("`{s}` is not a number"))?,
            ));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(chars[start..i].iter().collect()));
        } else if "+-*/%(),".contains(c) {
            out.push(Tok::Op(c));
            i += 1;
        } else {
            return Err(format!("unexpected character `{c}`"));
        }
    }
    if out.is_empty() {
        return Err("empty expression".into());
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Tok>,
    pos: usize,
}

const MAX_DEPTH: usize = 32;

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos)
    }

    fn expect(&mut self, c: char) -> std::result::Result<(), String> {
        match self.peek() {
            Some(Tok::Op(x)) if *x == c => {
                self.pos += 1;
                Ok(())
            }
            Some(t) => Err(format!("expected `{c}`, found `{t}`")),
            None => Err(format!("expected `{c}` at the end")),
        }
    }

    fn expr(&mut self, depth: usize) -> std::result::Result<Node, String> {
        let mut lhs = self.term(depth)?;
        while let Some(Tok::Op(op @ ('+' | '-'))) = self.peek().cloned() {
            self.pos += 1;
            let rhs = self.term(depth)?;
            lhs = Node::Bin(op, Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn term(&mut self, depth: usize) -> std::result::Result<Node, String> {
        let mut lhs = self.unary(depth)?;
        while let Some(Tok::Op(op @ ('*' | '/' | '%'))) = self.peek().cloned() {
            self.pos += 1;
            let rhs = self.unary(depth)?;
            lhs = Node::Bin(op, Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn unary(&mut self, depth: usize) -> std::result::Result<Node, String> {
        if depth > MAX_DEPTH {
            return Err("nested too deeply".into());
        }
        if let Some(Tok::Op('-')) = self.peek() {
            self.pos += 1;
            return Ok(Node::Neg(Box::new(self.unary(depth + 1)?)));
        }
        self.primary(depth)
    }

    fn primary(&mut self, depth: usize) -> std::result::Result<Node, String> {
        match self.peek().cloned() {
            Some(Tok::Num(v)) => {
                self.pos += 1;
                Ok(Node::Num(v))
            }
            Some(Tok::Ident(name)) => {
                self.pos += 1;
                if let Some(Tok::Op('(')) = self.peek() {
                    self.pos += 1;
                    let mut args = vec![self.expr(depth + 1)?];
                    while let Some(Tok::Op(',')) = self.peek() {
                        self.pos += 1;
                        args.push(self.expr(depth + 1)?);
                    }
                    self.expect(')')?;
                    let arity = match name.as_str() {
                        "ceil" | "floor" => 1,
                        "min" | "max" | "cdiv" => 2,
                        _ => {
                            return Err(format!(
                                "unknown function `{name}` (ceil, floor, cdiv, min, max)"
                            ))
                        }
                    };
                    if args.len() != arity {
                        return Err(format!("{name}() takes {arity} argument(s)"));
                    }
                    Ok(Node::Call(name, args))
                } else {
                    Ok(Node::Var(name))
                }
            }
            Some(Tok::Op('(')) => {
                self.pos += 1;
                let e = self.expr(depth + 1)?;
                self.expect(')')?;
                Ok(e)
            }
            Some(t) => Err(format!("unexpected `{t}`")),
            None => Err("the expression ends early".into()),
        }
    }
}

fn eval(
    node: &Node,
    vars: &HashMap<String, f64>,
    depth: usize,
) -> std::result::Result<f64, String> {
    if depth > 4 * MAX_DEPTH {
        return Err("nested too deeply".into());
    }
    let ev = |n: &Node| eval(n, vars, depth + 1);
    Ok(match node {
        Node::Num(v) => *v,
        Node::Var(name) => *vars
            .get(name)
            .ok_or_else(|| format!("unknown variable `{name}` (M, N, K and integer -D defines)"))?,
        Node::Neg(x) => -ev(x)?,
        Node::Bin(op, a, b) => {
            let (a, b) = (ev(a)?, ev(b)?);
            match op {
                '+' => a + b,
                '-' => a - b,
                '*' => a * b,
                '/' | '%' if b == 0.0 => return Err("division by zero".into()),
                '/' => a / b,
                _ => a % b,
            }
        }
        Node::Call(f, args) => {
            let v: Vec<f64> = args.iter().map(ev).collect::<std::result::Result<_, _>>()?;
            match f.as_str() {
                "ceil" => v[0].ceil(),
                "floor" => v[0].floor(),
                "min" => v[0].min(v[1]),
                "max" => v[0].max(v[1]),
                _ if v[1] == 0.0 => return Err("cdiv by zero".into()),
                _ => (v[0] / v[1]).ceil(),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> HashMap<String, f64> {
        [("M", 17.0), ("N", 33.0), ("K", 65.0), ("TILE", 16.0)]
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect()
    }

    #[test]
    fn expressions_evaluate() {
        let e = |t: &str| Expr::parse(t).unwrap().eval(&vars()).unwrap();
        assert_eq!(e("ceil(N/16)"), 3.0);
        assert_eq!(e("cdiv(M, TILE) * 2 + 1"), 5.0);
        assert_eq!(e("-(2 - 5) % 2"), 1.0);
        assert_eq!(e("max(M, N) - min(K, 1)"), 32.0);
        assert_eq!(e("floor(K / 2)"), 32.0);
        let dims = Expr::parse_dims("ceil(N/16), max(M,1)").unwrap();
        assert_eq!(dims[1].eval(&vars()).unwrap(), 17.0);
        assert_eq!(dims[2].eval(&vars()).unwrap(), 1.0);
    }

    /// A `.rs` file is a Rust kernel, generated for either backend with the own-kernel ABI; its
    /// default launch comes from the attribute; an error names the file, line and column.
    #[test]
    fn a_rust_kernel_is_generated_for_either_backend() {
        assert_eq!(Lang::of_path("dir/x.RS").unwrap(), Lang::Rust);
        let text = "// t\n#[kernel(TILE, TILE)]\nfn t(a: &[T], b: &[T], c: &mut [T]) {\n    c[0] = zero();\n}\n";
        let g = generate_rust("t.rs", text).unwrap();
        assert_eq!(
            rust_launch(&g),
            ("cdiv(N,TILE),cdiv(M,TILE)".into(), "TILE,TILE".into())
        );
        let e = |s: &str| Expr::parse(s).unwrap();
        let kernel = UserKernel {
            path: "t.rs".into(),
            text: text.into(),
            lang: Lang::Rust,
            entry: "t".into(),
            dtype: DType::F32,
            defines: vec![("TILE".into(), "16".into())],
            grid: [e("cdiv(N,TILE)"), e("cdiv(M,TILE)"), e("1")],
            block: [e("TILE"), e("TILE"), e("1")],
            shared: e("0"),
            zero_c: false,
        };
        let cuda = kernel.generated_for(Lang::Cuda).unwrap();
        assert_eq!((cuda.lang, cuda.entry.as_str()), (Lang::Cuda, "t"));
        assert!(
            cuda.text.contains("__global__ void t(const ELEM*"),
            "{}",
            cuda.text
        );
        let wgsl = kernel.generated_for(Lang::Wgsl).unwrap();
        assert_eq!((wgsl.lang, wgsl.entry.as_str()), (Lang::Wgsl, "main"));
        assert!(wgsl.wgsl_text().contains("const TILE = 16;"));
        assert!(cuda.generated_for(Lang::Wgsl).is_err());
        let mut twice = wgsl.clone();
        twice.defines.push(("TILE".into(), "32".into()));
        let err = twice.validate().unwrap_err().to_string();
        assert!(err.contains("-D TILE is given twice"), "{err}");

        let ele = "#[kernel(WG, 1)]\nfn e(a: &[T], b: &[T], c: &mut [T]) {\n    let i = global_x();\n    if i < m * n {\n        c[i] = zero();\n    }\n}\n";
        let g = generate_rust("e.rs", ele).unwrap();
        assert_eq!(
            rust_launch(&g),
            (
                "min(cdiv(M*N,WG),65535),cdiv(cdiv(M*N,WG),65535)".into(),
                "WG,1".into()
            )
        );
        let bad = ele.replace("c[i] = zero();", "loop {}");
        let err = generate_rust("e.rs", &bad).unwrap_err().to_string();
        assert!(err.starts_with("e.rs:5:9: kernel: this statement"), "{err}");
    }

    #[test]
    fn bad_expressions_are_errors() {
        for t in [
            "",
            "N +",
            "system(1)",
            "N; rm",
            "ceil(1, 2)",
            "((N)",
            "1 $ 2",
        ] {
            assert!(Expr::parse(t).is_err(), "{t}");
        }
        assert!(Expr::parse_dims("1,2,3,4").is_err());
        let e = Expr::parse("X + 1").unwrap();
        assert!(e.eval(&vars()).unwrap_err().contains("unknown variable"));
        assert!(Expr::parse("N / 0").unwrap().eval(&vars()).is_err());
        let deep = format!("{}1{}", "(".repeat(100), ")".repeat(100));
        assert!(Expr::parse(&deep).is_err());
    }
}
