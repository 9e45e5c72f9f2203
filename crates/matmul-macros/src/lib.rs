//! `#[kernel]`: a GEMM kernel written once in a small subset of Rust (Sarek's `let%kernel`),
//! expanded at compile time into a module of two strings, the kernel as CUDA C++ (NVRTC, the CUDA
//! backend's ABI) and as the body of a WGSL shader (the wgpu backend's header supplies the
//! bindings), which the registry launches through the paths the hand-written kernels use.
//!
//! The generator (the subset, type inference, both emitters, the errors) is the library
//! matmul-kernelgen, which `matmul run --kernel-file NAME.rs` also calls at run time; this crate
//! only wraps its output in a module. The subset: matmul-kernelgen's documentation and
//! docs/rust-kernels.md.

use proc_macro::TokenStream;
use quote::{format_ident, quote};
use syn::{parse_macro_input, ItemFn};

/// See the crate's documentation. The attribute takes the workgroup's x and y sizes as
/// constant expressions: `#[kernel(TILE, TILE)]`.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = parse_macro_input!(item as ItemFn);
    match expand(attr.into(), &item) {
        Ok(out) => out.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The module `NAME` of `CUDA` and `WGSL` for `item`, or the first construct outside the subset.
fn expand(attr: proc_macro2::TokenStream, item: &ItemFn) -> syn::Result<proc_macro2::TokenStream> {
    let g = matmul_kernelgen::generate(attr, item)?;
    let (name, cuda, wgsl) = (&g.name, &g.cuda, &g.wgsl);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel inside the subset expands to a module of the two strings; one outside it, to the
    /// generator's error (matmul-kernelgen's tests cover the subset).
    #[test]
    fn the_subset_expands() {
        let item: ItemFn = syn::parse_str(
            "fn k1(a: &[T], b: &[T], c: &mut [T]) { let i = thread_x(); if i < n { c[i] = a[i] * b[i]; } }",
        )
        .unwrap();
        let out = expand(quote!(TILE, TILE), &item).unwrap().to_string();
        assert!(out.contains("pub mod k1"), "{out}");
        assert!(out.contains("ld_a (i)") || out.contains("ld_a(i)"), "{out}");
        let bad: ItemFn =
            syn::parse_str("fn k(a: &[T], b: &[T], c: &mut [T]) { while true {} }").unwrap();
        let e = expand(quote!(TILE, TILE), &bad).unwrap_err().to_string();
        assert!(e.contains("this statement"), "{e}");
    }
}
