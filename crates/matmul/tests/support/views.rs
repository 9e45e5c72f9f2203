//! The check of plans on views ([`matmul::Plan::run_views`]), shared by the CPU and GPU tests:
//! A, B and C are blocks of bigger matrices at offsets; the block of C must be the reference
//! product (α·op(A)·op(B) + β·C, C pre-filled), every element outside it untouched.

use matmul::cpu::reference;
use matmul::verify::compare;
use matmul::{
    AnyMatrix, Backend, COut, DeviceMatrix, Element, Init, MatRef, Matrix, Plan, Problem, Scale,
};

fn random<T: Element>(rows: usize, cols: usize, seed: u64) -> Matrix<T> {
    let m = AnyMatrix::generate(T::STORAGE, rows, cols, Init::Random { seed }).unwrap();
    Matrix::<T>::try_from(m).ok().unwrap()
}

/// Runs `kernel` on `p` with `scale` on views of bigger matrices and checks the result; `T` is
/// the inputs' storage type, `U` C's. Returns the kernel the plan ran.
pub fn check_views<T: Element, U: Element>(
    backend: &dyn Backend,
    kernel: &str,
    p: Problem,
    scale: Scale,
) -> &'static str {
    let ((ar, ac), (br, bc)) = (p.a_stored(), p.b_stored());
    let big_a = random::<T>(ar + 5, ac + 3, 61);
    let big_b = random::<T>(br + 4, bc + 6, 62);
    let big_c = random::<U>(p.m + 3, p.n + 2, 63);
    let ((ai, aj), (bi, bj), (ci, cj)) = ((2, 1), (3, 5), (1, 2));
    let block = |m: &Matrix<T>, i, j, r, c| MatRef::from(m).block(i, j, r, c).unwrap().to_matrix();
    let a = AnyMatrix::from(block(&big_a, ai, aj, ar, ac));
    let b = AnyMatrix::from(block(&big_b, bi, bj, br, bc));
    let c0 = MatRef::from(&big_c)
        .block(ci, cj, p.m, p.n)
        .unwrap()
        .to_matrix();
    let mut expect = AnyMatrix::from(c0);
    if scale.is_plain() {
        expect = reference::matmul(&p, &a, &b).unwrap();
    } else {
        let wide = reference::matmul(&p.with_c(COut::Accumulator), &a, &b).unwrap();
        scale.apply_host(&wide, &mut expect).unwrap();
    }
    let plan = Plan::builder(backend, p)
        .kernel(kernel)
        .alpha(scale.alpha)
        .beta(scale.beta)
        .build()
        .unwrap_or_else(|e| panic!("{kernel} {p}: {e}"));
    let name = plan.kernel().name;
    let da = DeviceMatrix::upload(backend, &big_a).unwrap();
    let db = DeviceMatrix::upload(backend, &big_b).unwrap();
    let mut dc = DeviceMatrix::upload(backend, &big_c).unwrap();
    // Twice: the second run reuses the plan's workspaces.
    for run in 0..2 {
        if run == 1 {
            dc = DeviceMatrix::upload(backend, &big_c).unwrap();
        }
        plan.run_views(
            da.view(ai..ai + ar, aj..aj + ac).unwrap(),
            db.view(bi..bi + br, bj..bj + bc).unwrap(),
            dc.view_mut(ci..ci + p.m, cj..cj + p.n).unwrap(),
        )
        .unwrap_or_else(|e| panic!("{name} {p}: {e}"));
        backend.synchronize().unwrap();
        let got = dc.download(backend).unwrap();
        let inside = MatRef::from(&got)
            .block(ci, cj, p.m, p.n)
            .unwrap()
            .to_matrix();
        let v = compare(&p, &AnyMatrix::from(inside), &expect);
        assert!(
            v.passed,
            "{name} {p} α={} β={}: {v:?}",
            scale.alpha, scale.beta
        );
        for i in 0..got.rows {
            for j in 0..got.cols {
                let outside = !(ci..ci + p.m).contains(&i) || !(cj..cj + p.n).contains(&j);
                if outside {
                    let (g, w) = (got.data[i * got.cols + j], big_c.data[i * got.cols + j]);
                    assert!(
                        g.to_f64().to_bits() == w.to_f64().to_bits(),
                        "{name} {p}: C({i}, {j}) outside the view was written"
                    );
                }
            }
        }
    }
    name
}
