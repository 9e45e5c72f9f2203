//! The results tables (docs/results.md, and README.md's square-size one) are the rendering of the
//! runs of record under bench/baselines/: this fails when they differ, so neither can change
//! without the other.

use std::path::Path;

use matmul_bench::{multi, record};

#[test]
fn readme_table_matches_the_run_of_record() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let rendered = record::summary_section(&root).expect("the runs of record load");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md reads");
    let section = record::summary(&readme).expect("README.md has the summary-table markers");
    assert!(
        section == rendered,
        "README.md's results table differs from its rendering from {}/.\n\
         Regenerate it with `{}` (never edit it by hand).\n\
         --- README.md ---\n{section}--- rendering ---\n{rendered}",
        record::BASELINES_DIR,
        record::REGENERATE,
    );
}

#[test]
fn results_page_matches_the_runs_of_record() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let rendered =
        record::for_docs(&record::readme_section(&root).expect("the runs of record load"));
    let page = std::fs::read_to_string(root.join(record::RESULTS_PAGE)).expect("the page reads");
    let section = record::section(&page).expect("docs/results.md has the results-table markers");
    assert!(
        section == rendered,
        "{}'s tables differ from their rendering from {}/.\n\
         Regenerate them with `{}` (never edit them by hand).\n\
         --- page ---\n{section}--- rendering ---\n{rendered}",
        record::RESULTS_PAGE,
        record::BASELINES_DIR,
        record::REGENERATE,
    );
}

#[test]
fn runs_of_record_are_small_and_load() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for run in record::README_RUNS
        .iter()
        .chain(&record::README_SUITE_RUNS)
        .chain(&record::README_WGPU_RUNS)
        .chain([&record::README_FP32_RUN])
    {
        let path = root
            .join(record::BASELINES_DIR)
            .join(run)
            .join("results.json");
        let report = record::load(&path).expect("a run of record loads");
        assert!(!report.records.is_empty(), "{}: no records", path.display());
        assert!(
            report
                .records
                .iter()
                .filter_map(|r| r.timing.as_ref())
                .all(|t| t.samples_s.is_empty()),
            "{}: per-launch samples belong in raw runs, not in a run of record \
             (cargo run -p matmul-bench --example baseline -- RESULTS.json DIR)",
            path.display()
        );
    }
}

#[test]
fn readme_scaling_table_matches_the_multi_gpu_runs_of_record() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let runs = multi::runs_of_record(&root).expect("the multi-GPU runs of record load");
    let rendered = record::for_docs(&multi::scaling_table(&runs));
    let page = std::fs::read_to_string(root.join(record::RESULTS_PAGE)).expect("the page reads");
    let section = multi::section(&page).expect("docs/results.md has the multi-table markers");
    assert!(
        section == rendered,
        "docs/results.md's multi-GPU scaling table differs from its rendering.\n\
         Regenerate it with `{}` (never edit it by hand).\n\
         --- page ---\n{section}--- rendering ---\n{rendered}",
        record::REGENERATE,
    );
}
